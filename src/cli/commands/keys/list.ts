// `panelctl keys list`: the caller's API keys (prefix only; the key itself is never shown again).
// Kept light: this path is benchmarked against `node -e 0`.
import { Command } from 'commander';
import type { ApiKey } from '../../api-types.js';
import { LIMIT_HELP, parseCount } from '../../args.js';
import type { Context } from '../../context.js';

export function keysListCommand(ctx: Context): Command {
  return new Command('list')
    .description('list your API keys')
    .option('-n, --limit <n>', LIMIT_HELP, parseCount)
    .action(async (options: { limit?: number }) => keysListRun(ctx, options.limit));
}

export async function keysListRun(ctx: Context, limit?: number): Promise<void> {
  const data = await ctx.client().list<ApiKey>('/auth/api-keys', limit);
  await ctx.render(data, async (ui, keys) => {
    const now = Date.now();
    ui.table(
      keys,
      [
        { header: 'id', value: (k) => String(k.id) },
        { header: 'name', value: (k) => k.name, shrink: true },
        { header: 'prefix', value: (k) => k.key_prefix },
        { header: 'last used', value: (k) => ui.time(k.last_used_at) },
        {
          header: 'expires',
          value: (k) => ui.time(k.expires_at),
          style: (text, k) => (k.expires_at && Date.parse(k.expires_at) <= now ? ui.c.red(text) : text),
        },
        { header: 'created', value: (k) => ui.time(k.created_at) },
      ],
      'no API keys: create one with panelctl keys create NAME',
    );
  });
}

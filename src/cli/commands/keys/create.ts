// `panelctl keys create NAME [--expires-at T | --expires-in 30d]`: the key is shown once.
import { Command, Option } from 'commander';
import type { CreatedApiKey } from '../../api-types.js';
import { parseDuration, parseRfc3339 } from '../../args.js';
import type { Context } from '../../context.js';

export interface KeysCreateOptions {
  name: string;
  expiresAt?: string;
  /** Milliseconds from now. */
  expiresIn?: number;
  now?: () => number;
}

export function keysCreateCommand(ctx: Context): Command {
  return new Command('create')
    .description('create an API key; the key is printed once and cannot be retrieved again')
    .argument('<name>', 'label of the key (1 to 100 characters)')
    .addOption(new Option('--expires-at <time>', 'expiry time, RFC 3339 (e.g. 2030-01-31T00:00:00Z)').argParser(parseRfc3339).conflicts('expiresIn'))
    .addOption(new Option('--expires-in <duration>', 'expiry as a duration from now: 30d, 12h, 90m, 2w, 1y').argParser(parseDuration))
    .action(async (name: string, options: Omit<KeysCreateOptions, 'name'>) => keysCreateRun(ctx, { ...options, name }));
}

export function expiryOf(options: Pick<KeysCreateOptions, 'expiresAt' | 'expiresIn' | 'now'>): string | undefined {
  if (options.expiresAt) return options.expiresAt;
  if (options.expiresIn) return new Date((options.now ?? Date.now)() + options.expiresIn).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return undefined;
}

export async function keysCreateRun(ctx: Context, options: KeysCreateOptions): Promise<void> {
  const body: { name: string; expires_at?: string } = { name: options.name };
  const expiresAt = expiryOf(options);
  if (expiresAt) body.expires_at = expiresAt;
  const { data } = await ctx.client().call<CreatedApiKey>('POST', '/auth/api-keys', body);
  const warning = 'This key is shown only once and cannot be retrieved again: store it now.';
  if (ctx.json) {
    ctx.printJson(data);
    ctx.err(`warning: ${warning}`);
    return;
  }
  const ui = await ctx.ui();
  ui.record([
    ['id', String(data.id)],
    ['name', data.name],
    ['prefix', data.key_prefix],
    ['expires', ui.time(data.expires_at)],
    ['key', ui.c.bold(data.key)],
  ]);
  ui.warn(warning);
}

// `panelctl webhooks list`: the caller's endpoints (an admin's own).
import { Command } from 'commander';
import type { WebhookEndpoint } from '../../api-types.js';
import { LIMIT_HELP, parseCount } from '../../args.js';
import type { Context } from '../../context.js';
import { endpointColumns } from './view.js';

export function webhooksListCommand(ctx: Context): Command {
  return new Command('list')
    .description('list your webhook endpoints')
    .option('-n, --limit <n>', LIMIT_HELP, parseCount)
    .action(async (options: { limit?: number }) => webhooksListRun(ctx, options.limit));
}

export async function webhooksListRun(ctx: Context, limit?: number): Promise<void> {
  const data = await ctx.client().list<WebhookEndpoint>('/webhooks', limit);
  await ctx.render(data, (ui, endpoints) => ui.table(endpoints, endpointColumns(ui), 'no webhook endpoints: create one with panelctl webhooks create'));
}

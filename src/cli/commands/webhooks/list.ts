// `panelctl webhooks list`: the caller's endpoints (an admin's own).
import { Command } from 'commander';
import type { WebhookEndpoint } from '../../api-types.js';
import type { Context } from '../../context.js';
import { endpointColumns } from './view.js';

export function webhooksListCommand(ctx: Context): Command {
  return new Command('list').description('list your webhook endpoints').action(async () => webhooksListRun(ctx));
}

export async function webhooksListRun(ctx: Context): Promise<void> {
  const { data } = await ctx.client().call<WebhookEndpoint[]>('GET', '/webhooks');
  await ctx.render(data, (ui, endpoints) => ui.table(endpoints, endpointColumns(ui), 'no webhook endpoints: create one with panelctl webhooks create'));
}

// `panelctl webhooks show ID`.
import { Command } from 'commander';
import type { WebhookEndpoint } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { showEndpoint } from './view.js';

export function webhooksShowCommand(ctx: Context): Command {
  return new Command('show')
    .description('show one webhook endpoint')
    .argument('<id>', 'webhook id', parseId)
    .action(async (id: number) => webhooksShowRun(ctx, id));
}

export async function webhooksShowRun(ctx: Context, id: number): Promise<void> {
  const { data } = await ctx.client().call<WebhookEndpoint>('GET', `/webhooks/${id}`);
  await ctx.render(data, (ui, endpoint) => showEndpoint(ui, endpoint));
}

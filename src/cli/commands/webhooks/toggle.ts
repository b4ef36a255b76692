// `panelctl webhooks enable ID` and `disable ID`: PUT with only `active`.
import { Command } from 'commander';
import type { WebhookEndpoint } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function webhooksEnableCommand(ctx: Context): Command {
  return new Command('enable')
    .description('activate an endpoint: it receives events again')
    .argument('<id>', 'webhook id', parseId)
    .action(async (id: number) => webhooksSetActiveRun(ctx, id, true));
}

export function webhooksDisableCommand(ctx: Context): Command {
  return new Command('disable')
    .description('deactivate an endpoint: it is kept but receives no events')
    .argument('<id>', 'webhook id', parseId)
    .action(async (id: number) => webhooksSetActiveRun(ctx, id, false));
}

export async function webhooksSetActiveRun(ctx: Context, id: number, active: boolean): Promise<void> {
  const { data } = await ctx.client().call<WebhookEndpoint>('PUT', `/webhooks/${id}`, { active });
  await ctx.render(data, (ui) => ui.success(`${active ? 'Enabled' : 'Disabled'} webhook ${id} (${data.url})`));
}

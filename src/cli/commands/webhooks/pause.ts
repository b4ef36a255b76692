// `panelctl webhooks pause ID`: PUT with only `paused: true`. Matching events are kept for the
// endpoint (not dropped, as `disable` does) and go out in publish order on `resume`.
import { Command } from 'commander';
import type { WebhookEndpoint } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function webhooksPauseCommand(ctx: Context): Command {
  return new Command('pause')
    .description('pause an endpoint: its events are kept, not sent, until it is resumed')
    .argument('<id>', 'webhook id', parseId)
    .action(async (id: number) => webhooksSetPausedRun(ctx, id, true));
}

export async function webhooksSetPausedRun(ctx: Context, id: number, paused: boolean): Promise<void> {
  const { data } = await ctx.client().call<WebhookEndpoint>('PUT', `/webhooks/${id}`, { paused });
  await ctx.render(data, (ui) =>
    ui.success(paused ? `Paused webhook ${id} (${data.url}): ${data.paused_deliveries ?? 0} deliveries kept` : `Resumed webhook ${id} (${data.url}): kept deliveries go out in publish order`),
  );
}

// `panelctl webhooks redeliver ID ENTRY_ID`: sends a logged payload again as a new delivery.
import { Command } from 'commander';
import type { DeliveryLogEntry } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { reportAttempt } from './attempt.js';

export function webhooksRedeliverCommand(ctx: Context): Command {
  return new Command('redeliver')
    .description("send a delivery log entry's payload again, as a new delivery; exit 1 when it fails")
    .argument('<id>', 'webhook id', parseId)
    .argument('<entry_id>', 'delivery log entry id (see panelctl webhooks deliveries ID)', parseId)
    .option('--no-wait', 'report the first attempt only, without waiting for a retry')
    .action(async (id: number, entryId: number, options: { wait: boolean }) => webhooksRedeliverRun(ctx, id, entryId, options.wait));
}

export async function webhooksRedeliverRun(ctx: Context, id: number, entryId: number, wait = true): Promise<void> {
  const client = ctx.client();
  const ui = ctx.json ? null : await ctx.ui();
  const spinner = ui?.spinner(`redelivering entry ${entryId} of webhook ${id}…`);
  let first: DeliveryLogEntry;
  try {
    first = (await client.call<DeliveryLogEntry>('POST', `/webhooks/${id}/deliveries/${entryId}/redeliver`)).data;
  } finally {
    spinner?.stop();
  }
  await reportAttempt(ctx, client, first, wait, 'redelivery');
}

// `panelctl webhooks test ID`: sends a webhook.test event and reports how the delivery ended
// (waiting for the retry when the first attempt failed; exit 1 when it failed).
import { Command } from 'commander';
import type { DeliveryLogEntry } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { reportAttempt } from './attempt.js';

export function webhooksTestCommand(ctx: Context): Command {
  return new Command('test')
    .description('send a webhook.test event to the endpoint (also when inactive); exit 1 when it fails')
    .argument('<id>', 'webhook id', parseId)
    .option('--message <text>', "the test payload's data.message")
    .option('--no-wait', 'report the first attempt only, without waiting for a retry')
    .action(async (id: number, options: { wait: boolean; message?: string }) => webhooksTestRun(ctx, id, options));
}

export async function webhooksTestRun(ctx: Context, id: number, options: { wait?: boolean; message?: string } = {}): Promise<void> {
  const wait = options.wait !== false;
  const client = ctx.client();
  const ui = ctx.json ? null : await ctx.ui();
  const spinner = ui?.spinner(`sending a test event to webhook ${id}…`);
  let first: DeliveryLogEntry;
  try {
    first = (await client.call<DeliveryLogEntry>('POST', `/webhooks/${id}/test`, options.message ? { message: options.message } : undefined)).data;
  } finally {
    spinner?.stop();
  }
  await reportAttempt(ctx, client, first, wait, 'test delivery');
}

// `panelctl webhooks recover ID --since T [--until T]`: every delivery of the endpoint whose
// final outcome in the window was a failure is sent again, as a new delivery each.
import { Command } from 'commander';
import { parseId, parseSince } from '../../args.js';
import type { Context } from '../../context.js';

export interface WebhooksRecoverOptions {
  since: string;
  until?: string;
}

export function webhooksRecoverCommand(ctx: Context): Command {
  return new Command('recover')
    .description('send again every delivery that failed (both attempts) in a time window, as new deliveries')
    .argument('<id>', 'webhook id', parseId)
    .requiredOption('--since <time>', 'start of the window: a duration back from now (2h, 30m, 1d) or an RFC 3339 time', (v: string) => parseSince(v))
    .option('--until <time>', 'end of the window (default now): a duration back from now or an RFC 3339 time', (v: string) => parseSince(v))
    .action(async (id: number, options: WebhooksRecoverOptions) => webhooksRecoverRun(ctx, id, options));
}

export async function webhooksRecoverRun(ctx: Context, id: number, options: WebhooksRecoverOptions): Promise<void> {
  const body = { since: options.since, ...(options.until ? { until: options.until } : {}) };
  const { data } = await ctx.client().call<{ count: number }>('POST', `/webhooks/${id}/recover`, body);
  await ctx.render(data, (ui, result) => {
    if (!result.count) ui.note(`no failed deliveries of webhook ${id} since ${options.since}`);
    else ui.success(`${result.count} failed ${result.count === 1 ? 'delivery' : 'deliveries'} of webhook ${id} queued again (follow them: panelctl webhooks deliveries ${id} --follow)`);
  });
}

// `panelctl webhooks deliveries ID [--follow] [--failed] [--limit N]`: the delivery log of an
// endpoint (newest first), or with --follow the live stream of new attempts (JSON lines with
// --json) through the shared stream engine. --limit bounds the list, or stops --follow after N.
import { Command } from 'commander';
import type { DeliveryLogEntry, WebhookEndpoint } from '../../api-types.js';
import { parseCount, parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { deliveryColumns, deliveryLine } from './view.js';

export interface WebhooksDeliveriesOptions {
  follow?: boolean;
  failed?: boolean;
  limit?: number;
}

export function webhooksDeliveriesCommand(ctx: Context): Command {
  return new Command('deliveries')
    .description('show the delivery log of an endpoint (last 100 attempts, newest first), or follow it live')
    .argument('<id>', 'webhook id', parseId)
    .option('-f, --follow', 'print new attempts as they happen (JSON lines with --json) until interrupted')
    .option('--failed', 'only failed attempts')
    .option('-n, --limit <n>', 'at most N entries (with --follow: stop after N)', parseCount)
    .action(async (id: number, options: WebhooksDeliveriesOptions) => webhooksDeliveriesRun(ctx, id, options));
}

export async function webhooksDeliveriesRun(ctx: Context, id: number, options: WebhooksDeliveriesOptions): Promise<void> {
  if (options.follow) return followRun(ctx, id, options);
  const query = new URLSearchParams();
  if (options.failed) query.set('success', 'false');
  if (options.limit) query.set('limit', String(Math.min(options.limit, 100)));
  const { data } = await ctx.client().call<DeliveryLogEntry[]>('GET', `/webhooks/${id}/deliveries${query.size ? `?${query}` : ''}`);
  // Filtered here too, so the output holds what the flags say whatever the daemon's version.
  let entries = options.failed ? data.filter((d) => !d.success) : data;
  if (options.limit) entries = entries.slice(0, options.limit);
  await ctx.render(entries, (ui, rows) => ui.table(rows, deliveryColumns(ui), options.failed ? 'no failed deliveries' : 'no deliveries yet'));
}

async function followRun(ctx: Context, id: number, options: WebhooksDeliveriesOptions): Promise<void> {
  const client = ctx.client();
  // A clear 404/403 before streaming, rather than a stream that never says anything.
  await client.call<WebhookEndpoint>('GET', `/webhooks/${id}`);
  const { followDeliveries } = await import('../../stream/deliveries.js');
  const ui = ctx.json ? null : await ctx.ui();
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let shown = 0;
  let fatal: Error | undefined;
  let announced = false;
  try {
    await followDeliveries(
      client,
      { endpointId: id, signal: controller.signal },
      {
        onEntry(entry) {
          if (entry.endpoint_id !== id || (options.failed && entry.success)) return;
          if (options.limit && shown >= options.limit) return;
          shown++;
          if (ui) ctx.out(deliveryLine(ui, entry));
          else ctx.io.stdout.write(`${JSON.stringify(entry)}\n`);
          if (options.limit && shown >= options.limit) controller.abort();
        },
        onStatus(state, detail) {
          if (state === 'connected' && !announced) {
            announced = true;
            ctx.err(`following deliveries of webhook ${id}${options.failed ? ' (failed only)' : ''}; Ctrl-C to stop`);
          } else if (state === 'connected') {
            ctx.err('reconnected');
          } else if (state === 'reconnecting' && detail) {
            ctx.err(`connection lost (${detail}); reconnecting…`);
          }
        },
        onError(error) {
          fatal = error;
        },
      },
    );
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  if (fatal) throw fatal;
}

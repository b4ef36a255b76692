// `panelctl webhooks deliveries ID [--follow] [--failed] [--event E] [--since T] [--limit N]`:
// the delivery log of an endpoint (newest first), narrowed by outcome, event and time; with
// --follow the last --limit entries (default 10, oldest first) and then every new attempt as it
// happens (JSON lines with --json), through the shared stream engine, until interrupted.
import { Command } from 'commander';
import type { DeliveryLogEntry, WebhookEndpoint } from '../../api-types.js';
import { parseCount, parseId, parseSince } from '../../args.js';
import type { Context } from '../../context.js';
import { deliveryColumns, deliveryLine } from './view.js';

export interface WebhooksDeliveriesOptions {
  follow?: boolean;
  failed?: boolean;
  event?: string;
  since?: string;
  limit?: number;
}

/** How many entries --follow shows before the new ones when --limit is not given. */
export const FOLLOW_HISTORY = 10;

export function webhooksDeliveriesCommand(ctx: Context): Command {
  return new Command('deliveries')
    .description('show the delivery log of an endpoint (last 100 attempts, newest first), or follow it live')
    .argument('<id>', 'webhook id', parseId)
    .option('-f, --follow', `print the last --limit attempts (default ${FOLLOW_HISTORY}), then new ones as they happen (JSON lines with --json) until interrupted`)
    .option('--failed', 'only failed attempts')
    .option('--event <events>', 'only these events (a name, or comma-separated names)')
    .option('--since <time>', 'only attempts since then: a duration back from now (2h, 30m, 1d) or an RFC 3339 time', (v: string) => parseSince(v))
    .option('-n, --limit <n>', `at most N entries (with --follow: N past entries first, default ${FOLLOW_HISTORY})`, parseCount)
    .action(async (id: number, options: WebhooksDeliveriesOptions) => webhooksDeliveriesRun(ctx, id, options));
}

/** The entries the flags select, newest first, read with the API's filters. */
async function listEntries(ctx: Context, id: number, options: WebhooksDeliveriesOptions, limit: number | undefined): Promise<DeliveryLogEntry[]> {
  const query = new URLSearchParams();
  if (options.failed) query.set('success', 'false');
  if (options.event) query.set('event', options.event);
  if (options.since) query.set('since', options.since);
  if (limit) query.set('limit', String(Math.min(limit, 100)));
  const { data } = await ctx.client().call<DeliveryLogEntry[]>('GET', `/webhooks/${id}/deliveries${query.size ? `?${query}` : ''}`);
  // Filtered here too, so the output holds what the flags say whatever the daemon's version.
  const entries = data.filter((d) => matches(d, options));
  return limit ? entries.slice(0, limit) : entries;
}

function matches(entry: DeliveryLogEntry, options: WebhooksDeliveriesOptions): boolean {
  if (options.failed && entry.success) return false;
  if (options.event && !options.event.split(',').map((e) => e.trim()).includes(entry.event)) return false;
  if (options.since && Date.parse(entry.created_at) < Date.parse(options.since)) return false;
  return true;
}

export async function webhooksDeliveriesRun(ctx: Context, id: number, options: WebhooksDeliveriesOptions): Promise<void> {
  if (options.follow) return followRun(ctx, id, options);
  const entries = await listEntries(ctx, id, options, options.limit);
  const filtered = options.failed || options.event || options.since;
  await ctx.render(entries, (ui, rows) => ui.table(rows, deliveryColumns(ui), filtered ? 'no deliveries match' : 'no deliveries yet'));
}

async function followRun(ctx: Context, id: number, options: WebhooksDeliveriesOptions): Promise<void> {
  const client = ctx.client();
  // A clear 404/403 before streaming, rather than a stream that never says anything.
  await client.call<WebhookEndpoint>('GET', `/webhooks/${id}`);
  const { followDeliveries } = await import('../../stream/deliveries.js');
  const ui = ctx.json ? null : await ctx.ui();
  const print = (entry: DeliveryLogEntry) => {
    if (ui) ctx.out(deliveryLine(ui, entry));
    else ctx.io.stdout.write(`${JSON.stringify(entry)}\n`);
  };
  // The past first, oldest to newest; the stream then resumes after the newest of them.
  const history = (await listEntries(ctx, id, options, options.limit ?? FOLLOW_HISTORY)).reverse();
  for (const entry of history) print(entry);
  const seen = new Set(history.map((e) => e.id));
  const newest = history.reduce((max, e) => Math.max(max, e.id), 0);
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let fatal: Error | undefined;
  let announced = false;
  const narrowed = [options.failed ? 'failed only' : '', options.event ? `event ${options.event}` : ''].filter(Boolean).join(', ');
  try {
    await followDeliveries(
      client,
      { endpointId: id, signal: controller.signal, lastEventId: newest ? String(newest) : undefined },
      {
        onEntry(entry) {
          if (entry.endpoint_id !== id || seen.has(entry.id) || !matches(entry, { ...options, since: undefined })) return;
          seen.add(entry.id);
          print(entry);
        },
        onNotice(notice) {
          if (notice.endpoint.id === id) ctx.err(`webhook ${id}: ${notice.reason}`);
        },
        onStatus(state, detail) {
          if (state === 'connected' && !announced) {
            announced = true;
            ctx.err(`following deliveries of webhook ${id}${narrowed ? ` (${narrowed})` : ''}; Ctrl-C to stop`);
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

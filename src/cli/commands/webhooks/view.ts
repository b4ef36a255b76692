// How endpoints and delivery log entries read in a terminal (tables, records, one-line
// summaries), shared by the webhooks commands.
import type { DeliveryLogEntry, EndpointHealth, WebhookEndpoint } from '../../api-types.js';
import type { Column, Ui } from '../../output.js';
import { clean, shorten } from '../../ui/format.js';

/** Room for a failed attempt's reason in a one-line summary. */
export const REASON_WIDTH = 60;

export function endpointColumns(ui: Ui): Column<WebhookEndpoint>[] {
  return [
    { header: 'id', value: (w) => String(w.id) },
    { header: 'url', value: (w) => w.url, shrink: true },
    { header: 'events', value: (w) => w.events, shrink: true },
    { header: 'active', value: (w) => (w.active ? 'yes' : 'no'), style: (text, w) => (w.active ? ui.c.green(text) : ui.c.yellow(text)) },
    { header: 'health', value: (w) => healthSummary(w.health), style: (text, w) => (w.health?.consecutive_failures ? ui.c.red(text) : text) },
    { header: 'last failure', value: (w) => w.health?.last_failure_reason ?? '-', shrink: true },
    { header: 'updated', value: (w) => ui.time(w.updated_at) },
    { header: 'paused', value: (w) => pausedSummary(w), style: (text, w) => (w.paused ? ui.c.yellow(text) : text) },
  ];
}

/** `no`, or `yes (N kept)`: a paused endpoint's deliveries wait for `webhooks resume`. */
export function pausedSummary(endpoint: Pick<WebhookEndpoint, 'paused' | 'paused_deliveries'>): string {
  return endpoint.paused ? `yes (${endpoint.paused_deliveries ?? 0} kept)` : 'no';
}

/** `98% ok`, `3 failing · 40% ok`, or `-` before any attempt. */
export function healthSummary(health: EndpointHealth | undefined): string {
  if (!health || health.success_rate === null) return '-';
  const rate = `${Math.round(health.success_rate * 100)}% ok`;
  return health.consecutive_failures ? `${health.consecutive_failures} failing · ${rate}` : rate;
}

/** Why an attempt failed: its reason, or for entries of older daemons the status or response. */
export function failureReason(d: DeliveryLogEntry): string {
  if (d.success) return '';
  return (d.reason ?? (d.status_code ? `HTTP ${d.status_code}` : d.response)).replace(/\s+/g, ' ').trim();
}

/** The endpoint as a record; `extra` lines (a generated secret) join it, aligned. */
export function showEndpoint(ui: Ui, endpoint: WebhookEndpoint, extra: Array<[string, string]> = []): void {
  ui.record([
    ['id', String(endpoint.id)],
    ['url', endpoint.url],
    ['events', endpoint.events],
    ['active', endpoint.active ? ui.c.green('yes') : ui.c.yellow('no')],
    ['signature', endpoint.signature ?? 'seed'],
    ['paused', endpoint.paused ? ui.c.yellow(pausedSummary(endpoint)) : 'no'],
    ...Object.entries(endpoint.headers ?? {}).map(([name, value]): [string, string] => ['header', `${name}: ${value}`]),
    ...(endpoint.previous_secret_expires_at ? [['previous secret', `signs too until ${ui.time(endpoint.previous_secret_expires_at)}`] as [string, string]] : []),
    ...policyPairs(endpoint),
    ...healthPairs(ui, endpoint.health),
    ['created', ui.time(endpoint.created_at)],
    ['updated', ui.time(endpoint.updated_at)],
    ...extra,
  ]);
}

/** `retries 1 s, 1 s, 2 s` (or `none`), the cap and the rate; absent from answers of older daemons. */
function policyPairs(endpoint: WebhookEndpoint): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  const schedule = endpoint.retry_schedule;
  if (schedule) pairs.push(['retries', schedule.length ? schedule.map((s) => `${s} s`).join(', ') : 'none']);
  if (endpoint.max_in_flight !== undefined) pairs.push(['max in flight', String(endpoint.max_in_flight)]);
  if (endpoint.rate_limit_per_second !== undefined) pairs.push(['rate limit', endpoint.rate_limit_per_second === null ? 'none' : `${endpoint.rate_limit_per_second}/s`]);
  return pairs;
}

function healthPairs(ui: Ui, health: EndpointHealth | undefined): Array<[string, string]> {
  if (!health) return [];
  const pairs: Array<[string, string]> = [['health', healthSummary(health)]];
  if (health.consecutive_failures) pairs.push(['failing', ui.c.red(`${health.consecutive_failures} deliveries in a row`)]);
  pairs.push(['last success', ui.time(health.last_success_at)]);
  pairs.push(['last failure', health.last_failure_at ? `${ui.time(health.last_failure_at)} (${health.last_failure_reason ?? '?'})` : '-']);
  if (health.next_attempt_at) pairs.push(['next attempt', ui.time(health.next_attempt_at)]);
  return pairs;
}

export function deliveryColumns(ui: Ui): Column<DeliveryLogEntry>[] {
  return [
    { header: 'id', value: (d) => String(d.id) },
    { header: 'time', value: (d) => ui.time(d.created_at) },
    { header: 'event', value: (d) => d.event },
    { header: 'ok', value: (d) => (d.success ? 'ok' : 'failed'), style: (text, d) => (d.success ? ui.c.green(text) : ui.c.red(text)) },
    { header: 'status', value: (d) => (d.status_code ? String(d.status_code) : '-') },
    { header: 'attempt', value: (d) => String(d.attempt) },
    { header: 'ms', value: (d) => String(d.duration_ms) },
    { header: 'reason', value: (d) => failureReason(d) || '-', shrink: true },
    { header: 'delivery', value: (d) => d.delivery_id },
  ];
}

/** `text` cut to `max` characters, the cut marked with `…`. */
export function ellipsis(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** What one row shows of an attempt, whoever made it (the daemon, or `listen` forwarding). */
export interface AttemptRow {
  at: string;
  ok: boolean;
  /** `HTTP 200`, `no answer`, or why there was none, with the failure's detail in brackets. */
  status: string;
  event: string;
  /** Where it went and which try it was: `webhook 3`, `entry 9`, `attempt 1`, the ones known. */
  where: string[];
  durationMs: number;
  deliveryId: string;
}

/**
 * The one row format of an attempt, shared by `webhooks test`, `redeliver`, `deliveries
 * --follow` and `listen`, so the same attempt reads the same wherever it shows: tab-separated
 * when piped, two spaces on a terminal.
 */
export function attemptRow(ui: Ui, row: AttemptRow): string {
  const text = [
    ui.time(row.at),
    ui.ok(row.ok),
    row.ok ? ui.c.green(row.status) : ui.c.red(row.status),
    ui.c.bold(row.event),
    ...row.where,
    `${row.durationMs} ms`,
    ui.c.dim(row.deliveryId),
  ];
  return ui.tty ? text.join('  ') : text.join('\t');
}

/** One line per attempt of the delivery log: for --follow and for test/redeliver results. */
export function deliveryLine(ui: Ui, d: DeliveryLogEntry): string {
  let status = d.status_code === 0 ? 'no answer' : `HTTP ${d.status_code}`;
  // Why a failed attempt failed: its reason, or for a plain HTTP failure the start of the
  // answer's body (an untrusted body loses its control characters, and a long one ends at a
  // word with an ellipsis).
  const reason = failureReason(d);
  const detail = reason && reason !== status ? reason : d.success ? '' : shorten(clean(d.response), REASON_WIDTH);
  if (detail) status += ` (${detail})`;
  return attemptRow(ui, {
    at: d.created_at,
    ok: d.success,
    status,
    event: d.event,
    where: [`webhook ${d.endpoint_id}`, `entry ${d.id}`, `attempt ${d.attempt}`],
    durationMs: d.duration_ms,
    deliveryId: d.delivery_id,
  });
}

// How endpoints and delivery log entries read in a terminal (tables, records, one-line
// summaries), shared by the webhooks commands.
import type { DeliveryLogEntry, WebhookEndpoint } from '../../api-types.js';
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
    { header: 'updated', value: (w) => ui.time(w.updated_at) },
  ];
}

/** The endpoint as a record; `extra` lines (a generated secret) join it, aligned. */
export function showEndpoint(ui: Ui, endpoint: WebhookEndpoint, extra: Array<[string, string]> = []): void {
  ui.record([
    ['id', String(endpoint.id)],
    ['url', endpoint.url],
    ['events', endpoint.events],
    ['active', endpoint.active ? ui.c.green('yes') : ui.c.yellow('no')],
    ['created', ui.time(endpoint.created_at)],
    ['updated', ui.time(endpoint.updated_at)],
    ...extra,
  ]);
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
    { header: 'delivery', value: (d) => d.delivery_id },
  ];
}

/** One line per attempt: for --follow and for test/redeliver results. */
export function deliveryLine(ui: Ui, d: DeliveryLogEntry): string {
  let status = d.status_code === 0 ? 'no answer' : `HTTP ${d.status_code}`;
  // Why a failed attempt failed, in short (the response body, or the connection error): an
  // untrusted body loses its control characters, and a long one ends at a word with an ellipsis.
  const reason = d.success ? '' : shorten(clean(d.response), REASON_WIDTH);
  if (reason) status += ` (${reason})`;
  const text = [
    ui.time(d.created_at),
    ui.ok(d.success),
    d.success ? ui.c.green(status) : ui.c.red(status),
    ui.c.bold(d.event),
    `webhook ${d.endpoint_id}`,
    `entry ${d.id}`,
    `attempt ${d.attempt}`,
    `${d.duration_ms} ms`,
    ui.c.dim(d.delivery_id),
  ];
  return ui.tty ? text.join('  ') : text.join('\t');
}

// Text of the watch view: table columns, cells and the detail pane's lines, as plain strings
// so they can be measured, truncated and tested without a terminal.
import type { EndpointPolicyView, WatchEndpoint, WatchEntry } from './state.js';

/**
 * Removes terminal control sequences and control characters (a receiver's response body is
 * untrusted: it must not move the cursor or recolour the screen). Tabs become spaces.
 */
export function clean(text: string): string {
  return text
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g, '')
    .replace(/\t/g, '  ')
    .replace(/[\x00-\x09\x0b-\x1f\x7f-\x9f]/g, '');
}

/** Truncates with an ellipsis and pads to exactly `width` characters. */
export function fit(text: string, width: number, align: 'left' | 'right' = 'left'): string {
  if (width <= 0) return '';
  const chars = [...text];
  const cut = chars.length > width ? `${chars.slice(0, width - 1).join('')}…` : text;
  const pad = ' '.repeat(Math.max(0, width - [...cut].length));
  return align === 'left' ? cut + pad : pad + cut;
}

/**
 * Shortens prose to at most `max` characters for a one-line summary: whitespace runs become one
 * space, and a longer text is cut at the last word boundary that fits (mid-word only when one
 * word is longer than half the room), always with an ellipsis.
 *
 * @example
 * shorten('connection refused by the receiver', 20); // 'connection refused…'
 */
export function shorten(text: string, max: number): string {
  const chars = [...text.replace(/\s+/g, ' ').trim()];
  if (chars.length <= max) return chars.join('');
  const room = chars.slice(0, Math.max(0, max - 1));
  const space = room.lastIndexOf(' ');
  const kept = space >= Math.floor(max / 2) ? room.slice(0, space) : room;
  return `${kept.join('').replace(/[\s.,;:!?-]+$/, '')}…`;
}

const two = (n: number) => String(n).padStart(2, '0');

/** Local wall-clock time of an attempt, HH:MM:SS. */
export function formatTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '--:--:--';
  return `${two(date.getHours())}:${two(date.getMinutes())}:${two(date.getSeconds())}`;
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  return `${Math.round(ms / 1000)}s`;
}

/** 0 means no HTTP answer at all (connection error or time-out). */
export function formatStatusCode(code: number): string {
  return code === 0 ? 'ERR' : String(code);
}

export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

/** The path (and query) of url, or '' for the root: two endpoints of one host differ there. */
export function pathOf(url: string): string {
  try {
    const { pathname, search } = new URL(url);
    return pathname === '/' && !search ? '' : `${pathname}${search}`;
  } catch {
    return '';
  }
}

/** `#3 hooks.example.com/panel`: the table's endpoint cell (cut at its end where narrow). */
export function endpointLabel(id: number, endpoint: WatchEndpoint | undefined): string {
  return endpoint ? `#${id} ${clean(endpoint.host)}${clean(pathOf(endpoint.url))}` : `#${id}`;
}

/** The attempt cell: retries carry a ↻ mark; past the default's two attempts (a retry schedule), the number alone. */
export function formatAttempt(entry: WatchEntry): string {
  if (entry.attempt > 2) return `${entry.attempt}↻`;
  return entry.attempt > 1 ? `${entry.attempt}/2↻` : `${entry.attempt}/2`;
}

/** The result cell; the words stay readable without colour (and in `tmux capture-pane`). */
export function formatResult(entry: WatchEntry, retryPending: boolean): string {
  if (entry.success) return '✓ ok';
  return retryPending ? '✗ retrying' : '✗ FAILED';
}

export interface Columns {
  time: number;
  endpoint: number;
  event: number;
  attempt: number;
  code: number;
  duration: number;
  result: number;
}

/** The longest catalogue event name (subscription.suspended). */
const EVENT_WIDTH = 22;
const FIXED = { time: 8, attempt: 4, code: 4, duration: 5, result: 10 };
/** The selection marker and the gaps between the seven columns. */
const CHROME = 2 + 6;

/** Column widths for a terminal `width` wide: the event and endpoint columns share what is left. */
export function layoutColumns(width: number): Columns {
  const flexible = Math.max(16, width - CHROME - FIXED.time - FIXED.attempt - FIXED.code - FIXED.duration - FIXED.result);
  const event = Math.min(EVENT_WIDTH, Math.max(8, flexible - 14));
  return { ...FIXED, event, endpoint: flexible - event };
}

export function headingLine(columns: Columns): string {
  return `  ${[
    fit('TIME', columns.time),
    fit('ENDPOINT', columns.endpoint),
    fit('EVENT', columns.event),
    fit('ATT', columns.attempt),
    fit('CODE', columns.code, 'right'),
    fit('DUR', columns.duration, 'right'),
    fit('RESULT', columns.result),
  ].join(' ')}`;
}

/** One table row's cells, already fitted; the result cell is coloured by the component. */
export function rowCells(entry: WatchEntry, endpoint: WatchEndpoint | undefined, columns: Columns, retryPending: boolean) {
  return {
    time: fit(formatTime(entry.created_at), columns.time),
    endpoint: fit(endpointLabel(entry.endpoint_id, endpoint), columns.endpoint),
    event: fit(clean(entry.event), columns.event),
    attempt: fit(formatAttempt(entry), columns.attempt),
    code: fit(formatStatusCode(entry.status_code), columns.code, 'right'),
    duration: fit(formatDuration(entry.duration_ms), columns.duration, 'right'),
    result: fit(formatResult(entry, retryPending), columns.result),
  };
}

/** Hard-wraps a line to `width` characters (a 4 KB response can be one long line). */
export function wrapLine(line: string, width: number): string[] {
  const chars = [...line];
  if (width <= 0 || chars.length <= width) return [line];
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += width) out.push(chars.slice(i, i + width).join(''));
  return out;
}

export interface DetailLine {
  text: string;
  kind: 'title' | 'heading' | 'body' | 'ok' | 'error' | 'dim';
}

function prettyJson(value: unknown): string {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2) ?? 'null';
}

/** Everything the detail pane shows for one attempt, wrapped to `width`. */
/** An endpoint's delivery policy in one line: its retry schedule, caps and pause. */
export function policyText(policy: EndpointPolicyView, paused?: number): string {
  const retries = policy.retrySchedule.length ? `retries after ${policy.retrySchedule.join(', ')} s` : 'no retries';
  const rate = policy.rateLimit === null ? 'no rate limit' : `at most ${policy.rateLimit} a second`;
  return [retries, `at most ${policy.maxInFlight} at once`, rate, ...(paused !== undefined ? [`paused, ${paused} kept`] : [])].join('  ·  ');
}

export function detailLines(entry: WatchEntry, endpoint: WatchEndpoint | undefined, width: number, retryPending: boolean): DetailLine[] {
  const lines: DetailLine[] = [];
  const push = (text: string, kind: DetailLine['kind']) => {
    for (const part of text.split('\n')) for (const wrapped of wrapLine(clean(part), width)) lines.push({ text: wrapped, kind });
  };
  push(`Delivery ${entry.delivery_id}  ·  log entry #${entry.id}`, 'title');
  push(`Endpoint #${entry.endpoint_id} ${endpoint?.url ?? ''}`.trimEnd(), 'body');
  push(`Event ${entry.event}  ·  attempt ${formatAttempt(entry)}${entry.attempt > 1 ? ' (retry)' : ''}  ·  ${formatTime(entry.created_at)} (${entry.created_at})`, 'body');
  const outcome = entry.status_code === 0 ? 'no HTTP answer (connection error or time-out)' : `HTTP ${entry.status_code}`;
  push(
    // The daemon that made it shares this line: on one database several daemons attempt.
    `Result ${formatResult(entry, retryPending)}  ·  ${outcome}  ·  ${formatDuration(entry.duration_ms)}${entry.daemon ? `  ·  by daemon ${entry.daemon}` : ''}`,
    entry.success ? 'ok' : 'error',
  );
  if (!entry.success && entry.reason) push(`Reason ${entry.reason}`, 'error');
  if (retryPending && entry.next_attempt_at) push(`Next attempt ${formatTime(entry.next_attempt_at)} (${entry.next_attempt_at})`, 'body');
  const health = endpoint?.health;
  if (health && health.success_rate !== null) {
    const failing = health.consecutive_failures ? `${health.consecutive_failures} failed deliveries in a row  ·  ` : '';
    push(`Endpoint health ${endpoint?.active === false ? 'disabled  ·  ' : ''}${failing}${Math.round(health.success_rate * 100)}% of the last attempts ok`, health.consecutive_failures ? 'error' : 'dim');
  }
  lines.push({ text: '', kind: 'body' });
  push('Headers sent', 'heading');
  const headers = Object.entries(entry.request_headers ?? {});
  if (headers.length) for (const [name, value] of headers) push(`  ${name}: ${value}`, 'body');
  else push('  (not reported by this daemon)', 'dim');
  lines.push({ text: '', kind: 'body' });
  push('Payload', 'heading');
  for (const line of prettyJson(entry.payload).split('\n')) push(`  ${line}`, 'body');
  lines.push({ text: '', kind: 'body' });
  push(`Response body (first 4 KB${entry.response ? `, ${Buffer.byteLength(entry.response)} bytes` : ''})`, 'heading');
  if (entry.response) for (const line of entry.response.split(/\r?\n/)) push(`  ${line}`, 'body');
  else push('  (empty)', 'dim');
  // Last, so the attempt itself fills the pane's first screen.
  if (endpoint?.policy) {
    lines.push({ text: '', kind: 'body' });
    push(`Endpoint policy ${policyText(endpoint.policy, endpoint.paused)}`, 'dim');
  }
  return lines;
}

// What the daemon tells its metrics, as one narrow interface handed to the parts that know the
// facts (the HTTP hooks, the dispatcher, the request limits, the store). Without
// --metrics-port it is NO_METRICS: every call is an empty function, so metrics off cost nothing
// beyond the call. The Prometheus implementation is prometheus.ts.

/**
 * Why an attempt failed, as a fixed class (the metrics' `reason` label): the free-text reason of
 * the delivery log (`HTTP 503`, `TLS: certificate expired`) would give a label value per message.
 */
export type ReasonClass = 'none' | 'http_4xx' | 'http_5xx' | 'timeout' | 'connection' | 'tls' | 'blocked' | 'redirect' | 'other';

export const REASON_CLASSES: readonly ReasonClass[] = ['none', 'http_4xx', 'http_5xx', 'timeout', 'connection', 'tls', 'blocked', 'redirect', 'other'];

/** Which request limit answered 429: a request-rate window (`login`, `reset`, `user`) or the login lockout. */
export type LimitedScope = 'login' | 'reset' | 'user' | 'lockout';

export interface DaemonMetrics {
  /** False for NO_METRICS: callers skip work done only to feed metrics (a date to parse). */
  readonly enabled: boolean;
  /** One answered request: `route` is the matched route's template (never the raw path). */
  httpRequest(method: string, route: string, status: number, seconds: number): void;
  /** One webhook attempt this daemon made. */
  attempt(success: boolean, reason: ReasonClass, seconds: number): void;
  /** From an event's publish to its delivery's first attempt. */
  deliveryLag(seconds: number): void;
  rateLimited(scope: LimitedScope): void;
  /** An address was locked out of login and password reset. */
  lockout(): void;
  /** One store write made durable (see Store.observeCommits). */
  storeCommit(seconds: number): void;
}

const nothing = () => undefined;

export const NO_METRICS: DaemonMetrics = Object.freeze({
  enabled: false,
  httpRequest: nothing,
  attempt: nothing,
  deliveryLag: nothing,
  rateLimited: nothing,
  lockout: nothing,
  storeCommit: nothing,
});

/** Connection-level failures as failure-reason.ts words them (no answer came). */
const CONNECTION = /^(connection|host unreachable|network unreachable|DNS:|no answer|listen)/;

/**
 * The class of an attempt's outcome, from its status and the reason failure-reason.ts gave.
 * @example
 * reasonClass(503, 'HTTP 503'); // 'http_5xx'
 * reasonClass(0, 'timeout after 10 s'); // 'timeout'
 */
export function reasonClass(status: number, reason: string | null | undefined): ReasonClass {
  if (status >= 200 && status < 300) return 'none';
  if (status >= 300 && status < 400) return 'redirect';
  if (status >= 400 && status < 500) return 'http_4xx';
  if (status >= 500 && status < 600) return 'http_5xx';
  if (status !== 0 || !reason) return 'other';
  if (reason.startsWith('timeout') || reason === 'connect timed out') return 'timeout';
  if (reason.startsWith('TLS:')) return 'tls';
  if (reason.startsWith('blocked:')) return 'blocked';
  if (CONNECTION.test(reason)) return 'connection';
  return 'other';
}

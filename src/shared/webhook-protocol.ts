// The webhook delivery protocol's fixed facts (service description section 5.10), in one place:
// the dispatcher sends by them, and the routes, the OpenAPI document and the docs quote them.
// Per-endpoint policies (a retry schedule, caps) are the endpoint's; these are the defaults.

export const USER_AGENT = 'Panel-WebPanel-Webhook/1.0';

/** Request headers every delivery carries (the Standard Webhooks trio is added for such endpoints). */
export const HEADER = {
  contentType: 'Content-Type',
  userAgent: 'User-Agent',
  event: 'X-Webhook-Event',
  signature: 'X-Webhook-Signature',
  /** During a rotation's overlap: the signature keyed with the previous secret. */
  signaturePrevious: 'X-Webhook-Signature-Previous',
  delivery: 'X-Webhook-Delivery',
  standardId: 'webhook-id',
  standardTimestamp: 'webhook-timestamp',
  standardSignature: 'webhook-signature',
} as const;

/** Attempts of one delivery: the first and one retry. */
export const MAX_ATTEMPTS = 2;
/** The retry's delay after a failed first attempt. */
export const RETRY_DELAY_MS = 2_000;
/** An attempt that has no complete answer by then fails as a time-out. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** Bytes of a receiver's answer kept in the delivery log. */
export const MAX_RESPONSE_BYTES = 4096;
/** Attempts in flight at once to one endpoint. */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 8;
/** How long a test or redeliver waits for the first attempt's log entry, whoever makes it. */
export const FIRST_ATTEMPT_WAIT_MS = 30_000;
/** Bounds of an endpoint's retry schedule (CONTRACT.md section 7): entries, each entry's seconds, their sum. */
export const RETRY_SCHEDULE_MAX_ENTRIES = 10;
export const RETRY_DELAY_MAX_SECONDS = 86_400;
export const RETRY_SCHEDULE_MAX_TOTAL_SECONDS = 259_200;
/** Bounds of an endpoint's `max_in_flight`. */
export const MAX_IN_FLIGHT_LIMIT = 64;
/** Bounds of an endpoint's `rate_limit_per_second`. */
export const RATE_LIMIT_MAX = 1000;

/**
 * The delay (whole seconds) of the retry that follows a failed attempt, read from its log entry
 * (the retry is due `next_attempt_at`, the delay after the attempt's answer); the default 2 s
 * for entries of older daemons, which do not say.
 */
export function retryDelaySecondsOf(entry: { next_attempt_at?: string | null; created_at: string; duration_ms: number }): number {
  if (!entry.next_attempt_at) return RETRY_DELAY_MS / 1000;
  return Math.max(0, Math.round((Date.parse(entry.next_attempt_at) - Date.parse(entry.created_at) - entry.duration_ms) / 1000));
}

// Endpoint health, read from the endpoint's delivery log (its last 100 attempts): failed
// deliveries in a row, the last success and failure, the success rate. Also what a delivery's
// final outcome was, which the auto-disable and recovery both need.
import type { LogHealth } from '../../store/store.js';
import type { DeliveryLogEntry } from '../../store/types.js';
import { MAX_ATTEMPTS } from '../../shared/webhook-protocol.js';
/**
 * A failed first attempt with no retry in the log after this long is taken as final: the retry
 * is made 2 s after the failure and bounded by 10 s, so it was cancelled (the endpoint was
 * disabled or the daemon dropped it) rather than pending.
 */
export const RETRY_GIVEN_UP_MS = 60_000;

export interface EndpointHealth {
  /** Failed deliveries in a row, newest first (both attempts failed), since the endpoint was last enabled. */
  consecutive_failures: number;
  last_success_at: string | null;
  last_failure_at: string | null;
  last_failure_reason: string | null;
  /** Successful attempts / attempts over the log (last 100 attempts), 0 to 1; null without attempts. */
  success_rate: number | null;
}

export type Outcome = 'succeeded' | 'failed' | 'pending';

export interface DeliveryOutcome {
  delivery_id: string;
  outcome: Outcome;
  /** The delivery's latest attempt in the log. */
  last: DeliveryLogEntry;
}

/** The reason of a failed entry: its own, or for older entries the status or response. */
export function entryReason(entry: Pick<DeliveryLogEntry, 'success' | 'reason' | 'status_code' | 'response'>): string | null {
  if (entry.success) return null;
  if (entry.reason) return entry.reason;
  return entry.status_code ? `HTTP ${entry.status_code}` : entry.response || 'failed';
}

/**
 * Each delivery of a log (newest first in, newest first out) with how it ended: succeeded, failed
 * (the last attempt failed and no further attempt is due), or pending (a retry is due).
 */
export function deliveryOutcomes(entries: readonly DeliveryLogEntry[], nowMs: number): DeliveryOutcome[] {
  const latest = new Map<string, DeliveryLogEntry>();
  const order: string[] = [];
  for (const entry of entries) {
    const seen = latest.get(entry.delivery_id);
    if (!seen) order.push(entry.delivery_id);
    if (!seen || entry.attempt > seen.attempt) latest.set(entry.delivery_id, entry);
  }
  return order.map((id) => {
    const last = latest.get(id)!;
    let outcome: Outcome = 'succeeded';
    if (!last.success) {
      const givenUp = last.attempt >= MAX_ATTEMPTS || nowMs - Date.parse(last.created_at) > RETRY_GIVEN_UP_MS;
      outcome = givenUp ? 'failed' : 'pending';
    }
    return { delivery_id: id, outcome, last };
  });
}

/**
 * @example
 * computeHealth(await store.deliveryLog.list(id), endpoint.health_reset_at ?? null, Date.now());
 */
export function computeHealth(entries: readonly DeliveryLogEntry[], resetAt: string | null, nowMs: number): EndpointHealth {
  const health: EndpointHealth = {
    consecutive_failures: 0,
    last_success_at: null,
    last_failure_at: null,
    last_failure_reason: null,
    success_rate: null,
  };
  let ok = 0;
  for (const entry of entries) {
    if (entry.success) {
      ok++;
      health.last_success_at ??= entry.created_at;
    } else if (health.last_failure_at === null) {
      health.last_failure_at = entry.created_at;
      health.last_failure_reason = entryReason(entry);
    }
  }
  if (entries.length) health.success_rate = Math.round((ok / entries.length) * 1000) / 1000;
  const resetMs = resetAt ? Date.parse(resetAt) : -Infinity;
  for (const delivery of deliveryOutcomes(entries, nowMs)) {
    if (delivery.outcome === 'pending') continue;
    if (delivery.outcome === 'succeeded' || Date.parse(delivery.last.created_at) < resetMs) break;
    health.consecutive_failures++;
  }
  return health;
}

/**
 * The same health as computeHealth over the log the summary was made of (the store keeps the
 * summary as attempts are recorded; null summaries are read from the log instead).
 * @example
 * healthFromSummary((await store.deliveryLog.health([id])).get(id)!, endpoint.health_reset_at ?? null, Date.now());
 */
export function healthFromSummary(summary: LogHealth, resetAt: string | null, nowMs: number): EndpointHealth {
  const failure = summary.last_failure;
  const health: EndpointHealth = {
    consecutive_failures: 0,
    last_success_at: summary.last_success_at,
    last_failure_at: failure?.created_at ?? null,
    last_failure_reason: failure ? entryReason(failure) : null,
    success_rate: summary.attempts ? Math.round((summary.successes / summary.attempts) * 1000) / 1000 : null,
  };
  // Deliveries since the newest success, each by its newest attempt (as deliveryOutcomes reads them).
  const resetMs = resetAt ? Date.parse(resetAt) : -Infinity;
  const seen = new Set<string>();
  for (const attempt of summary.failures) {
    if (seen.has(attempt.delivery_id)) continue;
    seen.add(attempt.delivery_id);
    const createdMs = Date.parse(attempt.created_at);
    const pending = attempt.attempt < MAX_ATTEMPTS && nowMs - createdMs <= RETRY_GIVEN_UP_MS;
    if (pending) continue;
    if (createdMs < resetMs) break;
    health.consecutive_failures++;
  }
  return health;
}

// The endpoint as the API shows it: everything but the secrets (custom header values masked), with its signature scheme and
// its health, from the summary the store keeps of its delivery log.
import type { FastifyInstance } from 'fastify';
import type { WebhookEndpoint } from '../../../shared/api/webhooks.js';
import type { LogHealth } from '../../../store/store.js';
import type { WebhookRecord } from '../../../store/types.js';
import { computeHealth, healthFromSummary, type EndpointHealth } from '../../dispatcher/health.js';
import { maskedHeaders, previousSecret } from '../../dispatcher/headers.js';
import { policyOfRecord } from '../../dispatcher/scheduler.js';

/**
 * @example
 * ok(await endpointView(app, record));
 */
export async function endpointView(app: FastifyInstance, record: WebhookRecord): Promise<WebhookEndpoint> {
  return (await endpointViews(app, [record]))[0];
}

/** Views of many endpoints, with their health summaries read in one call. */
export async function endpointViews(app: FastifyInstance, records: WebhookRecord[]): Promise<WebhookEndpoint[]> {
  if (records.length === 0) return [];
  const ids = records.map((record) => record.id);
  const [summaries, retries] = await Promise.all([app.store.deliveryLog.health(ids), app.store.outbox.nextRetryAt(ids)]);
  // Counted for paused endpoints only: what they keep (a running endpoint's queue is the dispatcher's).
  const pausedIds = records.flatMap((record) => (record.paused ? [record.id] : []));
  const kept = pausedIds.length ? await app.store.outbox.pendingByEndpoint(pausedIds) : new Map<number, number>();
  const now = app.clock();
  const out: WebhookEndpoint[] = new Array(records.length);
  for (let i = 0; i < records.length; i++) {
    const record = records[i];
    const { id, user_id, url, events, active, created_at, updated_at } = record;
    const paused = record.paused === true;
    // A paused endpoint's retry waits for the resume: no time is promised for it.
    const health = await healthOf(app, record, summaries.get(id) ?? null, now, paused ? null : (retries.get(id) ?? null));
    const policy = policyView(record);
    out[i] = { id, user_id, url, events, active, signature: record.signature ?? 'seed', health, created_at, updated_at, paused, paused_deliveries: paused ? (kept.get(id) ?? 0) : 0, ...policy };
    // Present only when set, so an endpoint without them answers as before.
    if (record.headers && Object.keys(record.headers).length > 0) out[i].headers = maskedHeaders(record.headers);
    if (previousSecret(record, now) !== null) out[i].previous_secret_expires_at = record.previous_secret_expires_at!;
  }
  return out;
}

async function healthOf(app: FastifyInstance, record: WebhookRecord, summary: LogHealth | null, now: number, nextRetryAt: number | null): Promise<EndpointHealth> {
  const resetAt = record.health_reset_at ?? null;
  const delays = policyOfRecord(record).retryDelaysMs;
  // A log the summary does not fit is read whole, as it always was.
  if (summary === null) return computeHealth(await app.store.deliveryLog.list(record.id), resetAt, now, delays, nextRetryAt);
  return healthFromSummary(summary, resetAt, now, delays, nextRetryAt);
}

/** The endpoint's delivery policy, the defaults filled in. */
function policyView(record: WebhookRecord): Pick<WebhookEndpoint, 'retry_schedule' | 'max_in_flight' | 'rate_limit_per_second'> {
  const policy = policyOfRecord(record);
  return { retry_schedule: policy.retryDelaysMs.map((ms) => ms / 1000), max_in_flight: policy.maxInFlight, rate_limit_per_second: policy.ratePerSecond };
}

// What happens after each logged attempt, outside the delivery worker: one daemon log line
// (warn for a failure with endpoint, event and reason; debug for a success), and the opt-in
// auto-disable (setting webhook_disable_after_failures): after that many failed deliveries in a
// row the endpoint is set inactive, a warning is logged, and its owner is told on the event
// stream (`event: endpoint`).
import type { FastifyInstance } from 'fastify';
import type { DeliveryLogEntry, WebhookRecord } from '../../store/types.js';
import { computeHealth, entryReason } from './health.js';
import { policyOfRecord } from './scheduler.js';

/** The endpoint without its secret, as notices carry it. */
export interface NoticeEndpoint {
  id: number;
  user_id: number;
  url: string;
  events: string;
  active: boolean;
}

/** A change of an endpoint the daemon made by itself, for its owner's event stream. */
export interface EndpointNotice {
  type: 'disabled';
  endpoint: NoticeEndpoint;
  /** In words, for people: why it was disabled. */
  reason: string;
  consecutive_failures: number;
  last_failure_reason: string | null;
  at: string;
}

export type NoticeListener = (notice: EndpointNotice, ownerId: number) => void;

/** The fan-out of endpoint notices to open event streams. */
export class EndpointNotices {
  readonly #listeners = new Set<NoticeListener>();

  on(listener: NoticeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(notice: EndpointNotice, ownerId: number): void {
    for (const listener of this.#listeners) {
      try {
        listener(notice, ownerId);
      } catch {
        // a stream that cannot take it is its own problem
      }
    }
  }
}

/** Endpoints being disabled now: concurrent failures must not disable (and notify) twice. */
const disabling = new Set<number>();

/**
 * Logs the attempt and applies the auto-disable; never throws (it runs after the attempt is
 * recorded, and nothing of it may hold up deliveries).
 * @example
 * dispatcher.onEntry((entry) => void reportAttempt(app, entry));
 */
export function reportAttempt(app: FastifyInstance, entry: DeliveryLogEntry): Promise<void> {
  // A success is only a debug line: nothing to do (not even a promise) when it is not written.
  if (entry.success && !logsAt(app, 'debug')) return DONE;
  return report(app, entry);
}

const DONE = Promise.resolve();

async function report(app: FastifyInstance, entry: DeliveryLogEntry): Promise<void> {
  try {
    const endpoint = await app.store.webhooks.get(entry.endpoint_id);
    const fields = {
      endpoint_id: entry.endpoint_id,
      url: endpoint?.url,
      event: entry.event,
      delivery_id: entry.delivery_id,
      attempt: entry.attempt,
      status_code: entry.status_code,
      duration_ms: entry.duration_ms,
    };
    if (entry.success) {
      app.log.debug(fields, `webhook delivered: ${entry.event} to endpoint ${entry.endpoint_id} (HTTP ${entry.status_code})`);
      return;
    }
    const reason = entryReason(entry);
    app.log.warn({ ...fields, reason }, `webhook attempt failed: ${entry.event} to endpoint ${entry.endpoint_id}: ${reason}`);
    // The delivery's last attempt (none of the endpoint's retries left): a failed delivery.
    if (endpoint && entry.attempt > policyOfRecord(endpoint).retryDelaysMs.length) await maybeDisable(app, endpoint);
  } catch (error) {
    app.log.error({ err: error, endpoint_id: entry.endpoint_id }, 'could not report a webhook attempt');
  }
}

function logsAt(app: FastifyInstance, level: string): boolean {
  const log = app.log as FastifyInstance['log'] & { isLevelEnabled?: (level: string) => boolean };
  return typeof log.isLevelEnabled !== 'function' || log.isLevelEnabled(level);
}

async function maybeDisable(app: FastifyInstance, attempted: WebhookRecord): Promise<void> {
  const limit = (await app.store.settings.get()).webhook_disable_after_failures ?? 0;
  if (!limit || disabling.has(attempted.id)) return;
  disabling.add(attempted.id);
  try {
    // Read again after the limit: a report that lags behind its attempt must count from the
    // endpoint as it is now (a health reset made before the limit was set, or a deactivation),
    // not as it was when the attempt was recorded.
    const endpoint = await app.store.webhooks.get(attempted.id);
    if (!endpoint?.active) return;
    const health = computeHealth(await app.store.deliveryLog.list(endpoint.id), endpoint.health_reset_at ?? null, app.clock(), policyOfRecord(endpoint).retryDelaysMs);
    if (health.consecutive_failures < limit) return;
    const now = new Date(app.clock()).toISOString();
    const reason = `disabled after ${health.consecutive_failures} failed deliveries in a row (webhook_disable_after_failures ${limit}); last: ${health.last_failure_reason ?? 'unknown'}`;
    // The endpoint.disabled event commits with the change (the owner's endpoints naming it; the
    // disabled one, inactive now, is not among them).
    const updated = await app.store.transaction(async (tx) => {
      const changed = await tx.webhooks.update(endpoint.id, { active: false, updated_at: now });
      if (changed) {
        const data = { endpoint_id: changed.id, url: changed.url, reason: reason.slice(0, 1000) };
        await app.events.publish({ event: 'endpoint.disabled', data, owner_id: changed.user_id }, tx);
      }
      return changed;
    });
    if (!updated) return;
    app.log.warn({ endpoint_id: endpoint.id, url: endpoint.url, consecutive_failures: health.consecutive_failures }, `webhook endpoint ${endpoint.id} ${reason}`);
    const { id, user_id, url, events, active } = updated;
    app.endpointNotices.emit(
      {
        type: 'disabled',
        endpoint: { id, user_id, url, events, active },
        reason,
        consecutive_failures: health.consecutive_failures,
        last_failure_reason: health.last_failure_reason,
        at: now,
      },
      updated.user_id,
    );
  } finally {
    disabling.delete(attempted.id);
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    endpointNotices: EndpointNotices;
  }
}

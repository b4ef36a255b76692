// The endpoint as the API shows it: everything but the secret, with its signature scheme and
// its health read from its delivery log.
import type { FastifyInstance } from 'fastify';
import type { WebhookEndpoint } from '../../../shared/api/webhooks.js';
import type { WebhookRecord } from '../../../store/types.js';
import { computeHealth } from '../../dispatcher/health.js';

/**
 * @example
 * ok(await endpointView(app, record));
 */
export async function endpointView(app: FastifyInstance, record: WebhookRecord): Promise<WebhookEndpoint> {
  const { id, user_id, url, events, active, created_at, updated_at } = record;
  const health = computeHealth(await app.store.deliveryLog.list(id), record.health_reset_at ?? null, app.clock());
  return { id, user_id, url, events, active, signature: record.signature ?? 'seed', health, created_at, updated_at };
}

/** Views of many endpoints, reading their logs a few at a time. */
export async function endpointViews(app: FastifyInstance, records: WebhookRecord[]): Promise<WebhookEndpoint[]> {
  const out: WebhookEndpoint[] = new Array(records.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < records.length; i = next++) out[i] = await endpointView(app, records[i]);
  };
  await Promise.all(Array.from({ length: Math.min(8, records.length) }, worker));
  return out;
}

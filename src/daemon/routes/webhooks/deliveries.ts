// An endpoint's delivery log (GET /webhooks/:id/deliveries) and the manual sends: test and
// redeliver queue a delivery like any other (durable, retried by the endpoint's schedule) and answer with the log
// entry of its first attempt.
import { randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { DeliveriesQuery, DeliveryEntry, RedeliverParams, TestWebhookBody } from '../../../shared/api/webhooks.js';
import type { DeliveryLogEntry, WebhookRecord } from '../../../store/types.js';
import type { PublishInput } from '../../dispatcher/bus.js';
import { DeliveryNotAttempted } from '../../dispatcher/dispatcher.js';
import { retryDelaySecondsOf } from '../../../shared/webhook-protocol.js';
import { entryReason } from '../../dispatcher/health.js';
import { assertOwnership } from '../../plugins/auth.js';
import { LogMemo } from './log-memo.js';
import { parseTime } from './times.js';
import { pageOf } from '../pages.js';

const tags = ['webhooks'];
export const DEFAULT_TEST_MESSAGE = 'This is a test webhook from panelctl';

function outcome(entry: DeliveryLogEntry): string {
  if (entry.success) return `delivered (HTTP ${entry.status_code}) in ${entry.duration_ms} ms`;
  const why = entryReason(entry);
  if (entry.next_attempt_at === null) return `attempt failed (${why}); no retry is left (the endpoint's retry_schedule)`;
  return `attempt failed (${why}); it is retried in ${retryDelaySecondsOf(entry)} s`;
}

/** An endpoint and its log's revision, as the deliveries route reads them. */
type LogReads = ReturnType<FastifyInstance['store']['webhooks']['getWithLogRevision']>;

declare module 'fastify' {
  interface FastifyRequest {
    /** The deliveries route's reads, started before the caller is confirmed (see its onRequest hook). */
    logReads: { id: number; reads: LogReads } | null;
  }
}

/** A path id as the route's schema takes it (a decimal integer from 1), else null. */
function pathId(raw: unknown): number | null {
  if (typeof raw !== 'string' || !/^[1-9][0-9]{0,15}$/.test(raw)) return null;
  const id = Number(raw);
  return Number.isSafeInteger(id) ? id : null;
}

export default async function deliveryRoutes(app: FastifyInstance) {
  // Answers kept per endpoint and query while the store's revision of the log is unchanged.
  const logs = new LogMemo();
  app.decorateRequest('logReads', null);

  /**
   * The endpoint and the log's revision, read together (one statement on PostgreSQL). Both come
   * from the store itself, not from a cache the change feed keeps, so they need not wait for the
   * feed's answer.
   */
  const readLog = (id: number): LogReads => app.store.webhooks.getWithLogRevision(id);

  /**
   * Queues a manual delivery to one endpoint, has this daemon's dispatcher claim it at once
   * (past every other endpoint's queue), and waits for its first attempt's log entry, which
   * arrives through the store's change feed whichever daemon made the attempt.
   */
  async function sendNow(endpoint: WebhookRecord, input: PublishInput, body?: string): Promise<DeliveryLogEntry> {
    const deliveryId = randomUUID();
    const first = app.dispatcher.firstAttempt(deliveryId);
    try {
      await app.events.publishTo(endpoint, input, { body, deliveryId });
    } catch (error) {
      app.dispatcher.forget(deliveryId);
      first.catch(() => undefined);
      throw error;
    }
    app.dispatcher.sendNow(deliveryId);
    try {
      return await first;
    } catch (error) {
      if (!(error instanceof DeliveryNotAttempted)) throw error;
      if (error.reason === 'endpoint gone') throw new ApiError('NOT_FOUND', `webhook ${endpoint.id} was removed before the attempt`);
      if (error.reason === 'not logged' || error.reason === 'no answer') {
        throw new ApiError('STORAGE_UNAVAILABLE', error.message, { headers: { 'retry-after': '5' } });
      }
      throw new ApiError('SHUTTING_DOWN', `the delivery was queued but not attempted: ${error.message}`);
    }
  }

  app.get<{ Params: IdParam; Querystring: DeliveriesQuery }>(
    '/webhooks/:id/deliveries',
    {
      schema: {
        tags,
        summary: "The endpoint's last 100 delivery attempts, newest first (filters: success, event, since; pages: limit, after = older than)",
        security,
        params: IdParam,
        querystring: DeliveriesQuery,
        response: { 200: EnvelopeOf(Type.Array(DeliveryEntry)), ...errorResponses(400, 401, 403, 404, 422) },
      },
      // After the global hooks: a request that has a caller (a cached one the feed is still
      // confirming, on a shared database) starts its reads now, beside that question and the
      // request limits, instead of after them. A request without one reads nothing before it is
      // authenticated; a request refused later drops what was read unseen.
      onRequest: (request, _reply, done) => {
        const id = request.principal ? pathId((request.params as { id?: unknown }).id) : null;
        if (id !== null) {
          const reads = readLog(id);
          reads.catch(() => undefined);
          request.logReads = { id, reads };
        }
        done();
      },
    },
    async (request, reply) => {
      const { id } = request.params;
      // The revision of an endpoint the caller may not read is dropped unseen; it is read
      // before `build` would run (see LogMemo.send).
      const early = request.logReads;
      const read = await (early !== null && early.id === id ? early.reads : readLog(id));
      assertOwnership(request, read?.endpoint, 'webhook', id);
      const revision = read!.logRevision;
      const { success, event, since } = request.query;
      const sinceMs = since === undefined ? undefined : parseTime('since', since);
      const events = event === undefined ? undefined : new Set(event.split(',').map((name) => name.trim()).filter(Boolean));
      const build = async () => {
        let entries = await app.store.deliveryLog.list(id);
        if (success !== undefined) entries = entries.filter((entry) => entry.success === success);
        if (events) entries = entries.filter((entry) => events.has(entry.event));
        if (sinceMs !== undefined) entries = entries.filter((entry) => Date.parse(entry.created_at) >= sinceMs);
        const { items, next } = pageOf(request, entries, request.query, 'desc');
        // Entries recorded without request_headers or reason (seeded, or older builds) get an empty
        // set and a reason read from their status or response.
        const envelope = ok(
          items.map((entry) => ({
            ...entry,
            request_headers: entry.request_headers ?? {},
            reason: entry.reason !== undefined ? entry.reason : entryReason(entry),
          })),
        );
        return { envelope, next };
      };
      // The view is the request's query string (the next page's URL is built from it too).
      return logs.send(reply, id, request.url.split('?')[1] ?? '', revision, build);
    },
  );

  app.post<{ Params: IdParam; Body: TestWebhookBody }>(
    '/webhooks/:id/test',
    {
      // The body is optional: an absent one is an empty object.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags,
        summary: 'Send a webhook.test event now (also to an inactive endpoint); answers with the first attempt',
        security,
        params: IdParam,
        body: TestWebhookBody,
        response: { 200: EnvelopeOf(DeliveryEntry), ...errorResponses(400, 401, 403, 404, 422, 503) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const endpoint = assertOwnership(request, await app.store.webhooks.get(id), 'webhook', id);
      const message = request.body.message ?? DEFAULT_TEST_MESSAGE;
      const entry = await sendNow(endpoint, { event: 'webhook.test', data: { message }, owner_id: endpoint.user_id });
      return ok(entry, `test ${outcome(entry)}`);
    },
  );

  app.post<{ Params: RedeliverParams }>(
    '/webhooks/:id/deliveries/:entry_id/redeliver',
    {
      schema: {
        tags,
        summary: "Send a logged attempt's payload again as a new delivery; answers with its first attempt",
        security,
        params: RedeliverParams,
        response: { 200: EnvelopeOf(DeliveryEntry), ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => {
      const { id, entry_id: entryId } = request.params;
      const endpoint = assertOwnership(request, await app.store.webhooks.get(id), 'webhook', id);
      const original = await app.store.deliveryLog.get(id, entryId);
      if (!original) throw new ApiError('NOT_FOUND', `delivery log entry ${entryId} of webhook ${id} not found (only the last 100 are kept)`);
      const payload = original.payload as { data?: Record<string, unknown> };
      // The same payload bytes (original timestamp included), under a new delivery id.
      const entry = await sendNow(
        endpoint,
        { event: original.event, data: payload?.data ?? {}, owner_id: endpoint.user_id },
        JSON.stringify(original.payload),
      );
      return ok(entry, `redelivery ${outcome(entry)}`);
    },
  );
}

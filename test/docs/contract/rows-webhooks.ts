// Contract rows of webhook endpoints, their delivery logs, test, redeliver and the live stream.
// Deliveries go to a real HTTPS receiver on loopback (the daemon trusts its certificate).
import { op, type Ctx, type Row } from './harness.js';

const LIST = 'webhooks';
const ONE = 'webhooks/{id}';
const LOG = 'webhooks/{id}/deliveries';
const TEST = 'webhooks/{id}/test';
const REDELIVER = 'webhooks/{id}/deliveries/{entry_id}/redeliver';
const STREAM = op('GET', 'webhooks/deliveries/stream');
const RECOVER = 'webhooks/{id}/recover';
const ROTATE = 'webhooks/{id}/rotate-secret';
const LISTEN = op('GET', 'events/listen');
const RESULTS = 'events/listen/{session}/results';

/** Opens a listen session as `as` (left open until the daemon stops) and answers its id. */
async function listenSession(ctx: Ctx, token: string): Promise<string> {
  const { Agent, request } = await import('undici');
  const response = await request(`${ctx.daemon.url}/api/v1/events/listen`, {
    headers: { authorization: `Bearer ${token}` },
    dispatcher: new Agent({ connect: { ca: ctx.daemon.ca } }),
  });
  response.body.setEncoding('utf8');
  // Read without ever leaving the stream: ending the read would end the session.
  return new Promise((resolve, reject) => {
    let text = '';
    response.body.on('data', (chunk: string) => {
      text += chunk;
      const match = /"session_id":"([0-9a-f-]{36})"/.exec(text);
      if (match) resolve(match[1]);
    });
    response.body.on('error', reject);
    response.body.on('end', () => reject(new Error('no session event')));
  });
}
const session = (ctx: Ctx) => ({ session: ctx.scratch.listenSession as string });
const openSession = async (ctx: Ctx) => {
  ctx.scratch.listenSession ??= await listenSession(ctx, ctx.tokens.admin);
};
const UNKNOWN_UUID = '00000000-0000-4000-8000-000000000000';

const create = (ctx: Ctx, extra: Record<string, unknown> = {}) => ({ url: ctx.receiverUrl, secret: 'contract-secret', events: 'site.created', ...extra });
const own = (ctx: Ctx) => ({ id: ctx.ownWebhookId });
const other = (ctx: Ctx) => ({ id: ctx.otherWebhookId });

export const WEBHOOK_ROWS: Row[] = [
  // endpoints
  { op: op('POST', LIST), status: 201, case: 'an https endpoint', as: 'customer', body: (ctx) => create(ctx) },
  { op: op('POST', LIST), status: 201, case: 'with an API key in X-API-Key', as: 'adminKey', body: (ctx) => create(ctx, { events: '*', active: false }) },
  { op: op('POST', LIST), status: 400, case: 'secret missing', as: 'customer', error: 'bad request', body: (ctx) => ({ url: ctx.receiverUrl, events: '*' }) },
  { op: op('POST', LIST), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: (ctx) => create(ctx) },
  { op: op('POST', LIST), status: 422, case: 'http: URL', as: 'customer', error: 'validation failed', body: (ctx) => create(ctx, { url: 'http://hooks.example.com/' }) },
  { op: op('POST', LIST), status: 422, case: 'unknown event', as: 'customer', error: 'validation failed', body: (ctx) => create(ctx, { events: 'site.exploded' }) },
  { op: op('GET', LIST), status: 200, case: "the caller's endpoints", as: 'customer' },
  { op: op('GET', LIST), status: 200, case: "admin: everyone's", as: 'admin', query: { all: 'true' } },
  { op: op('GET', LIST), status: 422, case: 'limit out of range', as: 'customer', error: 'validation failed', query: { limit: 0 } },
  { op: op('GET', LIST), status: 400, case: 'unknown query parameter', as: 'customer', error: 'bad request', query: { everyone: 'true' } },
  { op: op('GET', LIST), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', LIST), status: 403, case: "customer asking for everyone's", as: 'customer', error: 'forbidden', query: { all: 'true' } },
  { op: op('GET', LIST), status: 400, case: 'user_id 0', as: 'admin', error: 'bad request', query: { user_id: 0 } },
  { op: op('GET', ONE), status: 200, case: 'own endpoint', as: 'customerKey', params: own },
  { op: op('GET', ONE), status: 400, case: 'id not a number', as: 'customer', error: 'bad request', params: { id: 'abc' } },
  { op: op('GET', ONE), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: own },
  { op: op('GET', ONE), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: other },
  { op: op('GET', ONE), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 } },
  { op: op('GET', ONE), status: 400, case: 'id 0', as: 'customer', error: 'bad request', params: { id: 0 } },
  { op: op('PUT', ONE), status: 200, case: 'partial update: events only', as: 'customer', params: own, body: { events: 'site.created, site.deleted' } },
  { op: op('PUT', ONE), status: 400, case: 'nothing to change', as: 'customer', error: 'bad request', params: own, body: {} },
  { op: op('PUT', ONE), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: own, body: { active: true } },
  { op: op('PUT', ONE), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: other, body: { active: false } },
  { op: op('PUT', ONE), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 }, body: { active: false } },
  { op: op('PUT', ONE), status: 422, case: 'http: URL', as: 'customer', error: 'validation failed', params: own, body: { url: 'http://hooks.example.com/' } },
  {
    op: op('DELETE', ONE), status: 200, case: 'own endpoint', as: 'customer',
    params: async (ctx) => {
      const created = await ctx.daemon.request('POST', '/webhooks', { token: ctx.tokens.customer, body: create(ctx) });
      return { id: created.body.data.id };
    },
  },
  { op: op('DELETE', ONE), status: 400, case: 'id not a number', as: 'customer', error: 'bad request', params: { id: 'abc' } },
  { op: op('DELETE', ONE), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: other },
  { op: op('DELETE', ONE), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: other },
  { op: op('DELETE', ONE), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 } },
  { op: op('DELETE', ONE), status: 400, case: 'id 0', as: 'customer', error: 'bad request', params: { id: 0 } },

  // test deliveries and the log
  { op: op('POST', TEST), status: 200, case: 'delivered to the receiver', as: 'customerKey', params: own, body: { message: 'contract test' } },
  { op: op('POST', TEST), status: 400, case: 'message of the wrong type', as: 'customer', error: 'bad request', params: own, body: { message: 5 } },
  { op: op('POST', TEST), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: own },
  { op: op('POST', TEST), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: other },
  { op: op('POST', TEST), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 } },
  { op: op('POST', TEST), status: 422, case: 'empty message', as: 'customer', error: 'validation failed', params: own, body: { message: '' } },
  { op: op('GET', LOG), status: 200, case: 'newest first', as: 'customer', params: own },
  { op: op('GET', LOG), status: 200, case: 'failed attempts only', as: 'customer', params: own, query: { success: 'false', limit: 5 } },
  { op: op('GET', LOG), status: 400, case: 'id not a number', as: 'customer', error: 'bad request', params: { id: 'abc' } },
  { op: op('GET', LOG), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: own },
  { op: op('GET', LOG), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: other },
  { op: op('GET', LOG), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 } },
  { op: op('GET', LOG), status: 422, case: 'limit 0', as: 'customer', error: 'validation failed', params: own, query: { limit: 0 } },
  { op: op('POST', REDELIVER), status: 200, case: 'a logged attempt', as: 'customer', params: (ctx) => ({ id: ctx.ownWebhookId, entry_id: ctx.ownEntryId }) },
  { op: op('POST', REDELIVER), status: 400, case: 'entry id not a number', as: 'customer', error: 'bad request', params: (ctx) => ({ id: ctx.ownWebhookId, entry_id: 'abc' }) },
  { op: op('POST', REDELIVER), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: (ctx) => ({ id: ctx.ownWebhookId, entry_id: ctx.ownEntryId }) },
  { op: op('POST', REDELIVER), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.otherWebhookId, entry_id: ctx.ownEntryId }) },
  { op: op('POST', REDELIVER), status: 404, case: 'unknown entry', as: 'customer', error: 'not found', params: (ctx) => ({ id: ctx.ownWebhookId, entry_id: 999999 }) },
  { op: op('POST', REDELIVER), status: 400, case: 'entry id 0', as: 'customer', error: 'bad request', params: (ctx) => ({ id: ctx.ownWebhookId, entry_id: 0 }) },

  // recovery
  { op: op('POST', RECOVER), status: 200, case: 'failed deliveries in the last hour', as: 'customer', params: own, body: () => ({ since: new Date(Date.now() - 3_600_000).toISOString() }) },
  { op: op('POST', RECOVER), status: 400, case: 'since missing', as: 'customer', error: 'bad request', params: own, body: {} },
  { op: op('POST', RECOVER), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: own, body: { since: '2030-01-01T00:00:00Z' } },
  { op: op('POST', RECOVER), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: other, body: { since: '2030-01-01T00:00:00Z' } },
  { op: op('POST', RECOVER), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 }, body: { since: '2030-01-01T00:00:00Z' } },
  {
    op: op('POST', ROTATE), status: 200, case: 'a generated secret, a day of overlap', as: 'customer',
    params: async (ctx) => {
      const created = await ctx.daemon.request('POST', '/webhooks', { token: ctx.tokens.customer, body: create(ctx) });
      return { id: created.body.data.id };
    },
    body: {},
  },
  { op: op('POST', ROTATE), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: own, body: {} },
  { op: op('POST', ROTATE), status: 403, case: "another customer's", as: 'customer', error: 'forbidden', params: other, body: {} },
  { op: op('POST', ROTATE), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 }, body: {} },
  { op: op('POST', ROTATE), status: 422, case: 'overlap over 7 days', as: 'customer', error: 'validation failed', params: own, body: { overlap_seconds: 604_801 } },
  { op: op('POST', RECOVER), status: 422, case: 'until before since', as: 'customer', error: 'validation failed', params: own, body: { since: '2030-01-02T00:00:00Z', until: '2030-01-01T00:00:00Z' } },

  // listen sessions
  { op: LISTEN, status: 200, case: 'a session stream', as: 'customer', stream: true, query: { events: 'site.created' } },
  { op: LISTEN, status: 400, case: 'unknown query parameter', as: 'customer', error: 'bad request', stream: true, query: { everything: 'yes' } },
  { op: LISTEN, status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', stream: true },
  { op: LISTEN, status: 422, case: 'unknown event', as: 'customer', error: 'validation failed', stream: true, query: { events: 'site.exploded' } },
  {
    op: op('POST', RESULTS), status: 200, case: 'a report nothing waits for', as: 'admin', prepare: openSession, params: session,
    body: { delivery_id: UNKNOWN_UUID, status_code: 200, duration_ms: 3 },
  },
  { op: op('POST', RESULTS), status: 400, case: 'status missing', as: 'admin', error: 'bad request', prepare: openSession, params: session, body: { delivery_id: UNKNOWN_UUID, duration_ms: 3 } },
  { op: op('POST', RESULTS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: { session: UNKNOWN_UUID }, body: { delivery_id: UNKNOWN_UUID, status_code: 200, duration_ms: 3 } },
  { op: op('POST', RESULTS), status: 403, case: "another user's session", as: 'customer', error: 'forbidden', prepare: openSession, params: session, body: { delivery_id: UNKNOWN_UUID, status_code: 200, duration_ms: 3 } },
  { op: op('POST', RESULTS), status: 404, case: 'no such session', as: 'admin', error: 'not found', params: { session: UNKNOWN_UUID }, body: { delivery_id: UNKNOWN_UUID, status_code: 200, duration_ms: 3 } },
  { op: op('POST', RESULTS), status: 422, case: 'session not a uuid', as: 'admin', error: 'validation failed', params: { session: 'abc' }, body: { delivery_id: UNKNOWN_UUID, status_code: 200, duration_ms: 3 } },

  // the live stream
  { op: STREAM, status: 200, case: 'an event stream', as: 'customer', stream: true },
  { op: STREAM, status: 200, case: "one endpoint's entries, with an API key", as: 'customerKey', stream: true, query: (ctx) => ({ endpoint_id: ctx.ownWebhookId }) },
  { op: STREAM, status: 400, case: 'endpoint_id not a number', as: 'customer', error: 'bad request', stream: true, query: { endpoint_id: 'abc' } },
  { op: STREAM, status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', stream: true },
  { op: STREAM, status: 403, case: "another customer's endpoint", as: 'customer', error: 'forbidden', stream: true, query: (ctx) => ({ endpoint_id: ctx.otherWebhookId }) },
  { op: STREAM, status: 404, case: 'unknown endpoint', as: 'customer', error: 'not found', stream: true, query: { endpoint_id: 999999 } },
  { op: STREAM, status: 400, case: 'endpoint_id 0', as: 'customer', error: 'bad request', stream: true, query: { endpoint_id: 0 } },
];

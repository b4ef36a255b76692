// `panelctl listen`'s side of the daemon. GET /events/listen opens a session: a real endpoint
// record (url `listen:<session>`, the caller's, active, a fresh secret) whose deliveries the
// dispatcher hands to this stream (`event: webhook`, the exact headers and body) instead of
// opening a connection; the CLI makes the request and reports the outcome to
// POST /events/listen/:session/results, and the attempt is logged like any other. The
// endpoint is removed when the stream ends; ones left by a daemon that died are removed at start.
// A session ends when its credential is revoked or its caller's role changes (auth/caller-watch.ts).
import { randomBytes, randomUUID } from 'node:crypto';
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { normaliseEventList } from '../../../shared/events.js';
import { watchCaller } from '../../auth/caller-watch.js';
import { LISTEN_SCHEME, listenUrl } from '../../dispatcher/listen-hub.js';
import { principalOf } from '../../plugins/auth.js';
import { openEventStream } from '../event-stream.js';
import { KEEPALIVE_MS } from '../webhooks/stream.js';

const ListenQuery = Type.Object(
  { events: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: '`*` (default) or comma-separated event names' })) },
  { additionalProperties: false },
);
type ListenQuery = Static<typeof ListenQuery>;

const SessionParams = Type.Object({ session: Type.String({ format: 'uuid', description: 'The session id of the `session` event' }) });
type SessionParams = Static<typeof SessionParams>;

const ListenResultBody = Type.Object(
  {
    delivery_id: Type.String({ format: 'uuid' }),
    status_code: Type.Integer({ minimum: 0, maximum: 999, description: "The receiver's status; 0 when it gave no answer" }),
    duration_ms: Type.Integer({ minimum: 0 }),
    response: Type.Optional(Type.String({ maxLength: 65_536, description: "The start of the answer's body" })),
    error: Type.Optional(Type.String({ maxLength: 1000, description: 'Why no answer came' })),
  },
  { additionalProperties: false },
);
type ListenResultBody = Static<typeof ListenResultBody>;

/** Endpoints of listen sessions: a daemon that stopped hard leaves them behind. */
async function removeStaleSessions(app: FastifyInstance): Promise<void> {
  const stale = (await app.store.webhooks.list()).filter((w) => w.url.startsWith(LISTEN_SCHEME));
  for (const endpoint of stale) await removeEndpoint(app, endpoint.id);
}

/** The session's endpoint, with its pending deliveries and log (the store's cascade). */
async function removeEndpoint(app: FastifyInstance, id: number): Promise<void> {
  await app.store.webhooks.remove(id);
}

export default async function listenRoutes(app: FastifyInstance) {
  const open = new Set<() => Promise<void>>();
  app.addHook('onReady', async () => {
    await removeStaleSessions(app).catch((error) => app.log.error({ err: error }, 'could not remove the endpoints of old listen sessions'));
  });
  app.addHook('preClose', async () => {
    await Promise.allSettled([...open].map((end) => end()));
  });

  app.get<{ Querystring: ListenQuery }>(
    '/events/listen',
    {
      schema: {
        tags: ['events'],
        summary: 'Receive your events over this stream, exactly as an endpoint would (`panelctl listen`)',
        description:
          'Opens a listen session: a temporary endpoint (url `listen:<session>`, yours, active, a fresh secret) that gets ' +
          'the events you may see, queued, signed, retried and logged like any endpoint. The stream starts with ' +
          '`event: session` (`{ session_id, endpoint_id, secret, events }`); each attempt comes as `event: webhook` ' +
          '(`{ delivery_id, event, headers, body }`), whose outcome the client reports to POST /events/listen/{session}/results ' +
          'within 10 s. The endpoint is removed when the stream ends.',
        security,
        querystring: ListenQuery,
        response: {
          200: {
            description: 'text/event-stream: `session`, then one `webhook` event per attempt; a `: keepalive` comment every 15 s',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          ...errorResponses(400, 401, 422),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const events = normaliseEventList(request.query.events ?? '*');
      if ('error' in events) throw new ApiError('VALIDATION_FAILED', events.error);
      const sessionId = randomUUID();
      const secret = randomBytes(32).toString('hex');
      const now = new Date(app.clock()).toISOString();
      const endpoint = await app.store.webhooks.insert({
        user_id: principal.userId,
        url: listenUrl(sessionId),
        secret,
        events: events.value,
        active: true,
        signature: 'seed',
        created_at: now,
        updated_at: now,
      });

      const res = openEventStream(reply);
      let ending: Promise<void> | null = null;
      const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
      keepalive.unref();
      const end = (): Promise<void> =>
        (ending ??= (async () => {
          clearInterval(keepalive);
          watch.stop();
          app.listenHub.close(sessionId);
          if (!res.writableEnded) res.end();
          await removeEndpoint(app, endpoint.id).catch((error) =>
            app.log.error({ err: error, endpoint_id: endpoint.id }, 'could not remove the endpoint of a listen session'),
          );
          open.delete(end);
        })());
      open.add(end);
      const watch = watchCaller(app, request, (reason) => {
        if (!res.writableEnded) res.write(`: ended: ${reason.replace(/[\r\n]+/g, ' ')}\n\n`);
        void end();
      });
      app.listenHub.open({
        id: sessionId,
        endpointId: endpoint.id,
        userId: principal.userId,
        push: (frame) =>
          watch.pass(() => {
            if (!res.writableEnded) res.write(frame);
          }),
      });
      res.write(`event: session\ndata: ${JSON.stringify({ session_id: sessionId, endpoint_id: endpoint.id, secret, events: events.value })}\n\n`);
      res.on('close', () => void end());
      res.on('error', () => void end());
    },
  );

  app.post<{ Params: SessionParams; Body: ListenResultBody }>(
    '/events/listen/:session/results',
    {
      schema: {
        tags: ['events'],
        summary: "Report how a listen session's forwarded attempt went (status, duration, answer)",
        security,
        params: SessionParams,
        body: ListenResultBody,
        response: { 200: EnvelopeOf(Type.Object({ accepted: Type.Boolean() })), ...errorResponses(400, 401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { session } = request.params;
      const open = app.listenHub.get(session);
      if (!open) throw new ApiError('NOT_FOUND', `listen session ${session} not found (it ended)`);
      if (open.userId !== principalOf(request).userId) throw new ApiError('FORBIDDEN', `listen session ${session} is another user's`);
      const accepted = app.listenHub.report(session, request.body);
      return ok({ accepted }, accepted ? 'attempt recorded' : 'no attempt of that delivery is waiting (it timed out)');
    },
  );
}

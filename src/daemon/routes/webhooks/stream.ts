// GET /webhooks/deliveries/stream: every new delivery log entry of the caller's endpoints (an
// admin's: all) as Server-Sent Events, `event: delivery`, `id: <entry id>`, `data: <entry>`.
// Entries come from the store's change feed, so attempts made by any daemon of the store appear;
// a reconnect with Last-Event-ID first gets the entries it missed from the store's log. Changes
// the daemon made to an endpoint by itself (the auto-disable) come as `event: endpoint`, without
// an id. Streams end when the daemon closes, so they never hold a shutdown open, and when their
// credential is revoked or their caller's role changes (see auth/caller-watch.ts).
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { SECURITY as security, errorResponses } from '../../../shared/envelope.js';
import { StreamQuery } from '../../../shared/api/webhooks.js';
import type { DeliveryLogEntry } from '../../../store/types.js';
import type { EndpointNotice } from '../../dispatcher/attempt-report.js';
import { watchCaller } from '../../auth/caller-watch.js';
import { assertOwnership, principalOf } from '../../plugins/auth.js';
import { openEventStream } from '../event-stream.js';

export const KEEPALIVE_MS = 15_000;
/** A client this far behind is cut off rather than buffered for without bound. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

export function sseFrame(entry: DeliveryLogEntry): string {
  return `event: delivery\nid: ${entry.id}\ndata: ${JSON.stringify(entry)}\n\n`;
}

/** A notice carries no id: Last-Event-ID stays the last delivery entry seen. */
export function noticeFrame(notice: EndpointNotice): string {
  return `event: endpoint\ndata: ${JSON.stringify(notice)}\n\n`;
}

export default async function streamRoutes(app: FastifyInstance) {
  const open = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of open) end();
  });

  app.get<{ Querystring: StreamQuery }>(
    '/webhooks/deliveries/stream',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Live delivery log entries as Server-Sent Events (`event: delivery`, `id`, `data` the entry JSON; `event: endpoint` when the daemon disabled an endpoint)',
        security,
        querystring: StreamQuery,
        response: {
          200: {
            description:
              'text/event-stream: one `delivery` event per new attempt; an `endpoint` event (`{ type: "disabled", endpoint, reason, ' +
              'consecutive_failures, last_failure_reason, at }`) when an endpoint was set inactive after failing; a `: keepalive` comment every 15 s',
            content: { 'text/event-stream': { schema: Type.String() } },
          },
          ...errorResponses(400, 401, 403, 404),
        },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const endpointId = request.query.endpoint_id;
      if (endpointId !== undefined) assertOwnership(request, await app.store.webhooks.get(endpointId), 'webhook', endpointId);
      const seesAll = principal.role === 'admin';
      const wanted = (entry: DeliveryLogEntry, ownerId: number | null) =>
        endpointId !== undefined ? entry.endpoint_id === endpointId : seesAll || ownerId === principal.userId;

      const res = openEventStream(reply);
      let ended = false;
      let unsubscribe = () => {};
      let keepalive: NodeJS.Timeout | undefined;
      const end = () => {
        if (ended) return;
        ended = true;
        clearInterval(keepalive);
        unsubscribe();
        watch.stop();
        open.delete(end);
        res.end();
      };
      // Why, as an SSE comment: clients that do not look for it skip it, and their reconnect gets the 401.
      const watch = watchCaller(app, request, (reason) => {
        if (!ended) res.write(`: ended: ${reason.replace(/[\r\n]+/g, ' ')}\n\n`);
        end();
      });
      const write = (text: string) => {
        if (ended) return;
        res.write(text);
        if (res.writableLength > MAX_BUFFERED_BYTES) end();
      };
      const lastEventId = Number(request.headers['last-event-id']);
      // Live entries that arrive while the missed ones are read wait, so the order holds and
      // none is sent twice.
      const send = (entry: DeliveryLogEntry, ownerId: number | null) => {
        if (wanted(entry, ownerId)) watch.pass(() => write(sseFrame(entry)));
      };
      let backlog: Array<{ entry: DeliveryLogEntry; ownerId: number | null }> | null = null;
      const unsubscribeEntries = app.dispatcher.onEntry((entry, ownerId) => {
        if (backlog) backlog.push({ entry, ownerId });
        else send(entry, ownerId);
      });
      const unsubscribeNotices = app.endpointNotices.on((notice, ownerId) => {
        if (endpointId !== undefined ? notice.endpoint.id === endpointId : seesAll || ownerId === principal.userId) watch.pass(() => write(noticeFrame(notice)));
      });
      unsubscribe = () => {
        unsubscribeEntries();
        unsubscribeNotices();
      };
      if (Number.isSafeInteger(lastEventId) && lastEventId > 0) {
        backlog = [];
        const replayed = new Set<number>();
        try {
          for (const { entry, ownerId } of await app.dispatcher.entriesSince(lastEventId)) {
            replayed.add(entry.id);
            send(entry, ownerId);
          }
        } catch (error) {
          request.log.error({ err: error }, 'missed delivery log entries could not be read');
        }
        for (const { entry, ownerId } of backlog) if (entry.id > lastEventId && !replayed.has(entry.id)) send(entry, ownerId);
        backlog = null;
      }
      keepalive = setInterval(() => write(': keepalive\n\n'), KEEPALIVE_MS);
      keepalive.unref();
      if (ended) return end();
      open.add(end);
      res.on('close', end);
      res.on('error', end);
    },
  );
}

// Request ids: every answer carries `X-Request-Id`, every log line of the request carries it as
// `req_id`, and a 5xx envelope names it in `message`, so a user can quote it and an operator
// can find the request's lines. A client's own id (1–128 characters of [A-Za-z0-9._:-]) is
// kept, so one id follows a request through a proxy; anything else is replaced.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';
const VALID_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Fastify's `genReqId`: the client's valid `X-Request-Id`, else a new UUID.
 * @example
 * requestId({ headers: { 'x-request-id': 'edge-42' } } as IncomingMessage); // 'edge-42'
 */
export function requestId(req: Pick<IncomingMessage, 'headers'>): string {
  const sent = req.headers[REQUEST_ID_HEADER];
  return typeof sent === 'string' && VALID_ID.test(sent) ? sent : randomUUID();
}

/** A 5xx envelope's message with the request id appended; anything else unchanged. */
export function withRequestId(payload: string, id: string): string {
  try {
    const envelope = JSON.parse(payload) as { data?: unknown; error?: unknown; message?: unknown };
    if (!envelope || typeof envelope !== 'object' || typeof envelope.message !== 'string' || !('error' in envelope)) return payload;
    envelope.message = `${envelope.message} (request id ${id})`;
    return JSON.stringify(envelope);
  } catch {
    return payload;
  }
}

export default fp(
  async function requestIds(app: FastifyInstance) {
    // The header is put on the answer by the errors plugin's onRequest hook, the first of every
    // request (one hook less per request), so answers refused by any hook carry the id too.
    // Only a 5xx pays for the rewrite; its message is the daemon's own (5xx details are never leaked).
    app.addHook('onSend', (request, reply, payload, done) => {
      if (reply.statusCode < 500 || typeof payload !== 'string') return done(null, payload);
      done(null, withRequestId(payload, request.id));
    });
  },
  { name: 'request-id' },
);

// The start of a Server-Sent Events answer, shared by the delivery stream and `listen`.
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/**
 * Takes the response over from fastify and sends the event-stream head and a first comment, so
 * a client knows at once that the stream is open. Headers hooks already set (the limiter's
 * X-RateLimit-*) go out too: hijack bypasses reply.send. Proxies are asked not to buffer.
 */
export function openEventStream(reply: FastifyReply): ServerResponse {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...(reply.getHeaders() as OutgoingHttpHeaders),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': connected\n\n');
  return res;
}

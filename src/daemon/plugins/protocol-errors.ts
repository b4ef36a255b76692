// Errors raised before a request reaches routing, answered with the envelope like every other
// error: what node's HTTP parser refuses (a header with a control character, a bad or doubled
// Content-Length, headers over the size limit, a request that never completed) arrives as
// `clientError` on the socket, where only raw bytes can answer; what fastify's router refuses
// (a URL with broken percent-encoding, an over-long path parameter) arrives as a frameworkError
// with a reply. Both are fastify constructor options, so they live here and not in the plugin.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { API_ERRORS, type ApiErrorCode } from '../../shared/errors.js';

/** node's default `maxHeaderSize`: the request line and headers together. */
export const MAX_HEADER_BYTES = 16 * 1024;

interface ParserError extends Error {
  code?: string;
  /** llhttp's own words, e.g. "Transfer-Encoding can't be present with Content-Length". */
  reason?: string;
}

/** Status, registry code and message for a parser error of node's HTTP server. */
export function describeClientError(error: ParserError): { code: ApiErrorCode; message: string } {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'HEADERS_TOO_LARGE', message: `the request line and headers exceed ${MAX_HEADER_BYTES / 1024} KiB` };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { code: 'REQUEST_TIMEOUT', message: 'the request was not received completely in time' };
    case 'HPE_INVALID_HEADER_TOKEN':
      return {
        code: 'BAD_REQUEST',
        message: /value/i.test(error.reason ?? '')
          ? 'a header value contains a character not allowed in HTTP (a control character)'
          : 'a header name contains a character not allowed in HTTP',
      };
    case 'HPE_INVALID_CONTENT_LENGTH':
      return { code: 'BAD_REQUEST', message: 'Content-Length is not a valid decimal number' };
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { code: 'BAD_REQUEST', message: 'Content-Length is sent more than once, or together with Transfer-Encoding' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return {
        code: 'BAD_REQUEST',
        message: /Content-Length/i.test(error.reason ?? '')
          ? 'Content-Length and Transfer-Encoding must not be sent together'
          : 'Transfer-Encoding is not valid: only chunked, as the last coding, is accepted',
      };
    case 'HPE_INVALID_CHUNK_SIZE':
      return { code: 'BAD_REQUEST', message: 'the chunked request body is malformed' };
    case 'HPE_INVALID_METHOD':
      return { code: 'BAD_REQUEST', message: 'the request method is not a known HTTP method' };
    case 'HPE_INVALID_URL':
      return { code: 'BAD_REQUEST', message: 'the request target is not a valid URL path' };
    case 'HPE_INVALID_VERSION':
      return { code: 'BAD_REQUEST', message: 'the HTTP version is not valid; send HTTP/1.1' };
    default:
      return { code: 'BAD_REQUEST', message: `the request could not be parsed as HTTP${error.code ? ` (${error.code})` : ''}` };
  }
}

/**
 * The raw HTTP/1.1 answer to an unparseable request: the envelope, then the connection closes.
 * `requestId`: its X-Request-Id (the request's own cannot be read: it was not parsed).
 */
export function rawErrorResponse(code: ApiErrorCode, message: string, requestId?: string): string {
  const { status, error } = API_ERRORS[code];
  const body = JSON.stringify({ data: null, error, message });
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `Date: ${new Date().toUTCString()}\r\n` +
    (requestId ? `X-Request-Id: ${requestId}\r\n` : '') +
    'Connection: close\r\n' +
    '\r\n' +
    body
  );
}

const answered = new WeakSet<Socket>();

/**
 * fastify's `clientErrorHandler`. The parser cannot go on after such an error, so the
 * connection closes. An answer is written only while the connection still allows one: the
 * socket is writable and no response of an earlier request on it has begun (writing then would
 * corrupt that response for the client).
 */
export function clientErrorHandler(error: ParserError, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed || answered.has(socket)) return;
  // A TLS handshake that failed or timed out (https passes those on as client errors): no HTTP
  // can be spoken on it, an answer would only wait for a handshake that never comes.
  if (error.code && /^ERR_(TLS|SSL)_/.test(error.code)) {
    socket.destroy();
    return;
  }
  answered.add(socket);
  // Writes after the end (the peer keeps sending) must not become an uncaught error.
  socket.on('error', () => undefined);
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const { code, message } = describeClientError(error);
  // end() flushes the answer before closing (destroy() right after write() can drop it on TLS);
  // the timer closes a connection whose peer never reads.
  const timer = setTimeout(() => socket.destroy(), 5000);
  timer.unref();
  socket.end(rawErrorResponse(code, message, randomUUID()), () => {
    clearTimeout(timer);
    socket.destroy();
  });
}

/** fastify's `frameworkErrors`: the router refused the URL before any route or hook ran. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const path = request.raw.url?.split('?')[0] ?? '';
  let code: ApiErrorCode = 'BAD_REQUEST';
  let message: string;
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      message = `the URL path ${JSON.stringify(path)} is not valid: a %-escape is incomplete or does not encode UTF-8`;
      break;
    case 'FST_ERR_MAX_PARAM_LENGTH':
      message = 'a path parameter is longer than 100 characters';
      break;
    default:
      request.log.error({ err: error }, 'router error');
      code = 'INTERNAL';
      message = 'internal server error';
  }
  const { status, error: text } = API_ERRORS[code];
  if (status >= 500) message = `${message} (request id ${request.id})`;
  // No hook runs for these: the request id header is set here.
  void reply.header('x-request-id', request.id).code(status).type('application/json; charset=utf-8').send(JSON.stringify({ data: null, error: text, message }));
}

// One error handler and one not-found handler: every answer, 404, 405 and 500 included, is the
// envelope. Messages of 5xx errors are never leaked; they are logged with the request id.
// Errors raised before routing are answered in protocol-errors.ts.
import fp from 'fastify-plugin';
import type { FastifyError, FastifyInstance } from 'fastify';
import { API_ERRORS, ApiError, type ApiErrorCode } from '../../shared/errors.js';
import { StoreConflictError, StoreUnavailableError } from '../../store/store.js';
import { UnavailableLog } from '../unavailable-log.js';
import { REQUEST_ID_HEADER, withRequestId } from './request-id.js';
import { describeValidation, nulPath, type ValidationIssue } from './validation.js';

function fastifyCode(error: FastifyError): ApiErrorCode | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'PAYLOAD_TOO_LARGE';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'UNSUPPORTED_MEDIA_TYPE';
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return 'BAD_REQUEST';
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return 'INVALID_JSON';
    default:
      break;
  }
  if (error instanceof SyntaxError || /JSON|prototype/i.test(error.message ?? '')) {
    if (error.statusCode === 400) return 'INVALID_JSON';
  }
  return null;
}

/** Methods in the order an `Allow` header lists them. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'TRACE'];

/**
 * The methods each known path answers, to tell "no such path" (404) from "no such method on
 * this path" (405). Route URLs become patterns: `:param` one segment, `*` the rest.
 */
export class MethodTable {
  readonly #routes = new Map<string, Set<string>>();
  #compiled: Array<{ pattern: RegExp; methods: Set<string> }> | null = null;

  add(url: string, methods: string[]): void {
    const known = this.#routes.get(url) ?? new Set<string>();
    for (const method of methods) known.add(method.toUpperCase());
    this.#routes.set(url, known);
    this.#compiled = null;
  }

  /** The methods of every route whose URL matches `path`, in `Allow` order; empty when none. */
  allowed(path: string): string[] {
    this.#compiled ??= [...this.#routes].map(([url, methods]) => ({ pattern: toPattern(url), methods }));
    const methods = new Set<string>();
    for (const route of this.#compiled) if (route.pattern.test(path)) for (const m of route.methods) methods.add(m);
    const rank = (m: string) => (METHOD_ORDER.includes(m) ? METHOD_ORDER.indexOf(m) : METHOD_ORDER.length);
    return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  }
}

function toPattern(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * True when `value` holds no NUL for certain without a walk: absent, a scalar, a string without
 * one, or an object of such strings and scalars (the usual path parameters and query). False sends
 * it to nulPath, which walks anything nested and names where a NUL is.
 */
function flatWithoutNul(value: unknown): boolean {
  if (typeof value === 'string') return !value.includes('\0');
  if (value === null || typeof value !== 'object') return true;
  if (ArrayBuffer.isView(value)) return true;
  for (const key in value) {
    if (!Object.hasOwn(value, key)) return false;
    const field = (value as Record<string, unknown>)[key];
    if (typeof field === 'string') {
      if (field.includes('\0')) return false;
    } else if (field !== null && typeof field === 'object') return false;
  }
  return true;
}

export default fp(
  async function errors(app: FastifyInstance) {
    const methods = new MethodTable();
    // A store that is down fails every request: one line per interval, not a stack per request.
    const unavailable = new UnavailableLog();
    app.addHook('onRoute', (route) => methods.add(route.url, [route.method].flat()));

    // The first onRequest hook (see app.ts). It puts the request id on the answer (see
    // plugins/request-id.ts), so every answer carries it, this hook's refusal and later hooks'
    // too; one hook rather than one per concern, as every request runs it.
    // HTTP/1.1 requires Host. node's own check answers an empty 400; it is turned off
    // (requireHostHeader: false, see app.ts) so the refusal is the envelope, before any other hook.
    app.addHook('onRequest', (request, reply, done) => {
      reply.header(REQUEST_ID_HEADER, request.id);
      const raw = request.raw;
      if (!raw.headers.host && raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1) {
        reply.header('connection', 'close');
        return done(new ApiError('BAD_REQUEST', 'the Host header is required in HTTP/1.1'));
      }
      done();
    });

    // A NUL anywhere in the path, the query or the body is a 422 naming the field, once the
    // route's schema passed them (an id holding one stays the schema's 400; see nulPath).
    app.addHook('preHandler', (request, reply, done) => {
      // Most requests hold flat, clean parts: those are passed without walking them.
      if (flatWithoutNul(request.params) && flatWithoutNul(request.query) && flatWithoutNul(request.body)) return done();
      const parts: [string, unknown][] = [['path parameter ', request.params], ['query parameter ', request.query], ['', request.body]];
      for (const [where, value] of parts) {
        const field = nulPath(value);
        if (field !== null) return done(new ApiError('VALIDATION_FAILED', `${where}${field || 'body'}: must not contain the NUL character (U+0000)`));
      }
      done();
    });

    app.setErrorHandler((error: FastifyError | ApiError | Error, request, reply) => {
      if (error instanceof ApiError) {
        reply.headers(error.headers);
        const message = error.statusCode >= 500 ? withRequestId(error.message, request.id) : error.message;
        return reply.code(error.statusCode).send({ data: error.data, error: error.error, message });
      }
      const fe = error as FastifyError & { validation?: ValidationIssue[]; validationContext?: string };
      if (fe.validation) {
        const { status, message } = describeValidation(fe.validation, fe.validationContext);
        const code: ApiErrorCode = status === 400 ? 'BAD_REQUEST' : 'VALIDATION_FAILED';
        return reply.code(status).send({ data: null, error: API_ERRORS[code].error, message });
      }
      // Routes map the conflicts they expect to their own messages; one that reaches here is
      // still a duplicate, and the store's message names it without internals.
      if (error instanceof StoreConflictError) {
        return reply.code(409).send({ data: null, error: API_ERRORS.CONFLICT.error, message: error.message });
      }
      if (error instanceof StoreUnavailableError) {
        unavailable.note(error, 'the store is unavailable: requests are answered 503', (details, message) => request.log.warn(details, message));
        return reply.code(503).header('Retry-After', '5').send({
          data: null,
          error: API_ERRORS.STORAGE_UNAVAILABLE.error,
          message: withRequestId('the store is unavailable; nothing was changed. Try again later.', request.id),
        });
      }
      const known = fastifyCode(fe);
      if (known) {
        const { status, error: text } = API_ERRORS[known];
        const message =
          known === 'PAYLOAD_TOO_LARGE'
            ? 'request body is larger than the 1 MiB limit'
            : known === 'INVALID_JSON'
              ? 'request body is not valid JSON'
              : fe.message;
        return reply.code(status).send({ data: null, error: text, message: status >= 500 ? withRequestId(message, request.id) : message });
      }
      const status = fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500 ? fe.statusCode : 500;
      if (status === 500) {
        request.log.error({ err: error }, 'unhandled error');
        return reply.code(500).send({ data: null, error: API_ERRORS.INTERNAL.error, message: withRequestId('internal server error', request.id) });
      }
      return reply.code(status).send({ data: null, error: API_ERRORS.BAD_REQUEST.error, message: fe.message });
    });

    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0];
      const allowed = methods.allowed(path);
      if (allowed.length > 0 && !allowed.includes(request.method)) {
        reply.code(405).header('allow', allowed.join(', ')).send({
          data: null,
          error: API_ERRORS.METHOD_NOT_ALLOWED.error,
          message: `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`,
        });
        return;
      }
      reply.code(404).send({
        data: null,
        error: API_ERRORS.NOT_FOUND.error,
        message: `no route ${request.method} ${request.url.split('?')[0]}`,
      });
    });
  },
  { name: 'errors' },
);

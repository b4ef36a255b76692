// A request's logger, made on first use. Fastify gives every request a child logger bound to
// its request id; building a pino child (with the redaction formatter run over its bindings)
// costs about as much as answering a cached list, and most requests never write a line at the
// configured level. This logger builds the child only when a line is actually written.
import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type LogArgs = Parameters<FastifyBaseLogger['info']>;
/** pino's loggers answer whether a level is enabled; fastify's no-op logger (logging off) does not. */
type PinoLike = FastifyBaseLogger & { isLevelEnabled(level: string): boolean };

class RequestLogger {
  #child: PinoLike | undefined;

  constructor(
    private readonly parent: PinoLike,
    private readonly bindings: Record<string, unknown>,
    private readonly options: object,
  ) {}

  get level(): string {
    return this.#child?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.#real().level = level;
  }

  fatal(...args: LogArgs): void {
    this.#write('fatal', args);
  }
  error(...args: LogArgs): void {
    this.#write('error', args);
  }
  warn(...args: LogArgs): void {
    this.#write('warn', args);
  }
  info(...args: LogArgs): void {
    this.#write('info', args);
  }
  debug(...args: LogArgs): void {
    this.#write('debug', args);
  }
  trace(...args: LogArgs): void {
    this.#write('trace', args);
  }
  silent(): void {}

  isLevelEnabled(level: string): boolean {
    return (this.#child ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: Record<string, unknown>, options?: object): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }

  #write(level: Level, args: LogArgs): void {
    if (!this.#child && !this.parent.isLevelEnabled(level)) return;
    (this.#real()[level] as (...a: LogArgs) => void)(...args);
  }

  #real(): PinoLike {
    return (this.#child ??= this.parent.child(this.bindings, this.options) as PinoLike);
  }
}

/**
 * Fastify's `childLoggerFactory`. With logging off, or a per-route level (logLevel), the child is
 * made at once as fastify would.
 */
export const childLoggerFactory: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  typeof (logger as Partial<PinoLike>).isLevelEnabled !== 'function' || ('level' in options && options.level !== undefined)
    ? logger.child(bindings, options)
    : (new RequestLogger(logger as PinoLike, bindings, options) as unknown as FastifyBaseLogger);

/**
 * Fastify's own lines about each request. Its two per-request `info` lines ("incoming request",
 * "request completed") are written only when the daemon logs at `info` or below; above that they
 * are skipped before they are assembled. Its warn and error lines (a request that errored, a
 * stream or serialiser failure) are kept at every level.
 */
export class RequestLines extends LogController {
  readonly #infoLines: boolean;
  readonly #oneLine: boolean;

  /** `oneLine` (the foreground daemon on a terminal): one line per request, at its end, naming the request. */
  constructor(level: string, options: { oneLine?: boolean } = {}) {
    // Every line of a request names it as `req_id`, the X-Request-Id it was answered with (CONTRACT section 7).
    super({ requestIdLogLabel: 'req_id' });
    this.#infoLines = ['info', 'debug', 'trace'].includes(level);
    this.#oneLine = options.oneLine ?? false;
  }

  override incomingRequest(request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (this.#infoLines && !this.#oneLine) super.incomingRequest(request, reply, metadata);
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply, metadata?: Record<string, unknown>): void {
    if (this.#oneLine && !error && this.#infoLines) {
      if (!this.isLogDisabled(request)) reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
      return;
    }
    if (error || this.#infoLines) super.requestCompleted(error, request, reply, metadata);
  }
}

/**
 * A request URL as it may be logged: every query value replaced by `[redacted]`, names kept. An
 * API key or token put in a query string (by mistake, or by a client that does so) must not
 * land in the daemon log; any value could be one, so none is written.
 * @example
 * redactQuery('/api/v1/sites?api_key=ncp_123&subscription_id=4'); // '/api/v1/sites?api_key=[redacted]&subscription_id=[redacted]'
 */
export function redactQuery(url: string): string {
  const mark = url.indexOf('?');
  if (mark === -1) return url;
  const query = url.slice(mark + 1);
  if (query === '') return url;
  const parts = query.split('&').map((part) => {
    const eq = part.indexOf('=');
    return eq === -1 ? part : `${part.slice(0, eq)}=[redacted]`;
  });
  // A name can carry the secret too (`?ncp_…` alone): names longer than a parameter's are cut.
  return `${url.slice(0, mark)}?${parts.map((part) => (part.length > 64 ? '[redacted]' : part)).join('&')}`;
}

/** Fastify's `req` serialiser (the same fields) with the query string redacted. */
export function serializeRequest(req: FastifyRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: redactQuery(req.url),
    version: req.headers?.['accept-version'],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket ? req.socket.remotePort : undefined,
  };
}

// One webhook attempt over HTTPS: one shared undici Agent with keep-alive, a 10 s limit for the
// whole attempt (connect, headers and body), no redirects (undici follows none unless told),
// at most 4096 bytes of the answer read, and the SSRF guard applied where sockets connect.
// An attempt is one undici dispatch with its own small handler (the answer's bytes go straight
// into a buffer list): no response stream, no abort signal and no promise wrapper per attempt.
import { performance } from 'node:perf_hooks';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import { errorReason, statusReason, timeoutReason } from './failure-reason.js';
import { BlockedTargetError, checkLiteralHost, guardedLookup } from './ssrf.js';
import { ATTEMPT_TIMEOUT_MS, MAX_RESPONSE_BYTES } from '../../shared/webhook-protocol.js';

export interface AttemptResult {
  /** HTTP status; 0 when no answer came (connection error, refusal, time-out). */
  status_code: number;
  /** At most MAX_RESPONSE_BYTES bytes of the answer's body, or what went wrong. */
  response: string;
  success: boolean;
  duration_ms: number;
  /** Why it failed, in a few words (see failure-reason.ts); null on success. */
  reason: string | null;
}

/** Delivers to URLs that are not http(s), e.g. `listen:<session>` (the CLI's listen sessions). */
export interface LocalTargets {
  handles(url: string): boolean;
  send(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult>;
}

export interface SenderOptions {
  timeoutMs?: number;
  /** Extra CA certificates (PEM) trusted on top of the built-in ones. */
  ca?: string[];
  /** Replaces DNS resolution (tests). */
  resolve?: Parameters<typeof guardedLookup>[0];
  /** Where `listen:` URLs go; without it they fail. */
  local?: LocalTargets;
}


/**
 * Decodes at most `limit` bytes as UTF-8 text, without splitting a character. A NUL becomes
 * U+FFFD, as an invalid byte does: PostgreSQL keeps no NUL in text, and a log entry it refused
 * would leave its delivery to be made again and again.
 */
export function truncateUtf8(bytes: Buffer, limit: number): string {
  let end = Math.min(bytes.length, limit);
  // A cut inside a character moves back to its first byte (continuation bytes are 10xxxxxx).
  if (end < bytes.length) while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--;
  let text = bytes.toString('utf8', 0, end);
  if (text.includes('\0')) text = text.replaceAll('\0', '\uFFFD');
  // Invalid bytes decode to U+FFFD (3 bytes each), which can push the text over the limit.
  while (Buffer.byteLength(text) > limit) text = text.slice(0, -1);
  return text;
}

/** Where a URL points, parsed once per distinct URL (endpoints are few; their URLs are reused). */
const targets = new Map<string, { origin: string; path: string }>();
function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= 4096) targets.clear();
    targets.set(url, target);
  }
  return target;
}

function describeError(error: unknown): string {
  if (error instanceof BlockedTargetError) return error.message;
  const err = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const inner = err.cause instanceof BlockedTargetError ? err.cause : null;
  if (inner) return inner.message;
  const root = err.cause?.message ? err.cause : err;
  const code = root.code && !root.message.includes(root.code) ? ` (${root.code})` : '';
  return `connection error: ${root.message}${code}`;
}

export class WebhookSender {
  readonly #timeoutMs: number;
  readonly #ca: string[] | undefined;
  #secureContext: SecureContext | undefined;
  readonly #resolve: SenderOptions['resolve'];
  readonly #local: LocalTargets | undefined;
  #agent: Agent | null = null;
  #agentAllowsPrivate = false;

  constructor(options: SenderOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
    this.#ca = options.ca?.length ? options.ca : undefined;
    this.#resolve = options.resolve;
    this.#local = options.local;
  }

  /**
   * Posts `body` to `url` once and reports the outcome; never throws.
   * @example
   * const result = await sender.send('https://hooks.example/in', headers, body, false);
   */
  send(url: string, headers: Record<string, string>, body: string, allowPrivate: boolean): Promise<AttemptResult> {
    // A listen session's endpoint: the CLI makes the request, the daemon only hands it over.
    if (this.#local?.handles(url)) return this.#local.send(url, headers, body);
    return new Promise((resolve) => {
      const exchange = new Exchange(this.#timeoutMs, resolve);
      try {
        const target = targetOf(url);
        this.#agentFor(allowPrivate).dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, exchange);
      } catch (error) {
        exchange.onResponseError(null, error as Error);
      }
    });
  }

  async close(): Promise<void> {
    const agent = this.#agent;
    this.#agent = null;
    await agent?.close().catch(() => undefined);
  }

  /** The one shared agent; replaced (the old one drains) when the private-network policy changes. */
  #agentFor(allowPrivate: boolean): Agent {
    if (this.#agent && this.#agentAllowsPrivate === allowPrivate) return this.#agent;
    void this.#agent?.close().catch(() => undefined);
    this.#agentAllowsPrivate = allowPrivate;
    this.#agent = new Agent({
      keepAliveTimeout: 4_000,
      keepAliveMaxTimeout: 60_000,
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
      connect: this.#connector(allowPrivate),
    });
    return this.#agent;
  }

  #connector(allowPrivate: boolean): buildConnector.connector {
    // One context for every connection (building it per connect would parse all roots each
    // time), made with the first agent: a start does not parse some 150 root certificates for
    // deliveries it may never make.
    if (this.#ca) this.#secureContext ??= createSecureContext({ ca: [...rootCertificates, ...this.#ca] });
    const connect = buildConnector({
      timeout: this.#timeoutMs,
      ...(this.#secureContext ? { secureContext: this.#secureContext } : {}),
      ...(allowPrivate ? {} : { lookup: guardedLookup(this.#resolve) as never }),
    });
    if (allowPrivate) return connect;
    return (options, callback) => {
      // Sockets skip the lookup for a literal IP, so literals are checked here.
      const refused = checkLiteralHost(options.hostname);
      if (refused) return callback(refused, null);
      return connect(options, callback);
    };
  }
}

/** Raised into an exchange to stop it: the time-out, or the answer's bytes read up to the limit. */
class ExchangeStop extends Error {}

/**
 * One attempt's exchange: collects the status and at most MAX_RESPONSE_BYTES of the answer,
 * and resolves once with the outcome. The time-out resolves at once and aborts the request
 * (undici aborts a request not yet on a socket as soon as it gets one).
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #started = performance.now();
  readonly #timeoutMs: number;
  readonly #resolve: (result: AttemptResult) => void;
  readonly #timer: NodeJS.Timeout;
  #controller: Dispatcher.DispatchController | null = null;
  #status = 0;
  #chunks: Buffer[] = [];
  #size = 0;
  #settled = false;

  constructor(timeoutMs: number, resolve: (result: AttemptResult) => void) {
    this.#timeoutMs = timeoutMs;
    this.#resolve = resolve;
    this.#timer = setTimeout(() => this.#timedOut(), timeoutMs);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#settled) controller.abort(new ExchangeStop('timed out'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    this.#status = statusCode;
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    if (this.#size < MAX_RESPONSE_BYTES) return;
    // The rest of the answer is never read: aborting gives up its connection.
    this.#answered();
    controller.abort(new ExchangeStop('answer read up to the limit'));
  }

  onResponseEnd(): void {
    this.#answered();
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, error: Error): void {
    if (this.#settled) return;
    this.#settle(0, describeError(error), false, errorReason(error));
  }

  #answered(): void {
    if (this.#settled) return;
    const status = this.#status;
    const received = this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks, this.#size);
    this.#settle(status, truncateUtf8(received, MAX_RESPONSE_BYTES), status >= 200 && status < 300, statusReason(status));
  }

  #timedOut(): void {
    if (this.#settled) return;
    this.#settle(0, `timed out: no complete answer within ${this.#timeoutMs / 1000} s`, false, timeoutReason(this.#timeoutMs));
    this.#controller?.abort(new ExchangeStop('timed out'));
  }

  #settle(status_code: number, response: string, success: boolean, reason: string | null): void {
    this.#settled = true;
    clearTimeout(this.#timer);
    this.#chunks = [];
    this.#resolve({ status_code, response, success, duration_ms: Math.round(performance.now() - this.#started), reason });
  }
}

// One webhook attempt over HTTPS: one shared undici Agent with keep-alive, a 10 s limit for the
// whole attempt (connect, headers and body), no redirects (undici follows none unless told),
// at most 4096 bytes of the answer read, and the SSRF guard applied where sockets connect.
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { Agent, buildConnector } from 'undici';
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

/** Reads a body until it ends or `limit` bytes have come, then stops reading it. */
function readAtMost(body: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // The error listener stays: a body given up (destroyed) may still report an error, and an
    // error event with no listener would take the process down. Rejecting a settled promise is a no-op.
    const cleanup = () => {
      body.off('data', onData);
      body.off('end', onEnd);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size < limit) return;
      // The rest of the body is never read: destroying the stream gives up its connection.
      onEnd();
      body.destroy();
    };
    body.on('data', onData);
    body.once('end', onEnd);
    body.on('error', onError);
  });
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
  readonly #secureContext: SecureContext | undefined;
  readonly #resolve: SenderOptions['resolve'];
  readonly #local: LocalTargets | undefined;
  #agent: Agent | null = null;
  #agentAllowsPrivate = false;

  constructor(options: SenderOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? ATTEMPT_TIMEOUT_MS;
    // One context for every connection: building it per connect would parse all roots each time.
    this.#secureContext = options.ca?.length ? createSecureContext({ ca: [...rootCertificates, ...options.ca] }) : undefined;
    this.#resolve = options.resolve;
    this.#local = options.local;
  }

  /**
   * Posts `body` to `url` once and reports the outcome; never throws.
   * @example
   * const result = await sender.send('https://hooks.example/in', headers, body, false);
   */
  async send(url: string, headers: Record<string, string>, body: string, allowPrivate: boolean): Promise<AttemptResult> {
    // A listen session's endpoint: the CLI makes the request, the daemon only hands it over.
    if (this.#local?.handles(url)) return this.#local.send(url, headers, body);
    const started = performance.now();
    // undici takes an EventEmitter as abort signal; cheaper than an AbortController per attempt.
    const abort = new EventEmitter();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.emit('abort');
    }, this.#timeoutMs);
    const done = (status_code: number, response: string, success: boolean, reason: string | null): AttemptResult => ({
      status_code,
      response,
      success,
      duration_ms: Math.round(performance.now() - started),
      reason,
    });
    try {
      const target = targetOf(url);
      const answer = await this.#agentFor(allowPrivate).request({
        origin: target.origin,
        path: target.path,
        method: 'POST',
        headers,
        body,
        signal: abort,
      });
      const received = await readAtMost(answer.body, MAX_RESPONSE_BYTES);
      const status = answer.statusCode;
      return done(status, truncateUtf8(received, MAX_RESPONSE_BYTES), status >= 200 && status < 300, statusReason(status));
    } catch (error) {
      if (timedOut) {
        return done(0, `timed out: no complete answer within ${this.#timeoutMs / 1000} s`, false, timeoutReason(this.#timeoutMs));
      }
      return done(0, describeError(error), false, errorReason(error));
    } finally {
      clearTimeout(timer);
    }
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

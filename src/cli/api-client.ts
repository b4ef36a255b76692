// The CLI's HTTP client: talks to the daemon as any API client would, over HTTPS verified
// against the data directory's certificate (or --ca), never with verification turned off.
// Errors become one line with a hint (connection refused, certificate, 401, 403).
import type { Agent as HttpAgent, ClientRequest } from 'node:http';
import type { Readable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { EXIT, exitCodeForStatus } from '../shared/errors.js';
import type { Envelope } from '../shared/envelope.js';
import { CliError } from './errors.js';
import { PAGE_MAX } from '../shared/page-limit.js';

export interface ClientOptions {
  baseUrl: string;
  token?: string;
  /** Where the token came from, for the hint on a 401: a flag or variable, or the stored login. */
  tokenSource?: 'flag' | 'stored';
  /** Path of a PEM CA file to trust for the daemon's certificate. */
  caFile?: string;
  timeoutMs?: number;
  /** What to do when the connection is refused (default: start the daemon); asked only then. */
  whenRefused?: () => string;
  /** How requests reach the daemon; default node:http(s). Tests pass a fake (test/helpers/fake-api.ts). */
  transport?: Transport;
}

/**
 * The HTTP layer under ApiClient, as gh's http.RoundTripper: the client builds the request
 * (URL, token, JSON body) and reads the answer (envelope, exit code, hint, pages); a transport
 * only carries it. A transport's rejection is a connection failure (its `code`, e.g.
 * ECONNREFUSED, picks the message).
 */
export interface Transport {
  request(url: URL, init: { method: HttpMethod; headers: Record<string, string>; body?: string }): Promise<RawResponse>;
  stream(url: URL, init: { headers: Record<string, string>; signal?: AbortSignal }): Promise<StreamResponse>;
}

/** A whole answer: status, body text and the `Link` header. */
export interface RawResponse {
  statusCode: number;
  text: string;
  link?: string;
}

/** An error answer of the API, with its envelope. */
export class ApiRequestError extends CliError {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    envelope: unknown,
    hint?: string,
  ) {
    super(hint ? `${message}. ${hint}` : message, exitCodeForStatus(status, error), envelope);
  }
}

/** What to do about an error answer, in one sentence (or nothing when the message says it all). */
export function hintFor(status: number, error: string, tokenSource: ClientOptions['tokenSource'] | undefined): string | undefined {
  if (status === 401 && error === 'not authenticated') {
    return tokenSource === 'flag' ? 'Check --token / PANELCTL_TOKEN, or run panelctl login' : 'Run panelctl login';
  }
  if (status === 403 && error === 'jwt required') return 'This command needs a login session, not an API key: run panelctl login';
  if (status === 403) return 'Your account may not do this (admins only, or it belongs to another user)';
  // The daemon's message already says what is locked and for how long: the hint gives the way out.
  if (status === 429 && error === 'too_many_attempts') return "The data directory's owner can end it now: panelctl admin unlock";
  return undefined;
}

const CERT_ERRORS = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'CERT_SIGNATURE_FAILURE',
]);

export function describeConnectionError(error: unknown, baseUrl: string, whenRefused?: () => string): string {
  const err = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = err.cause?.code ?? err.code ?? '';
  if (code === 'ECONNREFUSED') return `cannot connect to ${baseUrl}: connection refused. ${whenRefused?.() ?? 'Is the daemon running? panelctl daemon start'}`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot resolve the daemon's host in ${baseUrl}`;
  if (CERT_ERRORS.has(code)) {
    return `TLS certificate of ${baseUrl} not trusted (${code}): pass the daemon's certificate with --ca FILE (default: DATA_DIR/tls/cert.pem)`;
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'ETIMEDOUT') return `the daemon at ${baseUrl} did not answer in time`;
  return `cannot reach the daemon at ${baseUrl}: ${err.cause?.message ?? err.message}`;
}

/**
 * One request and its whole answer over node:https (node:http for an http:// URL), verified
 * against `ca` when given. The CLI does not use undici: its WASM HTTP parser is compiled on
 * first use, which alone costs more than node's whole start-up, and every command would pay it
 * (decision in docs/decisions/cli.md); `watch` and `--follow` pay it before `connected` too.
 */
async function requestOnce(
  url: URL,
  agent: HttpAgent,
  options: { method: string; headers: Record<string, string>; body?: string; ca?: string; timeoutMs: number },
): Promise<RawResponse> {
  const transport = url.protocol === 'http:' ? await import('node:http') : await import('node:https');
  return new Promise((resolve, reject) => {
    const request = transport.request(
      url,
      { method: options.method, headers: options.headers, agent, ...(options.ca ? { ca: options.ca } : {}), timeout: options.timeoutMs },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () =>
          resolve({ statusCode: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), link: linkHeader(response.rawHeaders) }),
        );
      },
    );
    request.on('timeout', () => request.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    request.on('error', reject);
    request.end(options.body);
  });
}

/**
 * The answer's `Link` header as `response.headers.link` gives it (several joined with ", "; "" when
 * there is none), read from the raw list: the headers object is built on first use, for one field.
 */
function linkHeader(raw: string[]): string {
  const values: string[] = [];
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'link') values.push(raw[i + 1]);
  return values.join(', ');
}

/** An open streaming answer (Server-Sent Events): its status and its body, read as a stream. */
export interface StreamResponse {
  statusCode: number;
  body: Readable;
}

/** The whole body of a streaming answer that is not a stream (an error envelope). */
export async function readBody(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** The path (under /api/v1) of the `rel="next"` target of a `Link` header, or null. */
export function nextPage(link: string | undefined): string | null {
  const match = link?.match(/<([^>]*)>\s*;\s*rel="?next"?/);
  if (!match) return null;
  const target = new URL(match[1], 'http://daemon');
  return `${target.pathname.replace(/^\/api\/v1/, '')}${target.search}`;
}

function withQuery(path: string, extra: Record<string, string>): string {
  // Nothing to add to a path without a query: as below, without URLSearchParams (a cost at start).
  if (!path.includes('?') && Object.keys(extra).length === 0) return path;
  const [base, query = ''] = path.split('?', 2);
  const params = new URLSearchParams(query);
  for (const [name, value] of Object.entries(extra)) params.set(name, value);
  return params.size ? `${base}?${params}` : base;
}

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS';

export class ApiClient {
  #ca: string | undefined | null = null;
  #streams = new Set<ClientRequest>();
  /**
   * The client's own keep-alive agent: a command's requests share one connection, and close()
   * ends it, so a finished command exits at once. (Node's global agent keeps sockets alive for
   * seconds, holding the process open until main() forces the exit.)
   */
  #agent: HttpAgent | null = null;

  constructor(readonly options: ClientOptions) {}

  /** The CA to trust: the file's PEM, or undefined (system CAs) when there is none. */
  #caPem(): string | undefined {
    if (this.#ca === null) {
      try {
        this.#ca = this.options.caFile ? readFileSync(this.options.caFile, 'utf8') : undefined;
      } catch {
        this.#ca = undefined; // a missing default CA is fine when the daemon has a publicly trusted certificate
      }
    }
    return this.#ca;
  }

  get baseUrl(): string {
    return this.options.baseUrl.replace(/\/+$/, '');
  }

  #url(path: string): URL {
    try {
      return new URL(`${this.baseUrl}/api/v1${path}`);
    } catch {
      throw new CliError(`not a valid daemon URL: "${this.options.baseUrl}" (expected e.g. https://127.0.0.1:3443)`, EXIT.USAGE);
    }
  }

  /** Sends a request and returns the envelope; error answers throw ApiRequestError. */
  async call<T>(method: HttpMethod, path: string, body?: unknown): Promise<Envelope<T>> {
    return (await this.#exchange<T>(method, path, body)).envelope;
  }

  /**
   * Reads a paginated list: page after page, following each answer's `Link: <…>; rel="next"`,
   * until the last page or until `limit` items are in.
   * @example
   * const sites = await client.list<Site>('/sites?subscription_id=3');
   */
  async list<T>(path: string, limit?: number): Promise<T[]> {
    const items: T[] = [];
    let next: string | null = withQuery(path, limit === undefined ? {} : { limit: String(Math.min(limit, PAGE_MAX)) });
    while (next !== null && (limit === undefined || items.length < limit)) {
      const { envelope, link } = await this.#exchange<T[]>('GET', next);
      items.push(...envelope.data);
      next = nextPage(link);
    }
    return limit === undefined ? items : items.slice(0, limit);
  }

  async #exchange<T>(method: HttpMethod, path: string, body?: unknown): Promise<{ envelope: Envelope<T>; link?: string }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const url = this.#url(path);
    let response: RawResponse;
    try {
      response = this.options.transport
        ? await this.options.transport.request(url, { method, headers, body: payload })
        : await requestOnce(url, await this.#agentFor(url), { method, headers, body: payload, ca: this.#caPem(), timeoutMs: this.options.timeoutMs ?? 30_000 });
    } catch (error) {
      throw new CliError(describeConnectionError(error, this.baseUrl, this.options.whenRefused));
    }
    let envelope: Envelope<T>;
    try {
      envelope = JSON.parse(response.text) as Envelope<T>;
    } catch {
      throw new CliError(`unexpected answer from ${this.baseUrl} (HTTP ${response.statusCode}, not JSON): is this a panelctl daemon?`);
    }
    if (response.statusCode >= 400) {
      const error = envelope.error ?? 'error';
      throw new ApiRequestError(
        response.statusCode,
        error,
        envelope.message || error || `HTTP ${response.statusCode}`,
        envelope,
        hintFor(response.statusCode, error, this.options.tokenSource),
      );
    }
    return { envelope, link: response.link };
  }

  /**
   * A raw streaming request (Server-Sent Events) on a connection of its own, over node:https:
   * resolves with the answer's head (within the client's time-out); the body is read by the caller
   * and ends with the signal, the connection or close().
   */
  async stream(path: string, signal?: AbortSignal, extraHeaders: Record<string, string> = {}): Promise<StreamResponse> {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...extraHeaders };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const url = this.#url(path);
    if (this.options.transport) {
      try {
        return await this.options.transport.stream(url, { headers, signal });
      } catch (error) {
        if (signal?.aborted) throw error;
        throw new CliError(describeConnectionError(error, this.baseUrl, this.options.whenRefused));
      }
    }
    const transport = url.protocol === 'http:' ? await import('node:http') : await import('node:https');
    const ca = this.#caPem();
    const timeoutMs = this.options.timeoutMs ?? 30_000;
    try {
      return await new Promise<StreamResponse>((resolve, reject) => {
        const request = transport.request(url, { method: 'GET', headers, agent: false, ...(ca ? { ca } : {}), ...(signal ? { signal } : {}) }, (response) => {
          // Headers are in: from here the stream may stay quiet (the caller watches for idleness).
          clearTimeout(headersTimer);
          resolve({ statusCode: response.statusCode ?? 0, body: response });
        });
        const headersTimer = setTimeout(() => request.destroy(Object.assign(new Error('timed out'), { code: 'UND_ERR_HEADERS_TIMEOUT' })), timeoutMs);
        headersTimer.unref();
        this.#streams.add(request);
        request.on('close', () => {
          clearTimeout(headersTimer);
          this.#streams.delete(request);
        });
        request.on('error', reject);
        request.end();
      });
    } catch (error) {
      if (signal?.aborted) throw error;
      throw new CliError(describeConnectionError(error, this.baseUrl, this.options.whenRefused));
    }
  }

  async #agentFor(url: URL): Promise<HttpAgent> {
    if (!this.#agent) {
      const transport = url.protocol === 'http:' ? await import('node:http') : await import('node:https');
      this.#agent = new transport.Agent({ keepAlive: true });
    }
    return this.#agent;
  }

  async close(): Promise<void> {
    this.#agent?.destroy();
    for (const request of this.#streams) request.destroy();
    this.#streams.clear();
  }
}

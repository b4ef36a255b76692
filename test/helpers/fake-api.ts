// A fake of the daemon's HTTP API for CLI tests, as gh's httpmock: the CLI's own ApiClient runs
// (envelopes, exit codes, hints, pages) over this Transport instead of node:https. Stubs answer
// by method and path; every request is recorded for assertions; a request no stub answers is
// refused like an unreachable daemon and listed in `unmatched` (verify() fails on it).
import { PassThrough, type Readable } from 'node:stream';
import { expect } from 'vitest';
import type { HttpMethod, RawResponse, StreamResponse, Transport } from '../../src/cli/api-client.js';

export interface SentRequest {
  method: HttpMethod;
  /** The path under /api/v1, query included: `/sites?limit=5`. */
  path: string;
  headers: Record<string, string>;
  /** The parsed JSON body, if any. */
  body?: any;
}

/** An answer: a success envelope of `data`, an error envelope (`error`, `message`), or raw text. */
export interface Reply {
  status?: number;
  data?: unknown;
  error?: string;
  message?: string;
  /** The `Link` header (pagination). */
  link?: string;
  /** A body that is not an envelope. */
  text?: string;
}

type Answer = Reply | ((request: SentRequest) => Reply | Promise<Reply>);
type Matcher = string | RegExp;

/** An open event stream the test writes to. */
export interface FakeStream {
  request: SentRequest;
  body: PassThrough;
  /** Writes one Server-Sent Event. */
  send(event: string, data: unknown, id?: string): void;
  end(): void;
}

function matches(matcher: Matcher, path: string): boolean {
  return typeof matcher === 'string' ? matcher === path : matcher.test(path);
}

function connectionError(code: string): Error {
  return Object.assign(new Error(`connect ${code}`), { code });
}

export class FakeApi implements Transport {
  readonly requests: SentRequest[] = [];
  readonly unmatched: SentRequest[] = [];
  readonly streams: FakeStream[] = [];
  #stubs: Array<{ method: HttpMethod; path: Matcher; answer: Answer }> = [];
  #streamStubs: Array<{ path: Matcher; status: number; reply?: Reply }> = [];
  #failure: string | null = null;
  #streamWaiters: Array<() => void> = [];

  /**
   * Answers `method path` (a RegExp matches the path with its query), every time; of the stubs
   * that match, the one registered last answers (a test changes an answer by adding one).
   * @example
   * api.on('GET', '/auth/api-keys', { data: [key] });
   * api.on('POST', '/auth/login', (req) => (req.body.totp_code ? { data: login } : { status: 401, error: '2fa_required', message: 'code needed' }));
   */
  on(method: HttpMethod, path: Matcher, answer: Answer): this {
    this.#stubs.push({ method, path, answer });
    return this;
  }

  /** An error envelope for `method path`. */
  fail(method: HttpMethod, path: Matcher, status: number, error: string, message = error): this {
    return this.on(method, path, { status, error, message });
  }

  /** Every request fails to connect with this code (ECONNREFUSED, DEPTH_ZERO_SELF_SIGNED_CERT, …). */
  refuse(code = 'ECONNREFUSED'): this {
    this.#failure = code;
    return this;
  }

  /** Opens event streams on `path` (status 200: the test writes events through `streams`), or answers them with an error envelope. */
  onStream(path: Matcher, status = 200, reply?: Reply): this {
    this.#streamStubs.push({ path, status, reply });
    return this;
  }

  /** The requests sent to `method path`. */
  sent(method: HttpMethod, path: Matcher): SentRequest[] {
    return this.requests.filter((r) => r.method === method && matches(path, r.path));
  }

  /** Forgets every stub, request and stream: the API of the next test (useFakeApi). */
  reset(): void {
    this.requests.length = 0;
    this.unmatched.length = 0;
    this.streams.length = 0;
    this.#stubs = [];
    this.#streamStubs = [];
    this.#failure = null;
    this.#streamWaiters = [];
  }

  /** Fails the test when a request found no stub. */
  verify(): void {
    expect(this.unmatched.map((r) => `${r.method} ${r.path}`), 'requests no stub answered').toEqual([]);
  }

  /** Resolves once `count` streams have been opened. */
  async streamOpened(count = 1): Promise<FakeStream> {
    while (this.streams.length < count) await new Promise<void>((resolve) => this.#streamWaiters.push(resolve));
    return this.streams[count - 1];
  }

  #record(method: HttpMethod, url: URL, headers: Record<string, string>, body?: string): SentRequest {
    const request: SentRequest = { method, path: `${url.pathname.replace(/^\/api\/v1/, '')}${url.search}`, headers, body: body === undefined ? undefined : JSON.parse(body) };
    this.requests.push(request);
    return request;
  }

  async request(url: URL, init: { method: HttpMethod; headers: Record<string, string>; body?: string }): Promise<RawResponse> {
    if (this.#failure) throw connectionError(this.#failure);
    const request = this.#record(init.method, url, init.headers, init.body);
    const stub = this.#stubs.findLast((s) => s.method === init.method && matches(s.path, request.path));
    if (!stub) {
      this.unmatched.push(request);
      throw connectionError('ECONNREFUSED');
    }
    const reply = typeof stub.answer === 'function' ? await stub.answer(request) : stub.answer;
    return render(reply);
  }

  async stream(url: URL, init: { headers: Record<string, string>; signal?: AbortSignal }): Promise<StreamResponse> {
    if (this.#failure) throw connectionError(this.#failure);
    const request = this.#record('GET', url, init.headers);
    const stub = this.#streamStubs.findLast((s) => matches(s.path, request.path));
    if (!stub) {
      this.unmatched.push(request);
      throw connectionError('ECONNREFUSED');
    }
    if (stub.status !== 200) {
      const { statusCode, text } = render({ status: stub.status, ...stub.reply });
      return { statusCode, body: PassThrough.from([text]) as Readable };
    }
    const body = new PassThrough();
    init.signal?.addEventListener('abort', () => body.destroy(), { once: true });
    const stream: FakeStream = {
      request,
      body,
      send: (event, data, id) => body.write(`${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`),
      end: () => body.end(),
    };
    this.streams.push(stream);
    for (const waiter of this.#streamWaiters.splice(0)) waiter();
    return { statusCode: 200, body };
  }
}

function render(reply: Reply): RawResponse {
  const status = reply.status ?? (reply.error ? 400 : 200);
  if (reply.text !== undefined) return { statusCode: status, text: reply.text, link: reply.link };
  const envelope = reply.error ? { data: reply.data ?? null, error: reply.error, message: reply.message ?? reply.error } : { data: reply.data ?? null, error: null, message: reply.message ?? '' };
  return { statusCode: status, text: JSON.stringify(envelope), link: reply.link };
}

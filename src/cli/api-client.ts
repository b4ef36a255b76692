// The CLI's HTTP client: talks to the daemon as any API client would, over HTTPS verified
// against the data directory's certificate (or --ca), never with verification turned off.
import { readFileSync } from 'node:fs';
import { Agent, request, type Dispatcher } from 'undici';
import { exitCodeForStatus } from '../shared/errors.js';
import type { Envelope } from '../shared/envelope.js';
import { CliError } from './errors.js';

export interface ClientOptions {
  baseUrl: string;
  token?: string;
  /** Path of a PEM CA file to trust for the daemon's certificate. */
  caFile?: string;
  timeoutMs?: number;
}

/** An error answer of the API, with its envelope. */
export class ApiRequestError extends CliError {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
    envelope: unknown,
  ) {
    super(message, exitCodeForStatus(status), envelope);
  }
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

export function describeConnectionError(error: unknown, baseUrl: string): string {
  const err = error as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = err.cause?.code ?? err.code ?? '';
  if (code === 'ECONNREFUSED') return `cannot connect to ${baseUrl}: connection refused. Is the daemon running? panelctl daemon start`;
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot resolve the daemon's host in ${baseUrl}`;
  if (CERT_ERRORS.has(code)) {
    return `TLS certificate of ${baseUrl} not trusted (${code}): pass the daemon's certificate with --ca FILE (default: DATA_DIR/tls/cert.pem)`;
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') return `the daemon at ${baseUrl} did not answer in time`;
  return `cannot reach the daemon at ${baseUrl}: ${err.cause?.message ?? err.message}`;
}

export class ApiClient {
  readonly #dispatcher: Dispatcher;

  constructor(readonly options: ClientOptions) {
    let ca: string | undefined;
    if (options.caFile) {
      try {
        ca = readFileSync(options.caFile, 'utf8');
      } catch {
        ca = undefined; // a missing default CA is fine when the daemon has a publicly trusted certificate
      }
    }
    this.#dispatcher = new Agent({
      connect: ca ? { ca } : {},
      headersTimeout: options.timeoutMs ?? 30_000,
      bodyTimeout: options.timeoutMs ?? 30_000,
    });
  }

  get baseUrl(): string {
    return this.options.baseUrl.replace(/\/+$/, '');
  }

  /** Sends a request and returns the envelope's `data`; error answers throw ApiRequestError. */
  async call<T>(method: Dispatcher.HttpMethod, path: string, body?: unknown): Promise<Envelope<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let response: Dispatcher.ResponseData;
    try {
      response = await request(`${this.baseUrl}/api/v1${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        dispatcher: this.#dispatcher,
      });
    } catch (error) {
      throw new CliError(describeConnectionError(error, this.baseUrl));
    }
    const text = await response.body.text();
    let envelope: Envelope<T>;
    try {
      envelope = JSON.parse(text) as Envelope<T>;
    } catch {
      throw new CliError(`unexpected answer from ${this.baseUrl} (HTTP ${response.statusCode}, not JSON)`);
    }
    if (response.statusCode >= 400) {
      throw new ApiRequestError(response.statusCode, envelope.error ?? 'error', envelope.message || envelope.error || `HTTP ${response.statusCode}`, envelope);
    }
    return envelope;
  }

  /** A raw streaming request (Server-Sent Events). */
  async stream(path: string, signal?: AbortSignal, extraHeaders: Record<string, string> = {}): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...extraHeaders };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    try {
      return await request(`${this.baseUrl}/api/v1${path}`, {
        method: 'GET',
        headers,
        signal,
        dispatcher: this.#dispatcher,
        bodyTimeout: 0,
      });
    } catch (error) {
      throw new CliError(describeConnectionError(error, this.baseUrl));
    }
  }

  async close(): Promise<void> {
    await this.#dispatcher.close();
  }
}

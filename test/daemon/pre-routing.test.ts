// Requests refused before routing, over raw TLS sockets to the real daemon (a client library would
// refuse to send most of them): each answers its 4xx status with the envelope, and a request the
// parser could not read ends with Connection: close. And 405 with Allow, for every route of the app.
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ERRORS } from '../../src/shared/errors.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { listRoutes } from '../helpers/routes.js';
import type { RouteSummary } from '../../src/daemon/app.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** Whether the daemon closed the connection after answering. */
  closed: boolean;
}

/** Sends raw bytes over TLS and reads one answer (until the connection closes or the body is complete). */
function rawRequest(daemon: TestDaemon, bytes: string | Buffer): Promise<RawAnswer> {
  const { hostname, port } = new URL(daemon.url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port), ca: daemon.ca, servername: 'localhost' }, () => socket.write(bytes));
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      const text = received.toString('utf8');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) {
        if (closed) {
          settled = true;
          reject(new Error(`connection closed without an answer: ${JSON.stringify(text)}`));
        }
        return;
      }
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const body = text.slice(split + 4);
      if (!closed && Buffer.byteLength(body) < Number(headers['content-length'] ?? Infinity)) return;
      settled = true;
      socket.destroy();
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body), closed: closed || /close/i.test(headers.connection ?? '') });
    };
    socket.on('data', (chunk) => {
      received = Buffer.concat([received, chunk]);
      finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error) => {
      if (!settled && received.length === 0) {
        settled = true;
        reject(error);
      }
    });
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer in 10 s')));
  });
}

function expectEnvelope(answer: RawAnswer, status: number, error: string, message: RegExp): void {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.body).toEqual({ data: null, error, message: expect.stringMatching(message) });
}

describe('errors raised before routing', () => {
  let daemon: TestDaemon;
  let routes: RouteSummary[];

  beforeAll(async () => {
    [daemon, routes] = await Promise.all([startDaemon(), listRoutes()]);
    // The 405 sweep sends a hundred-odd unauthenticated requests from one address.
    const token = await daemon.login();
    const relaxed = await daemon.request('PUT', '/admin/settings', { token, body: { rate_limit_user_per_minute: 100_000 } });
    expect(relaxed.status).toBe(200);
  });
  afterAll(async () => {
    await daemon?.dispose();
  });

  it('a URL with broken percent-encoding: 400 envelope (FST_ERR_BAD_URL), not fastify\'s own body', async () => {
    const answer = await rawRequest(daemon, 'GET /api/v1/webhooks/%E0%A4%A HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    expectEnvelope(answer, 400, 'bad request', /URL path .*%E0%A4%A.* is not valid/);
    expect(JSON.stringify(answer.body)).not.toContain('FST_');
  });

  it('a path parameter over 100 characters: 400 envelope', async () => {
    const answer = await rawRequest(daemon, `GET /api/v1/webhooks/${'7'.repeat(150)} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
    expectEnvelope(answer, 400, 'bad request', /longer than 100 characters/);
  });

  it.each([
    ['a header value with a control character', 'GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Note: a\u0001b\r\n\r\n', 400, /header value contains a character/],
    ['an invalid Content-Length', 'POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 12abc\r\n\r\n{}', 400, /Content-Length is not a valid/],
    ['two different Content-Lengths', 'POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}', 400, /Content-Length is sent more than once/],
    [
      'Content-Length together with Transfer-Encoding',
      'POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      400,
      /Content-Length and Transfer-Encoding must not be sent together/,
    ],
    ['a 20 KB header', `GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`, 431, /exceed 16 KiB/],
  ])('%s: its status with the envelope, then the connection closes', async (_case, bytes, status, message) => {
    const answer = await rawRequest(daemon, bytes);
    const error = Object.values(API_ERRORS).find((e) => e.status === status && (status !== 400 || e.error === 'bad request'))!.error;
    expectEnvelope(answer, status, error, message);
    expect(answer.headers.connection).toBe('close');
    expect(answer.closed).toBe(true);
  });

  it('an HTTP/1.1 request without Host: 400 envelope (node answered an empty body); HTTP/1.0 without Host is fine', async () => {
    const answer = await rawRequest(daemon, 'GET /api/v1/health HTTP/1.1\r\n\r\n');
    expectEnvelope(answer, 400, 'bad request', /Host header is required/);
    expect(answer.closed).toBe(true);
    const old = await rawRequest(daemon, 'GET /api/v1/health HTTP/1.0\r\n\r\n');
    expect(old.status).toBe(200);
    expect(old.body.data.status).toBe('ok');
  });

  it('405 with Allow and the envelope for another method on every known path (404 stays for unknown paths)', async () => {
    const byUrl = new Map<string, Set<string>>();
    for (const route of routes) byUrl.set(route.url, (byUrl.get(route.url) ?? new Set()).add(route.method));
    expect(byUrl.size).toBeGreaterThan(20);
    const checked: string[] = [];
    for (const [url, methods] of byUrl) {
      const path = url.replace(/:[A-Za-z_]+/g, '1').replace(/\*$/, 'x.js');
      const expected = [...methods];
      if (methods.has('GET')) expected.push('HEAD');
      for (const method of ['TRACE', 'PATCH', 'PUT', 'DELETE', 'POST'].filter((m) => !methods.has(m))) {
        const response = await daemon.request(method, path, method === 'POST' || method === 'PUT' ? { body: {} } : {});
        const where = `${method} ${path}`;
        expect(response.status, `${where}: ${response.text}`).toBe(405);
        expect(response.body, where).toEqual({ data: null, error: 'method not allowed', message: expect.stringContaining(`${method} is not allowed on ${path}`) });
        const allow = String(response.headers.allow).split(', ');
        for (const m of expected) expect(allow, where).toContain(m);
        expect(allow, where).not.toContain(method);
        checked.push(where);
      }
    }
    expect(checked).toContain('TRACE /api/v1/health');
    const health = await daemon.request('TRACE', '/health');
    expect(health.headers.allow).toBe('GET, HEAD');
    const unknown = await daemon.request('TRACE', '/no/such/path');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not found');
  }, 60_000);
});

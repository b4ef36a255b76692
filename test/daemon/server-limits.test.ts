// Server limits on a real daemon, with small limits set through the environment: idle, slow
// and handshake-less connections are closed, a long-lived event stream is not, one client
// address cannot hold more than its share of connections, and query strings stay out of the log.
import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';

const SMALL = {
  PANELCTL_HEADERS_TIMEOUT_MS: '500',
  PANELCTL_REQUEST_TIMEOUT_MS: '1500',
  PANELCTL_KEEPALIVE_TIMEOUT_MS: '500',
  PANELCTL_TIMEOUT_CHECK_MS: '100',
};

interface Watched {
  socket: net.Socket;
  /** Everything the server wrote. */
  received(): string;
  /** Resolves when the socket closes, with the milliseconds it was open; rejects after `within`. */
  closed(within: number): Promise<number>;
}

function watch(socket: net.Socket): Watched {
  const opened = Date.now();
  let data = '';
  socket.on('data', (chunk) => (data += chunk));
  socket.on('error', () => undefined);
  const done = new Promise<number>((resolve) => socket.once('close', () => resolve(Date.now() - opened)));
  return {
    socket,
    received: () => data,
    closed: (within) =>
      Promise.race([
        done,
        new Promise<number>((_, reject) => setTimeout(() => reject(new Error(`still open after ${within} ms; got ${JSON.stringify(data)}`)), within).unref()),
      ]),
  };
}

function connectTls(daemon: TestDaemon, localAddress?: string): Promise<Watched> {
  const { port } = new URL(daemon.url);
  return new Promise((resolve, reject) => {
    // localAddress is a net option tls.connect passes on (its type leaves it out).
    const socket = tls.connect({ host: '127.0.0.1', port: Number(port), ca: daemon.ca, servername: 'localhost', ...({ localAddress } as object) });
    const watched = watch(socket);
    socket.once('secureConnect', () => resolve(watched));
    socket.once('close', () => reject(new Error('closed before the TLS handshake completed')));
  });
}

function until<T>(what: string, probe: () => T | undefined, within = 10_000): Promise<T> {
  return vi.waitFor(
    () => {
      const value = probe();
      if (value === undefined) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: within, interval: 25 },
  );
}

// The capped daemon of the last describe starts beside the first one: its start is a child's work.
let capped: Promise<TestDaemon> | undefined;
function startCapped(): Promise<TestDaemon> {
  capped ??= startDaemon({ env: { PANELCTL_MAX_CONNECTIONS_PER_IP: '3' } });
  // Awaited by its describe; a failed start is told there, not as an unhandled rejection here.
  capped.catch(() => undefined);
  return capped;
}
// Also when its describe is filtered out (its own afterAll disposes it otherwise; twice is harmless).
afterAll(async () => {
  await (await capped?.catch(() => undefined))?.dispose();
});

describe('server limits (small limits from the environment)', () => {
  let daemon: TestDaemon;
  let admin: string;
  const sockets: net.Socket[] = [];
  const track = (w: Watched) => (sockets.push(w.socket), w);

  beforeAll(async () => {
    void startCapped();
    daemon = await startDaemon({ env: SMALL, args: ['--log-level', 'info'] });
    admin = await daemon.login();
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await daemon?.dispose();
  });

  it('closes a TLS connection that sends nothing, with the 408 envelope', async () => {
    const idle = track(await connectTls(daemon));
    const openFor = await idle.closed(5_000);
    expect(openFor).toBeGreaterThanOrEqual(400);
    expect(idle.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    const body = JSON.parse(idle.received().split('\r\n\r\n')[1]);
    expect(body).toEqual({ data: null, error: 'request timeout', message: expect.stringMatching(/not received (completely )?in time/) });
  });

  it('closes a TCP connection that never starts the TLS handshake', async () => {
    const { port } = new URL(daemon.url);
    const raw = watch(net.connect(Number(port), '127.0.0.1'));
    sockets.push(raw.socket);
    await raw.closed(5_000);
    expect(raw.received()).toBe('');
  });

  it('closes a kept-alive connection once it has been idle', async () => {
    const conn = track(await connectTls(daemon));
    conn.socket.write('GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await until('the answer', () => (conn.received().includes('"status":"ok"') ? true : undefined));
    await conn.closed(5_000);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200 OK/);
  });

  it('closes a slow body to /auth/login with 408, and a stream outlives the request timeout', async () => {
    // The event stream, opened first: a response still being written is not a request in progress.
    const stream = track(await connectTls(daemon));
    stream.socket.write(`GET /api/v1/webhooks/deliveries/stream HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${admin}\r\n\r\n`);
    await until('the stream to open', () => (stream.received().includes(': connected') ? true : undefined));

    const slow = track(await connectTls(daemon));
    slow.socket.write('POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"email":');
    // One byte every 100 ms keeps the socket busy, so only the request deadline can end it.
    const drip = setInterval(() => slow.socket.writable && slow.socket.write(' '), 100);
    try {
      const openFor = await slow.closed(8_000);
      expect(openFor).toBeGreaterThanOrEqual(1_400);
    } finally {
      clearInterval(drip);
    }
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n[\s\S]*"error":"request timeout"/);

    // The request deadline has passed for the stream too: it is still open and still delivers.
    expect(stream.socket.destroyed).toBe(false);
    const created = await daemon.request('POST', '/webhooks', { token: admin, body: { url: 'https://hook.invalid/x', secret: 's', events: '*' } });
    expect(created.status).toBe(201);
    const test = await daemon.request('POST', `/webhooks/${created.body.data.id}/test`, { token: admin });
    expect(test.status).toBe(200);
    await until('the delivery event on the stream', () => (stream.received().includes('event: delivery') ? true : undefined));
    expect(stream.socket.destroyed).toBe(false);
  });

  it('keeps query strings out of the request log (an API key put there included)', async () => {
    const key = 'ncp_0123456789abcdef' + 'f'.repeat(44);
    const res = await daemon.request('GET', `/api/v1/health?api_key=${key}&x=1`);
    expect(res.status).toBe(200);
    await until('the request line', () => (daemon.output().includes('/api/v1/health?api_key=[redacted]&x=[redacted]') ? true : undefined));
    expect(daemon.output()).not.toContain(key);
    expect(daemon.output()).not.toContain('0123456789abcdef');
  });
});

describe('the per-address connection cap', () => {
  let daemon: TestDaemon;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    daemon = await startCapped();
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await daemon?.dispose();
  });

  it('refuses connections beyond the cap from one address, not from another, and accepts again once one closes', async () => {
    // 127.0.0.2 and 127.0.0.3 are loopback too: two clients the test's own requests do not count against.
    const held: Watched[] = [];
    for (let i = 0; i < 3; i++) held.push(await connectTls(daemon, '127.0.0.2'));
    sockets.push(...held.map((w) => w.socket));
    await expect(connectTls(daemon, '127.0.0.2')).rejects.toThrow(/closed before the TLS handshake/);
    const other = await connectTls(daemon, '127.0.0.3');
    sockets.push(other.socket);

    held[0].socket.destroy();
    await held[0].closed(5_000);
    // The server sees the close a moment after the client: retry until the slot is free.
    const again = await vi.waitFor(() => connectTls(daemon, '127.0.0.2'), { timeout: 5_000, interval: 50 });
    sockets.push(again.socket);
    // The refusal's log line reaches the daemon's output on its own time, after the refused client saw the close.
    await vi.waitFor(() => expect(daemon.output()).toMatch(/client 127\.0\.0\.2 holds 3 connections, the most one address may/), { timeout: 5_000, interval: 50 });
    // The held connections are still usable.
    held[1].socket.write('GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await until('an answer on a held connection', () => (held[1].received().includes('"status":"ok"') ? true : undefined));
  });
});

describe('socket inactivity (a small socket timeout from the environment)', () => {
  const TIMEOUT_MS = 800;
  let daemon: TestDaemon;
  const sockets: net.Socket[] = [];

  beforeAll(async () => {
    // Deadlines far past the inactivity timeout: only inactivity can end the connections here.
    daemon = await startDaemon({ env: { PANELCTL_SOCKET_TIMEOUT_MS: String(TIMEOUT_MS), PANELCTL_HEADERS_TIMEOUT_MS: '5000', PANELCTL_REQUEST_TIMEOUT_MS: '5000', PANELCTL_TIMEOUT_CHECK_MS: '100' } });
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await daemon?.dispose();
  });

  it('keeps a connection that reads and writes, and closes it, unanswered, once nothing moves for the timeout', async () => {
    const conn = await connectTls(daemon);
    sockets.push(conn.socket);
    conn.socket.write('POST /api/v1/auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"email":');
    // One byte every 100 ms for twice the timeout: the socket is busy all along.
    for (let i = 0; i < (2 * TIMEOUT_MS) / 100; i++) {
      await new Promise((resolve) => conn.socket.write(' ', resolve));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(conn.socket.destroyed).toBe(false);
    const lastByte = Date.now();
    await conn.closed(4_000);
    const quietFor = Date.now() - lastByte;
    // Closed by inactivity (within a sweep of the timeout), not answered by the 5 s request deadline.
    expect(quietFor).toBeGreaterThanOrEqual(TIMEOUT_MS - 150);
    expect(quietFor).toBeLessThan(3_000);
    expect(conn.received()).toBe('');
  });
});

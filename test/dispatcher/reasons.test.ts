// Readable failures: every reason the sender gives, each produced by a real receiver (or a real
// refusal) on loopback, and through the app in-process (its dispatcher and log as a daemon's) the
// reason in the log entry, the deliveries API and one warn line per failed attempt in the log.
import { createServer as createPlainServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebhookSender } from '../../src/daemon/dispatcher/sender.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, endpoint, publish, startAppWorld, waitForEntries, type AppWorld } from './fixtures.js';

const HEADERS = { 'content-type': 'application/json' };
const BODY = '{"event":"webhook.test"}';

/** A plain TCP-level server that cuts every connection as soon as a request arrives. */
async function resettingServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createPlainServer((req) => req.socket.resetAndDestroy());
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const server = createPlainServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('failure reasons from the sender', () => {
  let tls: ReceiverTls;
  let receiver: Receiver;
  let trusting: WebhookSender;
  let untrusting: WebhookSender;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls, (request) => {
      if (request.path.endsWith('/500')) return { status: 500, body: 'boom' };
      if (request.path.endsWith('/301')) return { status: 301, headers: { location: 'https://example.com/' } };
      if (request.path.endsWith('/slow')) return { delayMs: 3_000 };
      return { status: 204 };
    });
    trusting = new WebhookSender({ ca: [tls.cert], timeoutMs: 400 });
    untrusting = new WebhookSender({ timeoutMs: 2_000 });
  });
  afterAll(async () => {
    await trusting?.close();
    await untrusting?.close();
    await receiver?.close();
    await tls?.dispose();
  });

  it('is null on success and `HTTP 500` for any other status', async () => {
    expect(await trusting.send(`${receiver.url}/ok`, HEADERS, BODY, true)).toMatchObject({ success: true, status_code: 204, reason: null });
    expect(await trusting.send(`${receiver.url}/500`, HEADERS, BODY, true)).toMatchObject({ success: false, status_code: 500, reason: 'HTTP 500', response: 'boom' });
  });

  it('says a redirect was not followed', async () => {
    const result = await trusting.send(`${receiver.url}/301`, HEADERS, BODY, true);
    expect(result).toMatchObject({ success: false, status_code: 301, reason: 'redirect not followed (HTTP 301)' });
  });

  it('says how long it waited on a time-out', async () => {
    const result = await trusting.send(`${receiver.url}/slow`, HEADERS, BODY, true);
    expect(result).toMatchObject({ success: false, status_code: 0, reason: 'timeout after 0.4 s' });
  });

  it('names a self-signed certificate', async () => {
    const result = await untrusting.send(`${receiver.url}/ok`, HEADERS, BODY, true);
    expect(result).toMatchObject({ success: false, status_code: 0, reason: 'TLS: self-signed certificate' });
  });

  it('says connection refused, and connection reset', async () => {
    const refused = await trusting.send(`https://127.0.0.1:${await closedPort()}/hook`, HEADERS, BODY, true);
    expect(refused).toMatchObject({ success: false, status_code: 0, reason: 'connection refused' });
    const resetting = await resettingServer();
    try {
      const reset = await trusting.send(`http://127.0.0.1:${resetting.port}/hook`, HEADERS, BODY, true);
      expect(reset).toMatchObject({ success: false, status_code: 0 });
      expect(reset.reason).toMatch(/^connection (reset|closed by the receiver)$/);
    } finally {
      await resetting.close();
    }
  });

  it('names the blocked address when the guard is on, for a literal and for a name', async () => {
    const literal = await trusting.send('https://10.0.0.5/hook', HEADERS, BODY, false);
    expect(literal).toMatchObject({ success: false, status_code: 0, reason: 'blocked: private address 10.0.0.5' });
    const named = await trusting.send(`https://localhost:${receiver.port}/hook`, HEADERS, BODY, false);
    expect(named.reason).toMatch(/^blocked: loopback address (127\.0\.0\.1|::1)$/);
  });

  it('says when a name does not resolve', async () => {
    const sender = new WebhookSender({
      timeoutMs: 2_000,
      // The resolver answers as DNS does for a name that does not exist (no network needed).
      resolve: ((hostname: string, _options: unknown, callback: (error: NodeJS.ErrnoException) => void) =>
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }))) as never,
    });
    try {
      const result = await sender.send('https://no-such-host.invalid/hook', HEADERS, BODY, false);
      expect(result).toMatchObject({ success: false, status_code: 0, reason: 'DNS: no-such-host.invalid not found' });
    } finally {
      await sender.close();
    }
  });
});

describe('failure reasons in the log and the API', () => {
  let tls: ReceiverTls;
  let receiver: Receiver;
  let world: AppWorld;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls, () => ({ status: 500, body: 'receiver exploded' }));
    world = await startAppWorld(tls, { log: true });
  });
  afterAll(async () => {
    await world?.app.close();
    await receiver?.close();
    await tls?.dispose();
  });

  it('logs the reason of each failed attempt, shows it in the API, and writes one warn line per attempt', async () => {
    const alice = await customer(world);
    const id = await endpoint(world, alice.token, { url: receiver.url, events: 'site.created' });
    await publish(world, 'site.created', { site_id: 7, domain: 'reasons.example' }, alice.id);
    const entries = await waitForEntries(world, alice.token, id, 2);
    expect(entries.map((e) => e.reason)).toEqual(['HTTP 500', 'HTTP 500']);
    const deliveryId = entries[0].delivery_id;
    const warnLines = () => world.daemon.output().split('\n').filter((line) => line.includes('webhook attempt failed') && line.includes(deliveryId));
    await vi.waitFor(() => expect(warnLines().length).toBeGreaterThanOrEqual(2), { timeout: 10_000, interval: 50 });
    expect(warnLines()).toHaveLength(2);
    expect(warnLines()[0]).toContain('HTTP 500');
    expect(warnLines()[0]).toContain(`endpoint ${id}`);
    expect(warnLines()[0]).toContain('site.created');
  });
});

// Fairness of the dispatcher end to end (issue 19 item 3), the p99 figure of docs/PERFORMANCE.md:
// a customer whose 64 endpoints accept the connection and never answer (each attempt runs into
// its 10 s time-out) holds at most their share of the slots; another customer's deliveries and
// manual test sends go out at once. The scheduling itself is tested in-process in scheduling.test.ts.
import { createServer as createTlsServer, type Server as TlsServer } from 'node:tls';
import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, endpoint, publish, startWorld, type World } from './fixtures.js';

/** An HTTPS server that completes the TLS handshake, reads whatever comes, and never answers. */
interface BlackHole {
  port: number;
  /** TLS connections open now, and the most open at once. */
  open(): number;
  peak(): number;
  close(): Promise<void>;
}

async function startBlackHole(tls: ReceiverTls): Promise<BlackHole> {
  const raw = new Set<Socket>();
  let open = 0;
  let peak = 0;
  const server: TlsServer = createTlsServer({ cert: tls.cert, key: tls.key }, (socket) => {
    open++;
    peak = Math.max(peak, open);
    // Closed as soon as the daemon's end of it arrives (its FIN or reset), not at 'close', which
    // comes a loop turn later: on a busy machine the attempts that replace 64 timed-out ones could
    // finish their handshakes in between and count twice.
    let counted = true;
    const closed = () => {
      if (counted) open--;
      counted = false;
    };
    socket.on('data', () => undefined);
    socket.on('error', closed);
    socket.once('end', closed);
    socket.once('close', closed);
  });
  server.on('connection', (socket: Socket) => {
    raw.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => raw.delete(socket));
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    open: () => open,
    peak: () => peak,
    async close() {
      for (const socket of raw) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

describe('dispatcher fairness', () => {
  let tls: ReceiverTls;
  let world: World;
  let hole: BlackHole;
  let healthy: Receiver;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    world = await startWorld(tls);
    hole = await startBlackHole(tls);
    healthy = await startReceiver(tls);
  });
  afterAll(async () => {
    await world?.daemon.dispose();
    await healthy?.close();
    await hole?.close();
    await tls?.dispose();
  });

  it("keeps a customer's 64 hanging endpoints from delaying another customer's deliveries and test sends", async () => {
    const a = await customer(world);
    const b = await customer(world);
    for (let i = 0; i < 64; i++) await endpoint(world, a.token, { url: `https://127.0.0.1:${hole.port}/hole/${i}` });
    const bEndpoint = await endpoint(world, b.token, { url: healthy.url });

    // 60 events of A: 3,840 deliveries, each attempt hanging until its time-out.
    for (let i = 0; i < 60; i++) expect(await publish(world, 'site.created', { site_id: i + 1, domain: `a${i}.example` }, a.id)).toBe(64);
    // A's endpoints are busy (hanging connections) before B's first event.
    await vi.waitFor(() => expect(hole.open()).toBeGreaterThanOrEqual(32), { timeout: 10_000, interval: 50 });

    // B's events, one every 100 ms, each timed from its publish to its arrival.
    const sentAt = new Map<number, number>();
    for (let i = 0; i < 20; i++) {
      sentAt.set(1000 + i, Date.now());
      expect(await publish(world, 'site.created', { site_id: 1000 + i, domain: `b${i}.example` }, b.id)).toBe(1);
      // Paced like a live tenant's events (the measure is their latency, not a wait for an outcome).
      await delay(100);
    }
    const arrived = await healthy.waitFor(20);
    const latencies = arrived.map((request) => request.at - sentAt.get(JSON.parse(request.body).data.site_id)!);
    const p99 = percentile(latencies, 99);

    // B's manual test answers with its first attempt, past every queued delivery of A.
    const started = Date.now();
    const test = await world.daemon.request('POST', `/webhooks/${bEndpoint}/test`, { token: b.token });
    const testMs = Date.now() - started;
    expect(test.status, test.text).toBe(200);
    expect(test.body.data).toMatchObject({ endpoint_id: bEndpoint, attempt: 1, success: true });

    console.log(`fairness: B p99 ${p99} ms (max ${Math.max(...latencies)} ms over ${latencies.length}), B test ${testMs} ms, A hanging connections at most ${hole.peak()} at once`);
    expect(p99).toBeLessThan(2_000);
    expect(testMs).toBeLessThan(2_000);
    // A is held to its share of the slots: 64 attempts at once.
    expect(hole.peak()).toBeLessThanOrEqual(64);
  }, 90_000);
});

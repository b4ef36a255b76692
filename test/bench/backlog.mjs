// Backlog: a JSON store holding many pending deliveries (not yet due: nothing is sent), and
// what it costs the daemon: time from start to a healthy answer, peak memory, time to stop.
import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { request, Agent } from 'undici';
import { ROOT, makeDataDir, peakRssMb, startDaemon, stopDaemon, tlsOf } from './lib.mjs';

const PER_EVENT = 200;

export async function benchBacklog(pending) {
  const dataDir = await makeDataDir();
  try {
    const { openStore } = await import(join(ROOT, 'dist/store/factory.js'));
    const store = await openStore({ dataDir });
    const now = new Date().toISOString();
    const hooks = [];
    for (let i = 0; i < PER_EVENT; i++) {
      hooks.push(await store.webhooks.insert({ user_id: 1, url: `https://hook-${i}.example.com/in`, secret: `s${i}`, events: '*', active: true, created_at: now, updated_at: now }));
    }
    const due = Date.now() + 24 * 3600_000;
    for (let e = 0; e < pending / PER_EVENT; e += 50) {
      await Promise.all(
        Array.from({ length: 50 }, (_, j) => {
          const body = JSON.stringify({ event: 'site.created', timestamp: now, data: { site_id: e + j + 1, domain: `site-${e + j}.example.com` } });
          const deliveries = hooks.map((hook) => ({ id: randomUUID(), endpoint_id: hook.id, owner_id: 1, event: 'site.created', body, state: 'pending', attempts: 0, next_attempt_at: due, created_at: now }));
          return store.outbox.enqueue({ id: randomUUID(), event: 'site.created', owner_id: null, data: {}, timestamp: now }, deliveries);
        }),
      );
    }
    const count = await store.outbox.pendingCount();
    await store.close();
    const tls = await tlsOf(dataDir);
    const agent = new Agent({ connect: { ca: tls.cert } });
    const started = performance.now();
    const daemon = await startDaemon(dataDir);
    // Healthy: the API answers.
    for (;;) {
      const res = await request(`${daemon.url}/api/v1/health`, { dispatcher: agent }).catch(() => null);
      if (res) {
        await res.body.dump();
        if (res.statusCode === 200) break;
      }
    }
    const startSeconds = (performance.now() - started) / 1000;
    const rss = await peakRssMb(daemon.pid);
    const stopping = performance.now();
    await stopDaemon(daemon);
    const stopSeconds = (performance.now() - stopping) / 1000;
    await agent.close();
    return { pending: count, startSeconds, rss, stopSeconds };
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

// Observability on PostgreSQL, with a cluster of the test's own (it is stopped and started
// again): two daemons of one database report the same, shared queue in their metrics; readiness
// turns 503 within 5 s of the database stopping and 200 within 5 s of its return, while
// liveness (GET /health) stays 200 throughout.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_PASSWORD, initDataDir, makeDataDir, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createDatabase, findPgBin, startCluster, type Cluster } from '../helpers/postgres.js';
import { metricsUrlOf, sample } from '../helpers/prometheus.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';

const bin = findPgBin();
if (!bin) console.warn('skipping the PostgreSQL observability tests: initdb/pg_ctl not found (apt-get install postgresql)');

const EVENTS = 5;

describe.skipIf(!bin)('observability on PostgreSQL', { timeout: 120_000 }, () => {
  let cluster: Cluster;
  let tls: ReceiverTls;
  let receiver: Receiver;
  let daemons: TestDaemon[] = [];
  let token: string;

  const metricsOf = async (daemon: TestDaemon) => {
    const answer = await request((await metricsUrlOf(daemon.dataDir))!);
    return answer.body.text();
  };

  beforeAll(async () => {
    cluster = await startCluster(bin!);
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls);
    const databaseUrl = await createDatabase(cluster.adminUrl, 'panelctl_obs');
    const dirs = [await makeDataDir(), await makeDataDir()];
    await initDataDir(dirs[0], ADMIN_PASSWORD, databaseUrl);
    daemons = await Promise.all(
      dirs.map((dataDir) => startDaemon({ dataDir, databaseUrl, env: { NODE_EXTRA_CA_CERTS: tls.caFile }, args: ['--allow-private-webhooks', '--metrics-port', '0'] })),
    );
    token = await daemons[0].login();
  }, 120_000);

  afterAll(async () => {
    for (const daemon of daemons) await daemon.dispose();
    await receiver?.close();
    await tls?.dispose();
    await cluster?.stop();
  });

  it('two daemons report the same queue depth, the shared outbox\'s', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The receiver holds every answer: the deliveries stay pending (leased, in flight) meanwhile.
    receiver.handle(() => ({ until: held }));
    const created = await daemons[1].request('POST', '/webhooks', { token, body: { url: receiver.url, secret: 'obs-secret', events: 'backup.completed' } });
    expect(created.status, created.text).toBe(201);
    for (let i = 0; i < EVENTS; i++) {
      const published = await daemons[i % 2].request('POST', '/admin/events', { token, body: { event: 'backup.completed', data: { schedule_id: i + 1, name: `n${i}` } } });
      expect(published.status, published.text).toBe(200);
    }
    await receiver.waitFor(EVENTS);
    for (const daemon of daemons) {
      const body = await metricsOf(daemon);
      expect(sample(body, 'panelctl_outbox_pending')).toBe(EVENTS);
      expect(sample(body, 'panelctl_outbox_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
      expect(sample(body, 'panelctl_webhook_endpoints', { state: 'active' })).toBe(1);
    }
    release();
    await vi.waitFor(
      async () => {
        for (const daemon of daemons) expect(sample(await metricsOf(daemon), 'panelctl_outbox_pending')).toBe(0);
      },
      { timeout: 30_000, interval: 250 },
    );
    // Counters stay per daemon: together they made each delivery once.
    const attempts = await Promise.all(daemons.map(async (d) => sample(await metricsOf(d), 'panelctl_webhook_attempts_total', { outcome: 'success', reason: 'none' }) ?? 0));
    expect(attempts.reduce((a, b) => a + b, 0)).toBe(EVENTS);
  });

  it('readiness: 503 naming the store within 5 s of the database stopping, 200 within 5 s of its return; liveness stays 200', async () => {
    for (const daemon of daemons) expect((await daemon.request('GET', '/health/ready')).status).toBe(200);
    await cluster.halt();
    await vi.waitFor(
      async () => {
        for (const daemon of daemons) {
          const ready = await daemon.request('GET', '/health/ready');
          expect(ready.status, ready.text).toBe(503);
          expect(ready.body.error).toBe('not ready');
          expect(ready.body.data.checks.store).not.toBe('ok');
          expect(ready.body.message).toMatch(/^not ready: store: .* \(request id [0-9a-f-]{36}\)$/);
        }
      },
      { timeout: 5_000, interval: 100 },
    );
    for (const daemon of daemons) {
      expect((await daemon.request('GET', '/health')).status).toBe(200);
      expect(daemon.proc.exitCode).toBeNull();
    }
    await cluster.start();
    await vi.waitFor(
      async () => {
        for (const daemon of daemons) {
          const ready = await daemon.request('GET', '/health/ready');
          expect(ready.status, ready.text).toBe(200);
          expect(ready.body.data.checks).toEqual({ store: 'ok', dispatcher: 'ok' });
        }
      },
      { timeout: 5_000, interval: 100 },
    );
    for (const daemon of daemons) expect((await daemon.request('GET', '/health')).status).toBe(200);
  });
});

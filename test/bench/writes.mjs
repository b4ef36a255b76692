// Write benchmark: POST /api/v1/sites from 16 concurrent clients against stores of 1,000,
// 10,000 and 50,000 sites, with the disk's own fsync rate measured in the same run (what a
// durable write costs here at the least). Request limits stay on (mode `both`) with limits
// raised so they do not trip. Loopback only.
import { open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { ROOT, client, login, makeDataDir, startDaemon, stopDaemon, tlsOf } from './lib.mjs';

export const WRITE_CLIENTS = 16;

/** How many appends with fdatasync a second the disk under `dir` takes, one after another. */
export async function fsyncRate(dir, seconds = 2) {
  const path = join(dir, `fsync-probe-${process.pid}`);
  const handle = await open(path, 'a', 0o600);
  const line = Buffer.from(`${'x'.repeat(200)}\n`);
  let count = 0;
  const end = performance.now() + seconds * 1000;
  try {
    while (performance.now() < end) {
      await handle.write(line);
      await handle.datasync();
      count++;
    }
  } finally {
    await handle.close();
    await rm(path, { force: true });
  }
  return count / seconds;
}

/** Seeds `sites` sites for one customer through the store itself (fast: concurrent commits share fsyncs). */
async function seedJson(dataDir, sites) {
  const { openStore } = await import(join(ROOT, 'dist/store/factory.js'));
  const store = await openStore({ dataDir });
  try {
    return await seedStore(store, sites);
  } finally {
    await store.close();
  }
}

export const WRITER_PASSWORD = 'writer-password-1';

export async function seedStore(store, sites) {
  const { hashPassword } = await import(join(ROOT, 'dist/daemon/auth/password.js'));
  const now = new Date().toISOString();
  const customer = await store.users.insert({
    email: 'writer@example.com',
    name: 'Writer',
    role: 'customer',
    password_hash: await hashPassword(WRITER_PASSWORD),
    totp_secret: null,
    totp_pending_secret: null,
    two_factor_enabled: false,
    totp_last_step: null,
    created_at: now,
    updated_at: now,
  });
  const subscription = await store.subscriptions.insert({ customer_id: customer.id, main_domain: 'writes.example.com', is_default: true, status: 'active', created_at: now, updated_at: now });
  const batch = [];
  for (let i = 0; i < sites; i++) {
    batch.push(store.sites.insert({ subscription_id: subscription.id, domain: `seed-${i}.writes.example.com`, created_at: now }));
    if (batch.length >= 500) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
  return { customerId: customer.id, subscriptionId: subscription.id };
}

async function dirBytes(dir) {
  let total = 0;
  for (const name of await readdir(dir)) {
    if (name === 'store.json' || name.startsWith('journal-')) total += (await stat(join(dir, name))).size;
  }
  return total;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

/** `clients` workers POST new sites for `seconds`; answers writes/s with p50/p99 in ms. */
export async function postSites(url, ca, key, subscriptionId, seconds, clients = WRITE_CLIENTS, tag = 'w') {
  const agent = new Agent({ connect: { ca }, connections: clients, pipelining: 1 });
  const latencies = [];
  let failures = 0;
  let next = 0;
  const end = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < end) {
        const i = next++;
        const t0 = performance.now();
        const res = await request(`${url}/api/v1/sites`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ domain: `${tag}-${i}.bench-writes.example.com`, subscription_id: subscriptionId }),
          dispatcher: agent,
        });
        await res.body.text();
        if (res.statusCode !== 201) failures++;
        else latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  await agent.close();
  if (failures > 0) throw new Error(`${failures} POST /sites answered other than 201`);
  latencies.sort((a, b) => a - b);
  return { writes: latencies.length / elapsed, p50: percentile(latencies, 50), p99: percentile(latencies, 99), count: latencies.length };
}

/** Keeps request limits on but out of the way, and makes an API key for the seeded customer. */
export async function prepareWriter(daemon, ca, settings = { rate_limit_mode: 'both', rate_limit_user_per_minute: 1_000_000 }) {
  const admin = await login(daemon.url, ca);
  await admin.call('PUT', '/admin/settings', settings);
  // The customer's own key: POST /sites as an integrator would.
  const { token } = await client(daemon.url, ca).call('POST', '/auth/login', { email: 'writer@example.com', password: WRITER_PASSWORD });
  const { key } = await client(daemon.url, ca, token).call('POST', '/auth/api-keys', { name: 'writer' });
  return key;
}

/** The JSON store rows of the write benchmark. */
export async function benchWritesJson({ sizes = [1_000, 10_000, 50_000], seconds = 10, log = () => undefined, settings } = {}) {
  const rows = [];
  for (const sites of sizes) {
    const dataDir = await makeDataDir();
    try {
      log(`writes json ${sites}: seeding…`);
      const { subscriptionId } = await seedJson(dataDir, sites);
      const fsyncs = await fsyncRate(dataDir);
      const daemon = await startDaemon(dataDir);
      try {
        const tls = await tlsOf(dataDir);
        const key = await prepareWriter(daemon, tls.cert, settings);
        await postSites(daemon.url, tls.cert, key, subscriptionId, 2, WRITE_CLIENTS, 'warm');
        const run = await postSites(daemon.url, tls.cert, key, subscriptionId, seconds);
        rows.push({ store: 'json', sites, ...run, fsyncs, bytes: await dirBytes(dataDir) });
        log(`writes json ${sites}: ${Math.round(run.writes)}/s p50 ${run.p50.toFixed(1)} ms p99 ${run.p99.toFixed(1)} ms (disk ${Math.round(fsyncs)} fsyncs/s)`);
      } finally {
        await stopDaemon(daemon);
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  return rows;
}

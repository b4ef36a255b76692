// Matching at scale: the same dispatch (events fanned out to a few subscribed endpoints) by a
// daemon whose store holds many endpoints that do not listen to the event, against a daemon
// whose store holds only the subscribed ones. Both run side by side, their rounds alternate,
// and the ratio is the median of the rounds' ratios. On the JSON store, or on PostgreSQL (both
// databases in one cluster) when an admin URL is given. Loopback only.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, socketUrlOf } from '../helpers/postgres.ts';
import { ADMIN_PASSWORD, BIN, ROOT, login, makeDataDir, median, pool, startDaemon, startReceiver, stopDaemon, tlsOf } from './lib.mjs';

/** Customers owning the unsubscribed endpoints that are not the admin's. */
const CUSTOMERS = 100;

async function makePgDataDir(url) {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-bench-'));
  const result = spawnSync(process.execPath, [BIN, 'init', '--data-dir', dir, '--database-url', url, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
  if (result.status !== 0) throw new Error(`init --database-url failed: ${result.stderr}`);
  return dir;
}

async function openStore(dataDir, url) {
  if (url) {
    const { PostgresStore } = await import(join(ROOT, 'dist/store/postgres/postgres-store.js'));
    return PostgresStore.open(url);
  }
  const { JsonStore } = await import(join(ROOT, 'dist/store/json/json-store.js'));
  const { layout } = await import(join(ROOT, 'dist/shared/paths.js'));
  return JsonStore.open(layout(dataDir));
}

/**
 * `subscribed` endpoints of the admin (user 1) listening to site.created, and `total - subscribed`
 * that must not receive the admin's events: half the admin's, listening to another event, half
 * customers', listening to everything or to site.created (so tenancy, not the event name, keeps
 * them out).
 */
async function seedEndpoints(store, receiverUrl, total, subscribed) {
  const now = new Date().toISOString();
  const others = total - subscribed;
  const customers = [];
  if (others > 0) {
    for (let i = 0; i < CUSTOMERS; i++) {
      customers.push(
        await store.users.insert({ email: `match-${i}@example.com`, name: `Match ${i}`, role: 'customer', password_hash: 'scrypt$unused', totp_secret: null, totp_pending_secret: null, two_factor_enabled: false, totp_last_step: null, created_at: now, updated_at: now }),
      );
    }
  }
  const hook = (userId, events, i) => store.webhooks.insert({ user_id: userId, url: receiverUrl, secret: `secret-${i}`, events, active: true, created_at: now, updated_at: now });
  for (let i = 0; i < subscribed; i++) await hook(1, 'site.created', i);
  const batch = [];
  for (let i = 0; i < others; i++) {
    batch.push(i % 2 === 0 ? hook(1, 'backup.completed', i) : hook(customers[i % CUSTOMERS].id, i % 4 === 1 ? '*' : 'site.created', i));
    if (batch.length >= 500) await Promise.all(batch.splice(0));
  }
  await Promise.all(batch);
}

/** Publishes `events` site.created events of no owner (admins' endpoints only); deliveries per second. */
async function dispatchRun(publisher, receiver, events, subscribed) {
  receiver.reset();
  const expected = events * subscribed;
  const start = performance.now();
  const done = receiver.waitFor(expected);
  await pool(events, 32, (i) => publisher.call('POST', '/admin/events', { event: 'site.created', data: { site_id: i + 1, domain: `e${i}.example.com` } }));
  const end = await done;
  return expected / ((end - start) / 1000);
}

/**
 * One daemon with `endpoints` endpoints and one with `subscribed`, in alternating rounds.
 * `adminUrl`: on PostgreSQL (a database each in that cluster), else on the JSON store.
 */
export async function benchMatching({ endpoints = 10_000, subscribed = 10, events = 1000, rounds = 5, adminUrl = null, log = () => undefined, settings }) {
  const backend = adminUrl ? 'postgres' : 'json';
  const sides = [];
  let receiver = null;
  try {
    for (const total of [endpoints, subscribed]) {
      const url = adminUrl ? await socketUrlOf(await createDatabase(adminUrl, `bench_match_${total}`)) : null;
      const dataDir = url ? await makePgDataDir(url) : await makeDataDir();
      const side = { total, url, dataDir, daemon: null, rates: [] };
      sides.push(side);
      receiver ??= await startReceiver(await tlsOf(dataDir));
      log(`matching ${backend} ${total}: seeding…`);
      const store = await openStore(dataDir, url);
      await seedEndpoints(store, receiver.url, total, subscribed);
      await store.close();
    }
    // Every daemon trusts the receiver's certificate (the first data directory's).
    const env = { NODE_EXTRA_CA_CERTS: join(sides[0].dataDir, 'tls/cert.pem') };
    for (const side of sides) {
      side.daemon = await startDaemon(side.dataDir, { env: side.url ? { ...env, PANELCTL_DATABASE_URL: side.url } : env });
      const admin = await login(side.daemon.url, (await tlsOf(side.dataDir)).cert);
      await admin.call('PUT', '/admin/settings', settings);
      side.publisher = admin.withToken((await admin.call('POST', '/auth/api-keys', { name: 'publisher' })).key);
      // Warm: a new process runs its first requests on code not yet optimised.
      await dispatchRun(side.publisher, receiver, Math.ceil(events / 4), subscribed);
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) side.rates.push(await dispatchRun(side.publisher, receiver, events, subscribed));
      log(`matching ${backend} round ${round + 1}: ${sides.map((s) => `${s.total}: ${Math.round(s.rates.at(-1))}/s`).join(', ')}`);
    }
    const [large, small] = sides;
    const ratios = large.rates.map((rate, i) => rate / small.rates[i]);
    return {
      backend,
      endpoints,
      subscribed,
      events,
      large: median(large.rates),
      small: median(small.rates),
      ratio: median(ratios),
      ratioMin: Math.min(...ratios),
      ratioMax: Math.max(...ratios),
      rounds: large.rates.map((rate, i) => [rate, small.rates[i]]),
    };
  } finally {
    for (const side of sides) {
      if (side.daemon) await stopDaemon(side.daemon);
      await rm(side.dataDir, { recursive: true, force: true });
    }
    await receiver?.close();
  }
}

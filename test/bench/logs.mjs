// Delivery logs and endpoint health at scale: GET /webhooks/:id/deliveries (100 entries) on
// PostgreSQL against a bare route answering the same bytes, and GET /webhooks?limit=100 with
// 10,000 endpoints (each with a log of mixed outcomes) on both stores, timed request by request.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { createDatabase, socketUrlOf } from '../helpers/postgres.ts';
import { ADMIN_PASSWORD, BIN, ROOT, login, makeDataDir, median, sign, startDaemon, stopDaemon, tlsOf } from './lib.mjs';

/** Entries in each of the large store's endpoint logs (every third a failure). */
const LARGE_LOG_ENTRIES = 20;
const LARGE_REQUESTS = 200;

async function makePgDataDir(url) {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-bench-'));
  const result = spawnSync(process.execPath, [BIN, 'init', '--data-dir', dir, '--database-url', url, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
  if (result.status !== 0) throw new Error(`init --database-url failed: ${result.stderr}`);
  return dir;
}

/** The benchmark's full log of ordinary entries (as run.mjs seeds on the JSON store). */
function fullLog(endpointId, entries, now) {
  return Array.from({ length: entries }, (_, i) => {
    const payload = { event: 'site.created', timestamp: now, data: { site_id: i + 1, domain: `site-${i}.example.com` } };
    const headers = { 'Content-Type': 'application/json', 'User-Agent': 'Panel-WebPanel-Webhook/1.0', 'X-Webhook-Event': 'site.created', 'X-Webhook-Signature': sign('bench-secret', JSON.stringify(payload)), 'X-Webhook-Delivery': `seed-${i}` };
    return { delivery_id: `seed-${i}`, endpoint_id: endpointId, event: 'site.created', payload, attempt: 1, status_code: 200, response: 'ok', success: true, duration_ms: 12, created_at: now, request_headers: headers };
  });
}

/** A shorter log with failures and retries, so health has something to count. */
function mixedLog(endpointId, entries, nowMs) {
  return Array.from({ length: entries }, (_, i) => {
    const failed = i % 3 === 0;
    return {
      delivery_id: `d-${endpointId}-${i - (i % 2)}`,
      endpoint_id: endpointId,
      event: 'site.created',
      payload: { event: 'site.created', timestamp: new Date(nowMs).toISOString(), data: { site_id: i + 1, domain: `site-${i}.example.com` } },
      attempt: 1 + (i % 2),
      status_code: failed ? 500 : 200,
      response: failed ? 'internal error' : 'ok',
      success: !failed,
      reason: failed ? 'HTTP 500' : null,
      duration_ms: 12,
      created_at: new Date(nowMs - (entries - i) * 60_000).toISOString(),
      request_headers: { 'Content-Type': 'application/json' },
    };
  });
}

/**
 * GET /webhooks/:id/deliveries on PostgreSQL against a bare route answering the same bytes, in
 * alternating rounds (`alternate` and `summarise` from run.mjs, API keys as there).
 */
export async function benchLogPostgres(adminUrl, { entries, rounds, settings, alternate, summarise, adminKeys, log }) {
  const { PostgresStore } = await import(join(ROOT, 'dist/store/postgres/postgres-store.js'));
  const url = await socketUrlOf(await createDatabase(adminUrl, 'bench_log'));
  const dataDir = await makePgDataDir(url);
  const store = await PostgresStore.open(url);
  const now = new Date().toISOString();
  const hook = await store.webhooks.insert({ user_id: 1, url: 'https://hooks.example.com/panel', secret: 'bench-secret', events: '*', active: true, created_at: now, updated_at: now });
  await store.deliveryLog.append(fullLog(hook.id, entries, now));
  await store.close();
  const daemon = await startDaemon(dataDir, { env: { PANELCTL_DATABASE_URL: url } });
  const tls = await tlsOf(dataDir);
  let bare;
  try {
    const admin = await login(daemon.url, tls.cert);
    await admin.call('PUT', '/admin/settings', settings);
    const keys = await adminKeys(admin, 8);
    const path = `/api/v1/webhooks/${hook.id}/deliveries`;
    const agent = new Agent({ connect: { ca: tls.cert } });
    const res = await request(`${daemon.url}${path}`, { headers: { authorization: `Bearer ${keys[0]}` }, dispatcher: agent });
    const body = await res.body.text();
    await agent.close();
    if (res.statusCode !== 200 || JSON.parse(body).data.length !== entries) throw new Error(`${path}: ${res.statusCode} ${body.slice(0, 200)}`);
    const bodyFile = join(dataDir, 'bare-log.json');
    await writeFile(bodyFile, body);
    bare = spawn(process.execPath, [join(ROOT, 'test/bench/bare-server.mjs'), join(dataDir, 'tls/cert.pem'), join(dataDir, 'tls/key.pem'), `${path}=${bodyFile}`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise((resolve) => bare.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
    log(`api ${path} on PostgreSQL: daemon and bare route, alternating…`);
    const runs = await alternate({ url: `${daemon.url}${path}`, ca: tls.cert, headers: {}, keys }, { url: `https://127.0.0.1:${port}${path}`, ca: tls.cert, headers: {} }, rounds);
    return summarise(runs.panel, runs.baseline, { path, bytes: Buffer.byteLength(body) });
  } finally {
    if (bare) {
      bare.kill();
      await new Promise((resolve) => (bare.exitCode !== null ? resolve() : bare.once('exit', resolve)));
    }
    await stopDaemon(daemon);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** `count` endpoints of the admin, each with a mixed log, appended a batch of endpoints at a time. */
async function seedEndpoints(store, count) {
  const now = new Date().toISOString();
  const nowMs = Date.now();
  let batch = [];
  for (let i = 0; i < count; i++) {
    const hook = await store.webhooks.insert({ user_id: 1, url: `https://hooks.example.com/${i}`, secret: `secret-${i}`, events: 'backup.completed', active: true, created_at: now, updated_at: now });
    batch.push(...mixedLog(hook.id, LARGE_LOG_ENTRIES, nowMs));
    if (batch.length >= 2000) {
      await store.deliveryLog.append(batch);
      batch = [];
    }
  }
  if (batch.length) await store.deliveryLog.append(batch);
}

/** Times LARGE_REQUESTS sequential GET /webhooks?limit=100 on one keep-alive connection (after the first, timed apart). */
async function timeList(daemon, ca) {
  const admin = await login(daemon.url, ca);
  const { key } = await admin.call('POST', '/auth/api-keys', { name: 'lister' });
  const agent = new Agent({ connect: { ca }, connections: 1 });
  const once = async () => {
    const start = performance.now();
    const res = await request(`${daemon.url}/api/v1/webhooks?limit=100`, { headers: { authorization: `Bearer ${key}` }, dispatcher: agent });
    const body = await res.body.text();
    const ms = performance.now() - start;
    if (res.statusCode !== 200 || JSON.parse(body).data.length !== 100 || !/rel="next"/.test(res.headers.link ?? '')) throw new Error(`GET /webhooks?limit=100: ${res.statusCode} ${body.slice(0, 200)}`);
    return ms;
  };
  try {
    const first = await once();
    const times = [];
    for (let i = 0; i < LARGE_REQUESTS; i++) times.push(await once());
    times.sort((a, b) => a - b);
    return { first, median: median(times), p99: times[Math.floor(times.length * 0.99)], requests: times.length };
  } finally {
    await agent.close();
  }
}

/** GET /webhooks?limit=100 with `count` endpoints on the JSON store and on PostgreSQL (`adminUrl`; null skips it). */
export async function benchWebhooksLarge(adminUrl, { count, settings, log }) {
  const results = {};
  {
    const dataDir = await makeDataDir();
    log(`webhooks ${count} on the JSON store: seeding…`);
    const { JsonStore } = await import(join(ROOT, 'dist/store/json/json-store.js'));
    const { layout } = await import(join(ROOT, 'dist/shared/paths.js'));
    const store = await JsonStore.open(layout(dataDir));
    await seedEndpoints(store, count);
    await store.close();
    const daemon = await startDaemon(dataDir);
    try {
      const ca = (await tlsOf(dataDir)).cert;
      await (await login(daemon.url, ca)).call('PUT', '/admin/settings', settings);
      results.json = await timeList(daemon, ca);
      log(`webhooks ${count} json: ${JSON.stringify(results.json)}`);
    } finally {
      await stopDaemon(daemon);
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  if (adminUrl) {
    const { PostgresStore } = await import(join(ROOT, 'dist/store/postgres/postgres-store.js'));
    const url = await socketUrlOf(await createDatabase(adminUrl, 'bench_webhooks_large'));
    const dataDir = await makePgDataDir(url);
    log(`webhooks ${count} on PostgreSQL: seeding…`);
    const store = await PostgresStore.open(url);
    await seedEndpoints(store, count);
    await store.close();
    const daemon = await startDaemon(dataDir, { env: { PANELCTL_DATABASE_URL: url } });
    try {
      const ca = (await tlsOf(dataDir)).cert;
      await (await login(daemon.url, ca)).call('PUT', '/admin/settings', settings);
      results.postgres = await timeList(daemon, ca);
      log(`webhooks ${count} postgres: ${JSON.stringify(results.postgres)}`);
    } finally {
      await stopDaemon(daemon);
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  return { count, entries: LARGE_LOG_ENTRIES, ...results };
}

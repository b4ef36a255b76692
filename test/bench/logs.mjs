// Delivery logs and endpoint health at scale: GET /webhooks/:id/deliveries (100 entries) on
// PostgreSQL against a bare route answering the same bytes, and GET /webhooks?limit=100 with
// 10,000 endpoints (each with a log of mixed outcomes) on both stores, timed request by request.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { spawn, spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Agent, request } from 'undici';
import { createDatabase, socketUrlOf } from '../helpers/postgres.ts';
import { ADMIN_PASSWORD, BIN, ROOT, login, makeDataDir, median, sign, startDaemon, stopDaemon, tlsOf } from './lib.mjs';

/** Entries in each of the large store's endpoint logs (every third a failure). */
const LARGE_LOG_ENTRIES = 20;
const LARGE_REQUESTS = 200;

async function makePgDataDir(url, bin = BIN) {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-bench-'));
  const result = spawnSync(process.execPath, [bin, 'init', '--data-dir', dir, '--database-url', url, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
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

/** CPU time (user + system) of a process, in µs, from /proc (Linux). */
async function cpuMicros(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/**
 * The CPU of the server processes serving the database at `url` (its connections, as
 * pg_stat_activity lists them), in µs: `start()` notes each connection's CPU, `end()` answers what
 * the connections listed then spent since (all of it for one opened meanwhile: a pool reopens
 * connections it closed while the other sides' rounds ran). The server's own processes and
 * other databases' connections (the other build's daemon, idle or polling) are left out: at a
 * few hundred requests a second their background work would weigh more per request than the
 * request's own statements.
 */
function backendsCpu(url) {
  const db = new URL(url).pathname.slice(1);
  const backends = async () => {
    const client = new pg.Client(url);
    await client.connect();
    try {
      return (await client.query('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db])).rows.map((r) => r.pid);
    } finally {
      await client.end();
    }
  };
  const cpuOf = async (pids) => new Map(await Promise.all(pids.map(async (pid) => [pid, await cpuMicros(pid).catch(() => null)])));
  let before = new Map();
  return {
    async start() {
      before = await cpuOf(await backends());
    },
    async end() {
      let spent = 0;
      for (const [pid, cpu] of await cpuOf(await backends())) if (cpu !== null) spent += cpu - (before.get(pid) ?? 0);
      return spent;
    },
  };
}

/**
 * A cannon round's figures with the CPU per request it cost the process `pid` (`daemon_us`) and,
 * given its database's `url`, that database's server processes (`server_us`, see backendsCpu).
 */
function measured(pid, url) {
  const server = url ? backendsCpu(url) : { start: async () => undefined, end: async () => 0 };
  return async (run) => {
    await server.start();
    const d0 = await cpuMicros(pid);
    const result = await run();
    const d1 = await cpuMicros(pid);
    const spent = await server.end();
    return { result, extra: (r) => ({ daemon_us: (d1 - d0) / r.total, server_us: spent / r.total }) };
  };
}

/**
 * BENCH_LOGS_STATEMENTS=1 (run with BENCH_PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements"):
 * each database's statements by server time, per request of its daemon's rounds (warm-ups included
 * in the counts, so the figures are an upper bound by a few percent).
 */
async function logStatements(url, otherUrl, requests, otherRequests, log) {
  const client = new pg.Client(url);
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    for (const [dbUrl, n] of [[url, requests], [otherUrl, otherRequests]]) {
      if (!n) continue;
      const db = new URL(dbUrl).pathname.slice(1);
      const { rows } = await client.query(
        `SELECT calls::float8 AS calls, total_exec_time::float8 AS ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 120) AS query FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY total_exec_time DESC LIMIT 8`,
        [db],
      );
      log(`  ${db}: statements by server time (${n} requests timed)`);
      for (const row of rows) log(`    ${((row.ms * 1000) / n).toFixed(1)} µs/request, ${(row.calls / n).toFixed(2)} calls/request, ${((row.ms * 1000) / row.calls).toFixed(1)} µs/call: ${row.query}`);
    }
  } finally {
    await client.end();
  }
}

/** A database with the admin's endpoint and its full log, seeded through the store of the build in `root`, and its data directory. */
async function seedLogDatabase(adminUrl, name, entries, root = ROOT, bin = BIN) {
  const { PostgresStore } = await import(join(root, 'dist/store/postgres/postgres-store.js'));
  const url = await socketUrlOf(await createDatabase(adminUrl, name));
  const dataDir = await makePgDataDir(url, bin);
  const store = await PostgresStore.open(url);
  const now = new Date().toISOString();
  const hook = await store.webhooks.insert({ user_id: 1, url: 'https://hooks.example.com/panel', secret: 'bench-secret', events: '*', active: true, created_at: now, updated_at: now });
  await store.deliveryLog.append(fullLog(hook.id, entries, now));
  await store.close();
  return { url, dataDir, hookId: hook.id };
}

/**
 * GET /webhooks/:id/deliveries on PostgreSQL against a bare route answering the same bytes, in
 * alternating rounds (`alternate` and `summarise` from run.mjs, API keys as there), with the CPU
 * per request of the daemon and of the PostgreSQL server. BENCH_LOGS_OTHER=DIR adds the daemon
 * of the checkout built in DIR (its own database on the same cluster, seeded the same way) to
 * each round, to compare two builds in one run.
 */
export async function benchLogPostgres(adminUrl, { entries, rounds, settings, alternate, summarise, adminKeys, log }) {
  const seeded = await seedLogDatabase(adminUrl, 'bench_log', entries);
  const otherRoot = process.env.BENCH_LOGS_OTHER;
  const otherSeeded = otherRoot ? await seedLogDatabase(adminUrl, 'bench_log_other', entries, otherRoot, join(otherRoot, 'bin/panelctl.js')) : null;
  const { dataDir, hookId } = seeded;
  const daemon = await startDaemon(dataDir, { env: { PANELCTL_DATABASE_URL: seeded.url } });
  const other = otherSeeded && (await startDaemon(otherSeeded.dataDir, { env: { PANELCTL_DATABASE_URL: otherSeeded.url }, bin: join(otherRoot, 'bin/panelctl.js') }));
  const tls = await tlsOf(dataDir);
  let bare;
  try {
    const admin = await login(daemon.url, tls.cert);
    await admin.call('PUT', '/admin/settings', settings);
    const keys = await adminKeys(admin, 8);
    const path = `/api/v1/webhooks/${hookId}/deliveries`;
    const agent = new Agent({ connect: { ca: tls.cert } });
    const res = await request(`${daemon.url}${path}`, { headers: { authorization: `Bearer ${keys[0]}` }, dispatcher: agent });
    const body = await res.body.text();
    await agent.close();
    if (res.statusCode !== 200 || JSON.parse(body).data.length !== entries) throw new Error(`${path}: ${res.statusCode} ${body.slice(0, 200)}`);
    const bodyFile = join(dataDir, 'bare-log.json');
    await writeFile(bodyFile, body);
    bare = spawn(process.execPath, [join(ROOT, 'test/bench/bare-server.mjs'), join(dataDir, 'tls/cert.pem'), join(dataDir, 'tls/key.pem'), `${path}=${bodyFile}`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise((resolve) => bare.stdout.once('data', (d) => resolve(Number(String(d).trim()))));
    const others = [];
    if (other) {
      const otherTls = await tlsOf(otherSeeded.dataDir);
      const otherAdmin = await login(other.url, otherTls.cert);
      await otherAdmin.call('PUT', '/admin/settings', settings);
      const otherPath = `/api/v1/webhooks/${otherSeeded.hookId}/deliveries`;
      others.push({ url: `${other.url}${otherPath}`, ca: otherTls.cert, headers: {}, keys: await adminKeys(otherAdmin, 8), measure: measured(other.pid, otherSeeded.url) });
    }
    log(`api ${path} on PostgreSQL: daemon and bare route${other ? ' and the other build' : ''}, alternating…`);
    const runs = await alternate(
      { url: `${daemon.url}${path}`, ca: tls.cert, headers: {}, keys, measure: measured(daemon.pid, seeded.url) },
      { url: `https://127.0.0.1:${port}${path}`, ca: tls.cert, headers: {}, measure: measured(bare.pid, null) },
      rounds,
      others,
    );
    const cpu = (runs) => ({ daemon_us: median(runs.map((r) => r.daemon_us)), server_us: median(runs.map((r) => r.server_us)) });
    const result = summarise(runs.panel, runs.baseline, { path, bytes: Buffer.byteLength(body), cpu: cpu(runs.panel), bareCpu: cpu(runs.baseline) });
    log(`  this build: ${Math.round(result.panel.rps)} vs ${Math.round(result.baseline.rps)} req/s, ratio ${result.ratio.toFixed(2)} (${result.ratioMin.toFixed(2)}–${result.ratioMax.toFixed(2)}); CPU per request: daemon ${result.cpu.daemon_us.toFixed(0)} µs, its PostgreSQL connections ${result.cpu.server_us.toFixed(0)} µs (medians of rounds)`);
    log(`  bare route: CPU per request ${result.bareCpu.daemon_us.toFixed(0)} µs (median of rounds)`);
    if (process.env.BENCH_LOGS_STATEMENTS === '1') await logStatements(seeded.url, otherSeeded?.url, runs.panel.reduce((n, r) => n + r.total, 0), other ? runs.others[0].reduce((n, r) => n + r.total, 0) : 0, log);
    if (other) {
      result.other = summarise(runs.others[0], runs.baseline, { cpu: cpu(runs.others[0]) });
      log(`  other build: ${Math.round(result.other.panel.rps)} req/s, ratio ${result.other.ratio.toFixed(2)} (${result.other.ratioMin.toFixed(2)}–${result.other.ratioMax.toFixed(2)}); CPU per request: daemon ${result.other.cpu.daemon_us.toFixed(0)} µs, its PostgreSQL connections ${result.other.cpu.server_us.toFixed(0)} µs`);
    }
    return result;
  } finally {
    if (bare) {
      bare.kill();
      await new Promise((resolve) => (bare.exitCode !== null ? resolve() : bare.once('exit', resolve)));
    }
    await stopDaemon(daemon);
    if (other) await stopDaemon(other);
    await rm(dataDir, { recursive: true, force: true });
    if (otherSeeded) await rm(otherSeeded.dataDir, { recursive: true, force: true });
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

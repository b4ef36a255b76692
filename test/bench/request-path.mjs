// The request path's CPU in one process, without sockets: `GET /api/v1/sites` (a memoised listing
// of 20 sites, an admin's API key, request limits on as the API benchmark sets them) handed to
// each app's HTTP 'request' listener with real IncomingMessage/ServerResponse objects on a socket
// that discards what is written. No parser, no TLS, no other process: what is left is fastify,
// the daemon's hooks and handler, and Node's response head, measured as CPU per request in
// alternating batches. Two runs of one build agree to about 0.1–0.3 µs under the shared load
// where the API stage's rounds differ by a tenth, so a change of a few tenths of a µs shows.
//
// Usage (after npm run build):
//   node test/bench/request-path.mjs [--batches=N] [--requests=N] [--bare] [ROOT[#nolog|#pg] ...]
//   npx vite-node test/bench/request-path.mjs --pg [...]   (a throwaway PostgreSQL cluster)
// Each ROOT is a built checkout (its dist/ is loaded; default: this one), e.g. /tmp/b-main for
// before/after; `#nolog` builds that app without a logger. `--bare` adds fastify answering the
// same bytes. The first target is the reference of the per-batch differences printed.
// With `--pg` the same data is also seeded into a PostgreSQL database (durable server defaults,
// Unix socket, as the apiPostgres stage runs it) and `ROOT#pg` is that root's app on a
// PostgreSQL store; a ROOT without a flag then stands for both `ROOT` and `ROOT#pg`. The store's
// own work (its hit batches, lease renewals, the socket's reads) runs in this process and counts.
// `--profile=DIR` writes one CPU profile per target, of its measured batches only, to DIR.
// `--ticks` counts each target's process.nextTick calls per request by caller (before the batches);
// `--heap=DIR` writes a sampling heap profile of each target's requests (bytes a request by
// allocating function) to DIR, and prints each target's bytes allocated a request.
// Every YIELD_EVERY requests the loop lets the event loop turn (timers, sockets): a request here
// completes in microtasks and ticks alone, so without it a PostgreSQL store would read its
// answers only between batches, and every hit of a batch would wait (and be kept) until then.
// Requests here go several times faster than a daemon's over TLS, so a PostgreSQL store holds
// several times more hits (each kept for the hit spacing) at each collection than a daemon does:
// its GC figure here overstates what the hits cost a daemon.
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Session } from 'node:inspector/promises';
import { PerformanceObserver } from 'node:perf_hooks';
import { writeFile } from 'node:fs/promises';
import { request, Agent } from 'undici';
import { ROOT, client, login, makeDataDir, median, startDaemon, stopDaemon, tlsOf } from './lib.mjs';

const PG = process.argv.includes('--pg');
const YIELD_EVERY = 64;
const turn = () => new Promise((resolve) => setImmediate(resolve));
const PROFILE_DIR = process.argv.find((a) => a.startsWith('--profile='))?.slice('--profile='.length);

const option = (name, fallback) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const batches = option('batches', 9);
const perBatch = option('requests', 20_000);
const roots = process.argv.slice(2).filter((a) => !a.startsWith('--'));
if (roots.length === 0) roots.push(ROOT);
if (PG) roots.splice(0, roots.length, ...roots.flatMap((spec) => (spec.includes('#') ? [spec] : [spec, `${spec}#pg`])));
const PATH = '/api/v1/sites';

/** A data directory as the API benchmark seeds it: 20 sites, 8 admins with an API key each (in `databaseUrl` when given). */
async function seed(databaseUrl) {
  let dataDir;
  if (databaseUrl) {
    const { makePgDataDir } = await import('./postgres.mjs');
    dataDir = await makePgDataDir(databaseUrl);
  } else dataDir = await makeDataDir();
  const tls = await tlsOf(dataDir);
  const daemon = await startDaemon(dataDir, databaseUrl ? { env: { PANELCTL_DATABASE_URL: databaseUrl } } : {});
  try {
    const admin = await login(daemon.url, tls.cert);
    await admin.call('PUT', '/admin/settings', { rate_limit_mode: 'both', rate_limit_user_per_minute: 1_000_000, rate_limit_login_per_minute: 100_000, rate_limit_reset_per_minute: 100_000, login_max_attempts: 1000 });
    const customer = await admin.call('POST', '/admin/users', { email: 'bench@example.com', name: 'Bench', password: 'bench-password-2', role: 'customer' });
    const sub = await admin.call('POST', '/admin/subscriptions', { customer_id: customer.id, main_domain: 'bench.example.com' });
    for (let i = 0; i < 20; i++) await admin.call('POST', '/sites', { domain: `site-${i}.bench.example.com`, subscription_id: sub.id });
    const keys = [];
    for (let i = 0; i < 8; i++) {
      const email = `bench-admin-${i}@example.com`;
      await admin.call('POST', '/admin/users', { email, name: `Bench admin ${i}`, password: 'bench-password-2', role: 'admin' });
      const { token } = await client(admin.url, admin.ca).call('POST', '/auth/login', { email, password: 'bench-password-2' });
      keys.push((await admin.withToken(token).call('POST', '/auth/api-keys', { name: `bench-${i}` })).key);
    }
    const agent = new Agent({ connect: { ca: tls.cert } });
    const res = await request(`${daemon.url}${PATH}`, { headers: { authorization: `Bearer ${keys[0]}` }, dispatcher: agent });
    const body = await res.body.text();
    await agent.close();
    return { dataDir, keys, body };
  } finally {
    await stopDaemon(daemon);
    await rm(join(dataDir, 'daemon.json'), { force: true });
  }
}

/** Profiles of one target's batches as one (their nodes by call frame and parent, samples and deltas joined). */
function mergeProfiles(profiles) {
  const nodes = [];
  const idOf = new Map();
  const samples = [];
  const timeDeltas = [];
  for (const profile of profiles) {
    const local = new Map();
    const parents = new Map();
    for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
    for (const node of profile.nodes) {
      const parent = parents.has(node.id) ? local.get(parents.get(node.id)) : 0;
      const { functionName, url, lineNumber, columnNumber } = node.callFrame;
      const key = `${parent}|${functionName}|${url}|${lineNumber}|${columnNumber}`;
      let id = idOf.get(key);
      if (id === undefined) {
        id = nodes.length + 1;
        idOf.set(key, id);
        nodes.push({ id, callFrame: node.callFrame, children: [] });
        if (parent) nodes[parent - 1].children.push(id);
      }
      local.set(node.id, id);
    }
    samples.push(...profile.samples.map((s) => local.get(s)));
    timeDeltas.push(...profile.timeDeltas);
  }
  return { nodes, startTime: 0, endTime: timeDeltas.reduce((a, b) => a + b, 0), samples, timeDeltas };
}

/** Takes what a response writes and drops it. */
class NullSocket extends Writable {
  remoteAddress = '127.0.0.1';
  remotePort = 40_000;
  encrypted = true;
  constructor() {
    super({ decodeStrings: false });
  }
  _write(_chunk, _encoding, callback) {
    callback();
  }
  _writev(_chunks, callback) {
    callback();
  }
  setTimeout() {}
  setNoDelay() {}
  setKeepAlive() {}
  ref() {}
  unref() {}
}

/** An app as server.ts builds it (logging at `error` to nowhere), on a copy of the data directory. */
async function appOf(spec, dataDir, databaseUrl) {
  const [root, flag] = spec.split('#');
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-request-path-'));
  await cp(dataDir, dir, { recursive: true });
  const { openStore } = await import(join(root, 'dist/store/factory.js'));
  const { layout } = await import(join(root, 'dist/shared/paths.js'));
  const { buildApp, LOG_REDACT } = await import(join(root, 'dist/daemon/app.js'));
  const { RequestLines, serializeRequest } = await import(join(root, 'dist/daemon/request-logger.js'));
  const store = await openStore({ dataDir: dir, ...(flag === 'pg' ? { databaseUrl } : {}) });
  const nowhere = new Writable({ write: (_chunk, _encoding, callback) => callback() });
  const logging = {
    logger: { level: 'error', redact: { paths: LOG_REDACT, censor: '[redacted]' }, serializers: { req: serializeRequest }, stream: nowhere },
    logController: new RequestLines('error'),
  };
  const app = await buildApp({ store, paths: layout(dir), jwtSecret: new Uint8Array(32).fill(7), allowPrivateWebhooks: true }, flag === 'nolog' ? {} : logging);
  await app.ready();
  return { name: spec, app, close: async () => (await app.close(), await rm(dir, { recursive: true, force: true })) };
}

async function bareOf(body) {
  const Fastify = (await import('fastify')).default;
  const app = Fastify();
  app.get(PATH, async (_request, reply) => reply.header('content-type', 'application/json; charset=utf-8').send(body));
  await app.ready();
  return { name: 'bare fastify', app, close: () => app.close() };
}

let cluster = null;
let pgSeed = null;
if (PG) {
  const { findPgBin, startCluster, createDatabase, socketUrlOf } = await import('../helpers/postgres.ts');
  cluster = await startCluster(findPgBin(), { durable: true });
  const url = await socketUrlOf(await createDatabase(cluster.adminUrl, 'request_path'));
  pgSeed = { url, ...(await seed(url)) };
}
const { dataDir, keys, body } = await seed();
// Both stores hold the same users in the same order, so one key list would do; each keeps its own.
const keysOf = (target) => (target.pg ? pgSeed.keys : keys);
const targets = [];
try {
  for (const spec of roots) {
    const pg = spec.endsWith('#pg');
    targets.push({ ...(await appOf(spec, pg ? pgSeed.dataDir : dataDir, pgSeed?.url)), pg });
  }
  if (process.argv.includes('--bare')) targets.push(await bareOf(body));
  const socket = new NullSocket();
  let sent = 0;
  /** One request through the app's 'request' listener; resolves with the status once finished. */
  const once = (app, keys) => {
    const req = new IncomingMessage(socket);
    req.method = 'GET';
    req.url = PATH;
    req.httpVersionMajor = 1;
    req.httpVersionMinor = 1;
    req.httpVersion = '1.1';
    req.headers = { host: '127.0.0.1:3443', authorization: `Bearer ${keys[sent++ % keys.length]}`, 'user-agent': 'request-path', accept: '*/*' };
    req.complete = true;
    req.push(null);
    const res = new ServerResponse(req);
    res.shouldKeepAlive = true;
    res.assignSocket(socket);
    return new Promise((resolve) => {
      res.on('finish', () => {
        res.detachSocket(socket);
        resolve(res.statusCode);
      });
      app.server.emit('request', req, res);
    });
  };
  for (const target of targets) {
    const status = await once(target.app, keysOf(target));
    if (status !== 200) throw new Error(`${target.name}: ${PATH} answered ${status}`);
    for (let i = 0; i < perBatch; i++) {
      await once(target.app, keysOf(target));
      if (i % YIELD_EVERY === 0) await turn();
    }
    target.us = [];
  }
  // `--ticks`: process.nextTick calls per request for each target, counted by their callers' frames.
  if (process.argv.includes('--ticks')) {
    const original = process.nextTick;
    const N = 2000;
    for (const target of targets) {
      const byCaller = new Map();
      let calls = 0;
      process.nextTick = function (...args) {
        calls++;
        const stack = new Error().stack.split('\n').slice(2, 6).map((l) => l.trim().replace(/^at /, '').replace(/\(.*\/(node_modules\/)?/, '(')).join(' < ');
        byCaller.set(stack, (byCaller.get(stack) ?? 0) + 1);
        return original.apply(process, args);
      };
      const targetKeys = keysOf(target);
      for (let i = 0; i < N; i++) await once(target.app, targetKeys);
      process.nextTick = original;
      console.log(`${target.name}: ${(calls / N).toFixed(2)} nextTick calls a request`);
      for (const [stack, n] of [...byCaller].sort((a, b) => b[1] - a[1])) console.log(`  ${(n / N).toFixed(2)}  ${stack}`);
    }
  }
  // `--heap=DIR`: a sampling heap profile of each target's requests (bytes allocated a request by
  // allocating function, from samples taken every 256 bytes), written to DIR as target-N.heapprofile.
  const HEAP_DIR = process.argv.find((a) => a.startsWith('--heap='))?.slice('--heap='.length);
  if (HEAP_DIR) {
    const heap = new Session();
    heap.connect();
    await heap.post('HeapProfiler.enable');
    for (const [n, target] of targets.entries()) {
      await heap.post('HeapProfiler.startSampling', { samplingInterval: 256, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      const targetKeys = keysOf(target);
      for (let i = 0; i < perBatch; i++) {
        await once(target.app, targetKeys);
        if (i % YIELD_EVERY === 0) await turn();
      }
      const { profile } = await heap.post('HeapProfiler.stopSampling');
      await writeFile(join(HEAP_DIR, `target-${n}.heapprofile`), JSON.stringify(profile));
      // The tree's self sizes are the sampler's estimates of bytes allocated (each sample stands for ~256 bytes).
      const total = (function sum(node) {
        return node.selfSize + node.children.reduce((s, child) => s + sum(child), 0);
      })(profile.head);
      console.log(`${target.name}: ${(total / perBatch).toFixed(0)} bytes allocated a request (estimated by the sampling heap profiler)`);
    }
    heap.disconnect();
  }
  // Profiling: one profile per target, stopped and resumed around its batches (samples of the others left out).
  const session = PROFILE_DIR ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
  }
  // Collections during a target's batches (their number follows what a request allocates, their
  // time what outlives a collection): the target whose batch is running is charged.
  // Entries come later than they happen: each is charged by its start to the batch running then.
  const spans = [];
  const gcs = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const span = spans.find((s) => entry.startTime >= s.from && entry.startTime < s.to);
      if (!span) continue;
      span.target.gcs = (span.target.gcs ?? 0) + 1;
      span.target.gcMs = (span.target.gcMs ?? 0) + entry.duration;
    }
  });
  gcs.observe({ entryTypes: ['gc'] });
  for (let batch = 0; batch < batches; batch++) {
    for (const [n, target] of targets.entries()) {
      if (session) await session.post('Profiler.start');
      const span = { target, from: performance.now(), to: Infinity };
      spans.push(span);
      const before = process.cpuUsage();
      const targetKeys = keysOf(target);
      for (let i = 0; i < perBatch; i++) {
        await once(target.app, targetKeys);
        if (i % YIELD_EVERY === 0) await turn();
      }
      const used = process.cpuUsage(before);
      span.to = performance.now();
      target.us.push((used.user + used.system) / perBatch);
      if (session) (target.profiles ??= []).push((await session.post('Profiler.stop')).profile);
      if (session && batch === batches - 1) await writeFile(join(PROFILE_DIR, `target-${n}.cpuprofile`), JSON.stringify(mergeProfiles(target.profiles)));
    }
  }
  console.log(`CPU per request, median of ${batches} alternating batches of ${perBatch}:`);
  await new Promise((resolve) => setImmediate(resolve));
  gcs.disconnect();
  const gcNote = (target) => `; GC: ${(((target.gcs ?? 0) * 10_000) / (batches * perBatch)).toFixed(2)} collections and ${(((target.gcMs ?? 0) * 1000) / (batches * perBatch)).toFixed(2)} µs a request (×10,000 for collections)`;
  for (const target of targets) console.log(`  ${median(target.us).toFixed(2)} µs (${Math.min(...target.us).toFixed(2)}–${Math.max(...target.us).toFixed(2)})  ${target.name}${gcNote(target)}`);
  for (const target of targets.slice(1)) {
    const differences = target.us.map((us, i) => us - targets[0].us[i]);
    console.log(`  ${target.name} − ${targets[0].name}: median ${median(differences).toFixed(2)} µs per request (batches: ${differences.map((d) => d.toFixed(2)).join(' ')})`);
  }
} finally {
  for (const target of targets) await target.close();
  await rm(dataDir, { recursive: true, force: true });
  if (pgSeed) await rm(pgSeed.dataDir, { recursive: true, force: true });
  if (cluster) await cluster.stop();
}
process.exit(0);

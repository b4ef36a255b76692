// The dispatcher's own work per delivery, without network, TLS or HTTP: one process per run
// opens a JSON store in a temporary directory, runs the Dispatcher with a sender that answers
// 200 on the next turn, and publishes EVENTS events to 10 endpoints through the EventBus (32 at
// once), ROUNDS times; it reports the process's CPU time per delivery (the first round is a
// warm-up). With a second build's directory, runs of the two alternate, so both meet the same
// load from the rest of the machine; the figure to compare is the median of the paired ratios.
// Not part of `npm run bench`; it needs `npm run build` (it loads dist/).
//   node test/bench/dispatch-inproc.mjs [ROOT] [OTHER_ROOT] [--runs=6] [--rounds=4]
// DISPATCH_INPROC_DATABASE_URL=postgres://…/postgres (a cluster's admin URL): each run uses a new
// database there instead of a JSON store, and the cluster's CPU per delivery is reported beside
// the process's (its user and system parts apart).
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { clusterCpu, postmasterPid } from './cluster-cpu.mjs';

const EVENTS = 1000;
const ENDPOINTS = 10;
const args = process.argv.slice(2);
const flag = (name, fallback) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const roots = args.filter((a) => !a.startsWith('--')).map((r) => resolve(r));

/** One run in this process: CPU µs per delivery of each round after the first. */
async function run(root, rounds) {
  const { Dispatcher } = await import(join(root, 'dist/daemon/dispatcher/dispatcher.js'));
  const { EventBus } = await import(join(root, 'dist/daemon/dispatcher/bus.js'));
  const { openStore } = await import(join(root, 'dist/store/factory.js'));
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-inproc-'));
  const adminUrl = process.env.DISPATCH_INPROC_DATABASE_URL;
  const databaseUrl = adminUrl ? await freshDatabase(adminUrl) : undefined;
  const postmaster = adminUrl ? await postmasterPid(adminUrl) : null;
  const store = await openStore({ dataDir: dir, create: true, databaseUrl });
  const now = () => Date.now();
  const answer = { status_code: 200, response: 'ok', success: true, duration_ms: 1, reason: null };
  const sender = { send: () => new Promise((done) => setImmediate(done, { ...answer })), close: async () => undefined };
  const dispatcher = new Dispatcher({ store, clock: now, sender, allowPrivate: () => true });
  let made = 0;
  let waiting = null;
  dispatcher.onAttempt(() => {
    made++;
    if (waiting && made >= waiting.count) waiting.resolve();
  });
  const at = new Date().toISOString();
  const user = await store.users.insert({ email: 'bench@example.test', name: 'bench', role: 'customer', password_hash: 'x', totp_secret: null, totp_pending_secret: null, two_factor_enabled: false, totp_last_step: null, created_at: at, updated_at: at });
  for (let i = 0; i < ENDPOINTS; i++) await store.webhooks.insert({ user_id: user.id, url: `https://receiver.test/${i}`, secret: `secret-${i}`, events: '*', active: true, created_at: at, updated_at: at });
  const events = new EventBus(store, now);
  dispatcher.start();
  const cpu = [];
  try {
    for (let round = 0; round < rounds; round++) {
      made = 0;
      const count = EVENTS * ENDPOINTS;
      const all = new Promise((resolve) => (waiting = { count, resolve }));
      const before = process.cpuUsage();
      const clusterBefore = postmaster ? await clusterCpu(postmaster) : 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < EVENTS) {
            const i = next++;
            await events.publish({ event: 'site.created', data: { site_id: i + 1, domain: `e${i}.example.com` }, owner_id: user.id });
          }
        }),
      );
      await all;
      const used = process.cpuUsage(before);
      const cluster = postmaster ? ((await clusterCpu(postmaster)) - clusterBefore) * 1e6 : 0;
      cpu.push({ total: (used.user + used.system) / count, user: used.user / count, system: used.system / count, cluster: cluster / count });
    }
  } finally {
    await dispatcher.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
  return cpu.slice(1);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** A new database on the cluster of `adminUrl`, its URL. */
async function freshDatabase(adminUrl) {
  const { default: pg } = await import('pg');
  const name = `inproc_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The rounds' medians of each figure (µs a delivery). */
function summary(rounds) {
  return Object.fromEntries(Object.keys(rounds[0]).map((key) => [key, median(rounds.map((r) => r[key]))]));
}

if (process.env.DISPATCH_INPROC_CHILD) {
  process.stdout.write(JSON.stringify(await run(process.env.DISPATCH_INPROC_CHILD, flag('rounds', 4))));
} else {
  const builds = roots.length ? roots : [fileURLToPath(new URL('../../', import.meta.url))];
  const runs = flag('runs', 6);
  const results = builds.map(() => []);
  for (let i = 0; i < runs; i++) {
    // Which build goes first alternates.
    const order = i % 2 === 0 ? builds.map((_, b) => b) : builds.map((_, b) => builds.length - 1 - b);
    for (const b of order) {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...args], { env: { ...process.env, DISPATCH_INPROC_CHILD: builds[b] }, encoding: 'utf8' });
      if (child.status !== 0) throw new Error(`run of ${builds[b]} failed: ${child.stderr}`);
      results[b].push(summary(JSON.parse(child.stdout)));
    }
    const show = (r) => `${r.total.toFixed(1)} (user ${r.user.toFixed(1)}, system ${r.system.toFixed(1)}${r.cluster ? `, cluster ${r.cluster.toFixed(1)}` : ''})`;
    process.stderr.write(`run ${i + 1}: ${results.map((r) => show(r.at(-1))).join(' / ')} µs a delivery\n`);
  }
  const key = process.env.DISPATCH_INPROC_DATABASE_URL ? (r) => r.total + r.cluster : (r) => r.total;
  builds.forEach((root, b) => console.log(`${root}: median ${median(results[b].map((r) => r.total)).toFixed(1)} µs a delivery (runs ${results[b].map((r) => r.total.toFixed(1)).join(', ')})${process.env.DISPATCH_INPROC_DATABASE_URL ? `, cluster ${median(results[b].map((r) => r.cluster)).toFixed(1)}` : ''}`));
  if (builds.length === 2) console.log(`first / second, median of paired runs (process${process.env.DISPATCH_INPROC_DATABASE_URL ? ' + cluster' : ''}): ${median(results[0].map((v, i) => key(v) / key(results[1][i]))).toFixed(3)}`);
}

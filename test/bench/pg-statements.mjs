// The server's CPU for the dispatcher's two hottest writes on PostgreSQL, per row, without the
// daemon: `publish` (an event's deliveries, 26 events of 10 endpoints a statement) and `record`
// (256 log entries a statement), each sent by one connection whose backend's CPU is read from
// /proc before and after. The dispatch benchmarks' per-delivery figures move with batch sizes,
// which move with the machine's load; here every statement has the same shape, so a change to
// a statement or the schema shows in a few rounds even on a busy machine. With two builds, each
// has its own database on one durable cluster and their rounds alternate; the figure to compare
// is the median of the paired ratios. Not part of `npm run bench`; it needs `npm run build`
// (it loads dist/ of each build) and runs under vite-node (the tests' cluster helper).
//   npx vite-node test/bench/pg-statements.mjs [ROOT] [OTHER_ROOT] [--rounds=8]
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import pg from 'pg';
import { createDatabase, findPgBin, startCluster } from '../helpers/postgres.ts';
import { ROOT, median } from './lib.mjs';

const args = process.argv.slice(2);
const rounds = Number(args.find((a) => a.startsWith('--rounds='))?.split('=')[1] ?? 8);
const roots = args.filter((a) => !a.startsWith('--')).map((r) => resolve(r));
if (roots.length === 0) roots.push(ROOT);
const ENDPOINTS = 10;
const EVENTS = 26;
// BENCH_STATEMENTS_ENTRIES: entries a record statement (a dispatcher under the benchmark's load records about 50).
const ENTRIES = Number(process.env.BENCH_STATEMENTS_ENTRIES ?? 256);
const STATEMENTS = 50;

/** CPU seconds of one process (user and system). */
async function cpuOf(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A build's database with one customer and ENDPOINTS endpoints, and its statements. */
async function side(root, adminUrl) {
  const { PostgresStore } = await import(join(root, 'dist/store/postgres/postgres-store.js'));
  const { RECORD_SQL, recordValues } = await import(join(root, 'dist/store/postgres/repositories/record.js'));
  const { PUBLISH_SQL } = await import(join(root, 'dist/store/postgres/repositories/outbox.js'));
  const url = await createDatabase(adminUrl, 'bench_statements');
  const store = await PostgresStore.open(url);
  const at = new Date().toISOString();
  const user = await store.users.insert({ email: 'bench@example.test', name: 'bench', role: 'customer', password_hash: 'x', totp_secret: null, totp_pending_secret: null, two_factor_enabled: false, totp_last_step: null, created_at: at, updated_at: at });
  const endpoints = [];
  for (let i = 0; i < ENDPOINTS; i++) endpoints.push((await store.webhooks.insert({ user_id: user.id, url: `https://receiver.test/${i}`, secret: `secret-${i}`, events: '*', active: true, created_at: at, updated_at: at })).id);
  await store.close();
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
  // The record goes on a connection of its own set as the dispatcher's work pool is (no
  // sequential scans): on the publishing connection's settings its plan, made when the round's
  // vacuum had just emptied the log, scanned the table on every statement.
  const recorder = new pg.Client({ connectionString: url });
  await recorder.connect();
  await recorder.query('SET enable_seqscan = off');
  const recorderPid = (await recorder.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  const body = JSON.stringify({ event: 'site.created', timestamp: at, data: { site_id: 1, domain: 'e1.example.com' } });
  // An attempt's log entry as the dispatcher writes it (the signed request's headers included).
  const headers = { 'content-type': 'application/json', 'user-agent': 'panelctl-webhooks', 'x-webhook-id': 'id', 'x-webhook-event': 'site.created', 'x-webhook-timestamp': '1700000000', 'x-webhook-signature': `sha256=${'a'.repeat(64)}` };
  const entries = Array.from({ length: ENTRIES }, (_, i) => ({ delivery_id: crypto.randomUUID(), endpoint_id: endpoints[i % ENDPOINTS], event: 'site.created', payload: JSON.parse(body), attempt: 1, status_code: 200, response: 'ok', success: true, duration_ms: 1.25, created_at: at, request_headers: headers, reason: null, daemon: 'host:1' }));
  const publish = () => {
    const ids = Array.from({ length: EVENTS }, () => crypto.randomUUID());
    return client.query(PUBLISH_SQL, [ids, ids.map(() => 'site.created'), ids.map(() => user.id), ids.map(() => '{"site_id":1}'), ids.map(() => at), ids.map(() => body), ids.map(() => Date.now()), ids.map(() => at)]);
  };
  const record = () => recorder.query(RECORD_SQL, recordValues('bench', [], entries, []));
  return { root, client, recorder, pid: rows[0].pid, recorderPid, publish, record, published: [], recorded: [] };
}

/** The backend's CPU (µs) per row of `count` statements after three unmeasured ones. */
async function perRow(pid, statement, rows) {
  for (let i = 0; i < 3; i++) await statement();
  const before = await cpuOf(pid);
  for (let i = 0; i < STATEMENTS; i++) await statement();
  return (((await cpuOf(pid)) - before) * 1e6) / (STATEMENTS * rows);
}

const cluster = await startCluster(findPgBin(), { durable: true });
try {
  const sides = [];
  for (const root of roots) sides.push(await side(root, cluster.adminUrl));
  for (let round = 0; round < rounds; round++) {
    for (const s of round % 2 === 0 ? sides : [...sides].reverse()) {
      // Each round starts from the same tables: the last round's rows deleted and vacuumed away.
      await s.client.query('DELETE FROM deliveries');
      await s.client.query('DELETE FROM delivery_log');
      await s.client.query('VACUUM deliveries, delivery_log');
      s.published.push(await perRow(s.pid, s.publish, EVENTS * ENDPOINTS));
      s.recorded.push(await perRow(s.recorderPid, s.record, ENTRIES));
    }
    process.stderr.write(`round ${round + 1}: ${sides.map((s) => `publish ${s.published.at(-1).toFixed(1)}, record ${s.recorded.at(-1).toFixed(1)}`).join(' | ')} µs a row\n`);
  }
  for (const s of sides) console.log(`${s.root}: publish ${median(s.published).toFixed(1)} µs a delivery, record ${median(s.recorded).toFixed(1)} µs an entry (server CPU, median of ${rounds} rounds)`);
  if (sides.length === 2) {
    const paired = (key) => median(sides[0][key].map((v, i) => v / sides[1][key][i])).toFixed(3);
    console.log(`first / second, median of paired rounds: publish ${paired('published')}, record ${paired('recorded')}`);
  }
  for (const s of sides) await Promise.all([s.client.end(), s.recorder.end()]);
} finally {
  await cluster.stop();
}

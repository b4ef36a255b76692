// panelctl's dispatcher on PostgreSQL against its peer, graphile-worker 0.17, on one cluster:
// the same receiver, the same signed POSTs (one per event and endpoint), 32 publishers at a time.
// panelctl's events come through its API (POST /admin/events, each fanned out to every
// endpoint); graphile-worker's jobs are queued with addJobs from this process, ten (one per
// endpoint) per call. Both are measured from the first publish to the receiver's last answer,
// with the CPU of the daemon or the worker process and of the database cluster in that time.
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { createDatabase, socketUrlOf } from '../helpers/postgres.ts';
import { ROOT, cpuSeconds, login, median, pool, startDaemon, startReceiver, stopDaemon, tlsOf } from './lib.mjs';
import { makePgDataDir } from './postgres.mjs';

/** The postmaster's pid: the parent of this connection's backend. */
export async function postmasterPid(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
    const stat = await readFile(`/proc/${rows[0].pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } finally {
    await client.end();
  }
}

/** CPU seconds of the cluster: the postmaster (with its reaped children) and every live child. */
export async function clusterCpu(postmaster) {
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = await readFile(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pid = Number(entry);
    if (pid === postmaster) total += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    else if (Number(fields[1]) === postmaster) total += Number(fields[11]) + Number(fields[12]);
  }
  return total / 100;
}

function startWorker(url, ca) {
  const proc = spawn(process.execPath, [join(ROOT, 'test/bench/graphile-worker.mjs')], {
    env: { ...process.env, DATABASE_URL: url, BENCH_CA: ca },
    // graphile-worker's own logger (BENCH_GRAPHILE_LOGGER=default) writes a line per job to stdout: to a file, as a service's log would go.
    stdio: ['ignore', process.env.BENCH_GRAPHILE_LOGGER === 'default' ? openSync(join(tmpdir(), 'graphile-worker-bench.log'), 'w') : 'inherit', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`graphile-worker exited ${code}`)));
    createInterface({ input: proc.stderr }).on('line', (line) => (line === 'ready' ? resolve({ proc, pid: proc.pid }) : process.stderr.write(`${line}\n`)));
  });
}

/**
 * `events` events × `endpoints` endpoints per round, `rounds` alternating rounds (panelctl, then
 * graphile-worker; each warmed first with an unmeasured round). Ratios are medians of the rounds' ratios.
 *
 * BENCH_GRAPHILE_OTHER=DIR adds a third side: the daemon of the checkout built in DIR (its own
 * bin/panelctl.js and dist/, its own database on the same cluster), measured in the same rounds,
 * to tell whether a change of ratio comes from the daemon or from the bench. With
 * BENCH_GRAPHILE_STATEMENTS=1 (the cluster loads pg_stat_statements) each side's statements and
 * server execution time per delivery are counted too.
 */
export async function benchGraphile(adminUrl, { events, endpoints, rounds, log = () => undefined, settings }) {
  const panelUrl = await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_panel'));
  const workerUrl = await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_worker'));
  const otherRoot = process.env.BENCH_GRAPHILE_OTHER;
  const otherUrl = otherRoot ? await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_other')) : null;
  const counting = process.env.BENCH_GRAPHILE_STATEMENTS === '1';
  const dir = await makePgDataDir(panelUrl);
  const otherDir = otherRoot ? await makePgDataDir(otherUrl, join(otherRoot, 'bin/panelctl.js')) : null;
  const tls = await tlsOf(dir);
  const ca = join(dir, 'tls/cert.pem');
  const receiver = await startReceiver(tls);
  const daemon = await startDaemon(dir, { env: { PANELCTL_DATABASE_URL: panelUrl, NODE_EXTRA_CA_CERTS: ca } });
  const other = otherRoot ? await startDaemon(otherDir, { env: { PANELCTL_DATABASE_URL: otherUrl, NODE_EXTRA_CA_CERTS: ca }, bin: join(otherRoot, 'bin/panelctl.js') }) : null;
  const { makeWorkerUtils } = await import('graphile-worker');
  const utils = await makeWorkerUtils({ connectionString: workerUrl });
  const stats = new pg.Client({ connectionString: panelUrl });
  await stats.connect();
  let worker = null;
  try {
    if (counting) await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await utils.migrate();
    worker = await startWorker(workerUrl, ca);
    const postmaster = await postmasterPid(panelUrl);
    const publisherOf = async (side, cert) => {
      const admin = await login(side.url, cert);
      await admin.call('PUT', '/admin/settings', settings);
      for (let i = 0; i < endpoints; i++) await admin.call('POST', '/webhooks', { url: receiver.url, secret: `secret-${i}`, events: 'site.created' });
      return admin.withToken((await admin.call('POST', '/auth/api-keys', { name: 'publisher' })).key);
    };
    const publisher = await publisherOf(daemon, tls.cert);
    const otherPublisher = other ? await publisherOf(other, (await tlsOf(otherDir)).cert) : null;
    const data = (i) => ({ site_id: i + 1, domain: `e${i}.example.com` });

    /** Statements and server execution time (ms) in `database` since the last reset. */
    const statements = async (url) => {
      const database = decodeURIComponent(new URL(url).pathname.slice(1));
      const { rows } = await stats.query(
        'SELECT coalesce(sum(calls), 0)::float8 AS calls, coalesce(sum(total_exec_time), 0)::float8 AS ms FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1)',
        [database],
      );
      const top = await stats.query(
        `SELECT calls::float8 AS calls, total_exec_time::float8 AS ms, rows::float8 AS rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY total_exec_time DESC LIMIT 8`,
        [database],
      );
      return { ...rows[0], top: top.rows };
    };
    const measure = async (pid, url, count, publish) => {
      receiver.reset();
      const expected = count * endpoints;
      if (counting) await stats.query('SELECT pg_stat_statements_reset()');
      const [cpu0, db0] = [await cpuSeconds(pid), await clusterCpu(postmaster)];
      const start = performance.now();
      const done = receiver.waitFor(expected);
      await pool(count, 32, publish);
      const seconds = ((await done) - start) / 1000;
      const [cpu1, db1] = [await cpuSeconds(pid), await clusterCpu(postmaster)];
      const result = { rate: expected / seconds, cpuMs: ((cpu1 - cpu0) * 1000) / expected, dbCpuMs: ((db1 - db0) * 1000) / expected };
      if (counting) {
        // A side's statements may go on a moment after its receiver's last answer (outcomes recorded).
        await new Promise((r) => setTimeout(r, 200));
        const s = await statements(url);
        Object.assign(result, { statements: s.calls / expected, execMs: s.ms / expected });
        // BENCH_GRAPHILE_STATEMENTS_TOP=1: each round's costliest statements, per delivery, on stderr.
        if (process.env.BENCH_GRAPHILE_STATEMENTS_TOP === '1') {
          for (const t of s.top) process.stderr.write(`  ${(t.calls / expected).toFixed(4)} calls ${((t.ms * 1000) / expected).toFixed(1)} µs ${(t.rows / expected).toFixed(2)} rows/delivery  ${t.query}\n`);
        }
      }
      return result;
    };
    const panelRound = (count) => measure(daemon.pid, panelUrl, count, (i) => publisher.call('POST', '/admin/events', { event: 'site.created', data: data(i) }));
    const otherRound = (count) => measure(other.pid, otherUrl, count, (i) => otherPublisher.call('POST', '/admin/events', { event: 'site.created', data: data(i) }));
    const workerRound = (count) =>
      measure(worker.pid, workerUrl, count, (i) =>
        utils.addJobs(Array.from({ length: endpoints }, (_, e) => ({ identifier: 'deliver', payload: { url: receiver.url, secret: `secret-${e}`, event: 'site.created', data: data(i) } }))),
      );

    // A whole unmeasured round a side: after a quarter round, a fresh daemon's first measured
    // round still ran at about half the rate of its later ones.
    await panelRound(events);
    if (other) await otherRound(events);
    await workerRound(events);
    const panel = [];
    const peer = [];
    const older = [];
    for (let round = 0; round < rounds; round++) {
      log(`graphile: panelctl (round ${round + 1})…`);
      panel.push(await panelRound(events));
      if (other) {
        log(`graphile: panelctl, the other build (round ${round + 1})…`);
        older.push(await otherRound(events));
      }
      log(`graphile: graphile-worker (round ${round + 1})…`);
      peer.push(await workerRound(events));
      log(
        `graphile round ${round + 1}: panelctl ${Math.round(panel.at(-1).rate)}/s${other ? `, other build ${Math.round(older.at(-1).rate)}/s` : ''}, graphile-worker ${Math.round(peer.at(-1).rate)}/s` +
          (counting ? ` (statements per delivery ${panel.at(-1).statements.toFixed(2)}${other ? ` / ${older.at(-1).statements.toFixed(2)}` : ''} / ${peer.at(-1).statements.toFixed(2)})` : ''),
      );
    }
    const ratios = (key, a, b) => {
      const values = a.map((r, i) => r[key] / b[i][key]);
      return { ratio: median(values), range: [Math.min(...values), Math.max(...values)] };
    };
    const summary = (side) => ({
      rate: median(side.map((r) => r.rate)),
      cpuMs: median(side.map((r) => r.cpuMs)),
      dbCpuMs: median(side.map((r) => r.dbCpuMs)),
      ...(counting ? { statements: median(side.map((r) => r.statements)), execMs: median(side.map((r) => r.execMs)) } : {}),
    });
    return {
      events,
      endpoints,
      panel: summary(panel),
      peer: summary(peer),
      rate: ratios('rate', panel, peer),
      cpu: ratios('cpuMs', panel, peer),
      dbCpu: ratios('dbCpuMs', panel, peer),
      rounds: panel.map((r, i) => [r.rate, peer[i].rate]),
      ...(other ? { other: { root: otherRoot, ...summary(older), rate: ratios('rate', older, peer), vsPanel: ratios('rate', older, panel) } } : {}),
    };
  } finally {
    if (worker) {
      worker.proc.removeAllListeners('exit');
      worker.proc.kill('SIGTERM');
      await new Promise((r) => (worker.proc.exitCode !== null ? r() : worker.proc.once('exit', r)));
    }
    await utils.release();
    await stats.end();
    if (other) await stopDaemon(other);
    await stopDaemon(daemon);
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
    if (otherDir) await rm(otherDir, { recursive: true, force: true });
  }
}

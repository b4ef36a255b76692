// panelctl's dispatcher on PostgreSQL against its peer, graphile-worker 0.17, on one cluster:
// the same receiver, the same signed POSTs (one per event and endpoint), 32 publishers at a time.
// panelctl's events come through its API (POST /admin/events, each fanned out to every
// endpoint); graphile-worker's jobs are queued with addJobs from this process, ten (one per
// endpoint) per call. Both are measured from the first publish to the receiver's last answer,
// with the CPU of the daemon or the worker process and of the database cluster in that time.
import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import pg from 'pg';
import { createDatabase, socketUrlOf } from '../helpers/postgres.ts';
import { clusterCpu, postmasterPid } from './cluster-cpu.mjs';
import { ROOT, cpuSeconds, login, median, pool, startDaemon, startReceiver, stopDaemon, tlsOf } from './lib.mjs';
import { makePgDataDir } from './postgres.mjs';

/**
 * The kind of a cluster process from its command line: `backend <database>`, or the auxiliary
 * process's own title (autovacuum worker, walwriter, checkpointer, background writer, …).
 */
function processKind(cmdline) {
  const title = cmdline.replace(/\0/g, ' ').trim().replace(/^postgres:\s*/, '');
  const aux = ['autovacuum worker', 'autovacuum launcher', 'walwriter', 'checkpointer', 'background writer', 'logical replication launcher', 'archiver'];
  const known = aux.find((name) => title.startsWith(name));
  if (known) return known;
  // A backend's title: "user database [local] state" (or "host(port)").
  const parts = title.split(' ');
  return parts.length >= 2 ? `backend ${parts[1]}` : title;
}

/**
 * Samples the CPU of every child of the postmaster every `everyMs` while a round runs, so that
 * short-lived processes (autovacuum workers, which the postmaster reaps into its cutime) are
 * counted by kind. A process that ended between samples counts what its last sample saw; the
 * rest of the reaped children's CPU is answered as `reaped unsampled`.
 */
export function clusterSampler(postmaster, everyMs = 20) {
  const seen = new Map(); // pid -> { kind, first: [utime, stime], last: [utime, stime] }
  let postmaster0 = null;
  let stopped = false;
  const sample = async () => {
    for (const entry of await readdir('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const pid = Number(entry);
      let stat;
      try {
        stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue;
      }
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cpu = [Number(fields[11]), Number(fields[12])];
      if (pid === postmaster) {
        const own = [...cpu, Number(fields[13]), Number(fields[14])];
        if (!postmaster0) postmaster0 = own;
        seen.set(pid, { kind: 'postmaster', first: postmaster0, last: own });
        continue;
      }
      if (Number(fields[1]) !== postmaster) continue;
      const known = seen.get(pid);
      if (known) known.last = cpu;
      else {
        let kind = 'unknown';
        try {
          kind = processKind(await readFile(`/proc/${entry}/cmdline`, 'utf8'));
        } catch {
          continue;
        }
        // A process first seen after the first sample was forked during the round: from zero.
        seen.set(pid, { kind, first: first ? cpu : [0, 0], last: cpu, born: !first });
      }
    }
  };
  let first = true;
  const started = sample().then(() => {
    first = false;
  });
  const loop = (async () => {
    await started;
    while (!stopped) {
      await new Promise((r) => setTimeout(r, everyMs));
      await sample();
    }
  })();
  return {
    started,
    /** CPU seconds by kind ({user, system}) since the first sample. */
    async stop() {
      stopped = true;
      await loop;
      await sample();
      const kinds = {};
      const add = (kind, user, system) => {
        const k = (kinds[kind] ??= { user: 0, system: 0 });
        k.user += user / 100;
        k.system += system / 100;
      };
      let reapedSampled = [0, 0];
      for (const [pid, p] of seen) {
        if (pid === postmaster) {
          add('postmaster', p.last[0] - p.first[0], p.last[1] - p.first[1]);
          continue;
        }
        add(p.kind, p.last[0] - p.first[0], p.last[1] - p.first[1]);
        let alive = true;
        try {
          await readFile(`/proc/${pid}/stat`, 'utf8');
        } catch {
          alive = false;
        }
        if (!alive) reapedSampled = [reapedSampled[0] + p.last[0], reapedSampled[1] + p.last[1]];
      }
      const born = {};
      for (const p of seen.values()) if (p.born) born[p.kind] = (born[p.kind] ?? 0) + 1;
      if (Object.keys(born).length > 0) kinds.born = born;
      const pm = seen.get(postmaster);
      if (pm) add('reaped unsampled', pm.last[2] - pm.first[2] - reapedSampled[0], pm.last[3] - pm.first[3] - reapedSampled[1]);
      return kinds;
    },
  };
}

/**
 * The cluster's WAL and transaction counters: WAL position and pg_stat_wal (cluster-wide),
 * checkpoints, and `database`'s commits and row changes.
 */
export async function walCounters(client, database) {
  const { rows } = await client.query(
    `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS lsn, w.wal_records::float8 AS records, w.wal_fpi::float8 AS fpi, w.wal_bytes::float8 AS wal_bytes,
            w.wal_write::float8 AS wal_write, w.wal_sync::float8 AS wal_sync,
            (b.checkpoints_timed + b.checkpoints_req)::float8 AS checkpoints, b.buffers_backend_fsync::float8 AS backend_fsync,
            d.xact_commit::float8 AS commits, d.xact_rollback::float8 AS rollbacks,
            d.tup_inserted::float8 AS inserted, d.tup_updated::float8 AS updated, d.tup_deleted::float8 AS deleted,
            (SELECT sum(n_tup_hot_upd)::float8 FROM pg_stat_all_tables t WHERE t.schemaname = 'public') AS hot_updated,
            (SELECT coalesce(sum(autovacuum_count), 0)::float8 FROM pg_stat_all_tables t WHERE t.schemaname = 'public') AS autovacuums,
            (SELECT coalesce(sum(vacuum_count), 0)::float8 FROM pg_stat_all_tables t WHERE t.schemaname = 'public') AS vacuums
     FROM pg_stat_wal w, pg_stat_bgwriter b, pg_stat_database d WHERE d.datname = $1`,
    [database],
  );
  const r = rows[0];
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, Number(v)]));
}

/** The pids of the postmaster's backends connected to `database`. */
async function backendsOf(postmaster, database) {
  const pids = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) !== postmaster) continue;
      if (processKind(await readFile(`/proc/${entry}/cmdline`, 'utf8')) === `backend ${database}`) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
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
 * to tell whether a change of ratio comes from the daemon or from the bench. The third side
 * shares the cluster with graphile-worker: compare it with panelctl, not with graphile-worker,
 * whose rounds it can slow (an older build's daemon beside it has raised graphile-worker's
 * cluster CPU per job by more than half); the ratio to graphile-worker is the two-sided run's. With
 * BENCH_GRAPHILE_STATEMENTS=1 (the cluster loads pg_stat_statements) each side's statements and
 * server execution time per delivery are counted too.
 */
export async function benchGraphile(adminUrl, { events, endpoints, rounds, log = () => undefined, settings }) {
  const panelUrl = await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_panel'));
  const workerUrl = await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_worker'));
  const otherRoot = process.env.BENCH_GRAPHILE_OTHER;
  const otherUrl = otherRoot ? await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_other')) : null;
  const counting = process.env.BENCH_GRAPHILE_STATEMENTS === '1';
  // BENCH_GRAPHILE_BREAKDOWN=1: per round, the cluster's CPU by process kind, WAL, commits, row changes and vacuums per delivery, on stderr.
  const breakdown = process.env.BENCH_GRAPHILE_BREAKDOWN === '1';
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
  const statsClients = new Map();
  let perfRounds = 0;
  let worker = null;
  try {
    if (counting) await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    await utils.migrate();
    worker = await startWorker(workerUrl, ca);
    const postmaster = await postmasterPid(panelUrl);
    const statsOf = async (url) => {
      if (!statsClients.has(url)) {
        const client = new pg.Client({ connectionString: url });
        await client.connect();
        statsClients.set(url, client);
      }
      return statsClients.get(url);
    };
    const serverLog = breakdown ? join(dirname((await stats.query("SELECT current_setting('data_directory') AS d")).rows[0].d), 'postgres.log') : null;
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
        `SELECT calls::float8 AS calls, total_exec_time::float8 AS ms, rows::float8 AS rows, plans::float8 AS plans, total_plan_time::float8 AS plan_ms, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) AS query FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = $1) ORDER BY total_exec_time DESC LIMIT ${Number(process.env.BENCH_GRAPHILE_STATEMENTS_LIMIT ?? 8)}`,
        [database],
      );
      return { ...rows[0], top: top.rows };
    };
    const measure = async (pid, url, count, publish) => {
      receiver.reset();
      const expected = count * endpoints;
      if (counting) await stats.query('SELECT pg_stat_statements_reset()');
      const database = decodeURIComponent(new URL(url).pathname.slice(1));
      let before = null;
      let sampler = null;
      let logFrom = 0;
      if (breakdown) {
        // Counters flush from idle backends about a second after their last transaction.
        await new Promise((r) => setTimeout(r, 1200));
        before = await walCounters(await statsOf(url), database);
        logFrom = (await stat(serverLog)).size;
        sampler = clusterSampler(postmaster, Number(process.env.BENCH_GRAPHILE_SAMPLE_MS ?? 20));
        await sampler.started;
      }
      // BENCH_GRAPHILE_PERF=DIR: `perf record` of the whole machine during each measured round (DIR/<database>-<n>.data).
      const perf = process.env.BENCH_GRAPHILE_PERF
        ? spawn('perf', [
            'record',
            // BENCH_GRAPHILE_PERF_CALLGRAPH=1: call graphs (DWARF) of the side's own backends only.
            ...(process.env.BENCH_GRAPHILE_PERF_PROCESS === '1'
              ? []
              : process.env.BENCH_GRAPHILE_PERF_CALLGRAPH === '1'
                ? ['--call-graph', 'dwarf,32768', '-F', '499', '-p', (await backendsOf(postmaster, database)).join(',')]
                : ['-a', '-F', '1999']),
            // BENCH_GRAPHILE_PERF_PROCESS=1: call graphs (frame pointers) of the side's own process
            // (the daemon or graphile-worker's worker) only; with NODE_OPTIONS=--perf-basic-prof
            // its JavaScript frames are named.
            ...(process.env.BENCH_GRAPHILE_PERF_PROCESS === '1' ? ['-g', '-F', '999', '-p', String(pid)] : []),
            '-o', join(process.env.BENCH_GRAPHILE_PERF, `${database.replace(/_\d.*$/, '')}-${++perfRounds}.data`)], { stdio: ['ignore', 'ignore', 'pipe'] })
        : null;
      if (perf) await new Promise((r) => setTimeout(r, 300));
      const [cpu0, db0] = [await cpuSeconds(pid), await clusterCpu(postmaster)];
      const start = performance.now();
      const done = receiver.waitFor(expected);
      await pool(count, 32, publish);
      const seconds = ((await done) - start) / 1000;
      const [cpu1, db1] = [await cpuSeconds(pid), await clusterCpu(postmaster)];
      if (perf) {
        perf.kill('SIGINT');
        await new Promise((r) => (perf.exitCode !== null ? r() : perf.once('exit', r)));
      }
      const result = { rate: expected / seconds, cpuMs: ((cpu1 - cpu0) * 1000) / expected, dbCpuMs: ((db1 - db0) * 1000) / expected };
      if (breakdown) {
        const kinds = await sampler.stop();
        await new Promise((r) => setTimeout(r, 1200));
        const after = await walCounters(await statsOf(url), database);
        const per = (k) => (after[k] - before[k]) / expected;
        const vacuumLines = (await readFile(serverLog, 'utf8')).slice(logFrom).split('\n');
        // BENCH_GRAPHILE_LOG_GREP=REGEX: the server log's lines of the round that match, on stderr.
        if (process.env.BENCH_GRAPHILE_LOG_GREP) {
          const pattern = new RegExp(process.env.BENCH_GRAPHILE_LOG_GREP);
          for (const line of vacuumLines) if (pattern.test(line)) process.stderr.write(`  log: ${line}\n`);
        }
        const vacuums = {};
        let table = null;
        for (const line of vacuumLines) {
          const m = /automatic (vacuum|analyze) of table "([^"]+)"/.exec(line);
          if (m) table = `${m[1]} ${m[2]}`;
          const u = /system usage: CPU: user: ([\d.]+) s, system: ([\d.]+) s/.exec(line);
          if (u && table) {
            const v = (vacuums[table] ??= { runs: 0, cpuMs: 0 });
            v.runs += 1;
            v.cpuMs += (Number(u[1]) + Number(u[2])) * 1000;
            table = null;
          }
        }
        const lines = [
          `  cluster CPU µs/delivery by kind (user+system): ${Object.entries(kinds)
            .filter(([k, v]) => k !== 'born' && v.user + v.system > 0)
            .sort((a, b) => b[1].user + b[1].system - (a[1].user + a[1].system))
            .map(([k, v]) => `${k} ${(((v.user + v.system) * 1e6) / expected).toFixed(1)} (sys ${((v.system * 1e6) / expected).toFixed(1)})`)
            .join(', ')}${kinds.born ? `; processes started: ${Object.entries(kinds.born).map(([k, n]) => `${k} ×${n}`).join(', ')}` : ''}`,
          `  WAL/delivery: ${per('lsn').toFixed(0)} B (pg_stat_wal ${per('wal_bytes').toFixed(0)} B, ${per('records').toFixed(2)} records, ${per('fpi').toFixed(3)} FPI, ${per('wal_write').toFixed(3)} writes, ${per('wal_sync').toFixed(3)} syncs); checkpoints ${after.checkpoints - before.checkpoints}`,
          `  ${database}/delivery: commits ${per('commits').toFixed(3)}, rollbacks ${per('rollbacks').toFixed(3)}, inserted ${per('inserted').toFixed(2)}, updated ${per('updated').toFixed(2)} (HOT ${per('hot_updated').toFixed(2)}), deleted ${per('deleted').toFixed(2)}; vacuums ${after.vacuums - before.vacuums}, autovacuums ${after.autovacuums - before.autovacuums}`,
          `  autovacuum log: ${Object.entries(vacuums).map(([t, v]) => `${t} ${v.runs}× ${v.cpuMs.toFixed(0)} ms`).join('; ') || 'none'}`,
        ];
        process.stderr.write(`${lines.join('\n')}\n`);
        result.breakdown = { kinds, wal: per('lsn'), fpi: per('fpi'), commits: per('commits') };
      }
      if (counting) {
        // A side's statements may go on a moment after its receiver's last answer (outcomes recorded).
        await new Promise((r) => setTimeout(r, 200));
        const s = await statements(url);
        Object.assign(result, { statements: s.calls / expected, execMs: s.ms / expected });
        // BENCH_GRAPHILE_STATEMENTS_TOP=1: each round's costliest statements, per delivery, on stderr.
        if (process.env.BENCH_GRAPHILE_STATEMENTS_TOP === '1') {
          for (const t of s.top) process.stderr.write(`  ${(t.calls / expected).toFixed(4)} calls ${((t.ms * 1000) / expected).toFixed(1)} µs ${(t.rows / expected).toFixed(2)} rows/delivery${t.plans ? ` (${t.plans} plans, ${((t.plan_ms * 1000) / expected).toFixed(1)} µs)` : ''}  ${t.query}\n`);
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
    // The state of graphile-worker's jobs table after each of its rounds: its rate falls as the
    // table's dead rows pile up between autovacuums (docs/PERFORMANCE.md), which the run shows.
    const peerTable = [];
    const jobsTable = async () => {
      const { rows } = await (await statsOf(workerUrl)).query(
        `SELECT n_dead_tup::float8 AS dead, autovacuum_count::float8 AS autovacuums, pg_total_relation_size(relid)::float8 AS bytes
         FROM pg_stat_user_tables WHERE schemaname = 'graphile_worker' AND relname = '_private_jobs'`,
      );
      return rows[0] ?? null;
    };
    for (let round = 0; round < rounds; round++) {
      log(`graphile: panelctl (round ${round + 1})…`);
      panel.push(await panelRound(events));
      if (other) {
        log(`graphile: panelctl, the other build (round ${round + 1})…`);
        older.push(await otherRound(events));
      }
      log(`graphile: graphile-worker (round ${round + 1})…`);
      peer.push(await workerRound(events));
      peerTable.push(await jobsTable());
      const table = peerTable.at(-1);
      log(
        `graphile round ${round + 1}: panelctl ${Math.round(panel.at(-1).rate)}/s${other ? `, other build ${Math.round(older.at(-1).rate)}/s` : ''}, graphile-worker ${Math.round(peer.at(-1).rate)}/s` +
          (counting ? ` (statements per delivery ${panel.at(-1).statements.toFixed(2)}${other ? ` / ${older.at(-1).statements.toFixed(2)}` : ''} / ${peer.at(-1).statements.toFixed(2)})` : '') +
          (table ? `; its jobs table: ${table.dead} dead rows, ${(table.bytes / 2 ** 20).toFixed(0)} MB, ${table.autovacuums} autovacuums so far` : ''),
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
      peerTable,
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
    for (const client of statsClients.values()) await client.end();
    if (other) await stopDaemon(other);
    await stopDaemon(daemon);
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
    if (otherDir) await rm(otherDir, { recursive: true, force: true });
  }
}

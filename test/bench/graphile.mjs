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
async function postmasterPid(url) {
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
async function clusterCpu(postmaster) {
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
 * graphile-worker; each warmed first with a quarter round). Ratios are medians of the rounds' ratios.
 */
export async function benchGraphile(adminUrl, { events, endpoints, rounds, log = () => undefined, settings }) {
  const panelUrl = await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_panel'));
  const workerUrl = await socketUrlOf(await createDatabase(adminUrl, 'bench_gw_worker'));
  const dir = await makePgDataDir(panelUrl);
  const tls = await tlsOf(dir);
  const ca = join(dir, 'tls/cert.pem');
  const receiver = await startReceiver(tls);
  const daemon = await startDaemon(dir, { env: { PANELCTL_DATABASE_URL: panelUrl, NODE_EXTRA_CA_CERTS: ca } });
  const { makeWorkerUtils } = await import('graphile-worker');
  const utils = await makeWorkerUtils({ connectionString: workerUrl });
  let worker = null;
  try {
    await utils.migrate();
    worker = await startWorker(workerUrl, ca);
    const postmaster = await postmasterPid(panelUrl);
    const admin = await login(daemon.url, tls.cert);
    await admin.call('PUT', '/admin/settings', settings);
    for (let i = 0; i < endpoints; i++) await admin.call('POST', '/webhooks', { url: receiver.url, secret: `secret-${i}`, events: 'site.created' });
    const publisher = admin.withToken((await admin.call('POST', '/auth/api-keys', { name: 'publisher' })).key);
    const data = (i) => ({ site_id: i + 1, domain: `e${i}.example.com` });

    const measure = async (pid, count, publish) => {
      receiver.reset();
      const expected = count * endpoints;
      const [cpu0, db0] = [await cpuSeconds(pid), await clusterCpu(postmaster)];
      const start = performance.now();
      const done = receiver.waitFor(expected);
      await pool(count, 32, publish);
      const seconds = ((await done) - start) / 1000;
      const [cpu1, db1] = [await cpuSeconds(pid), await clusterCpu(postmaster)];
      return { rate: expected / seconds, cpuMs: ((cpu1 - cpu0) * 1000) / expected, dbCpuMs: ((db1 - db0) * 1000) / expected };
    };
    const panelRound = (count) => measure(daemon.pid, count, (i) => publisher.call('POST', '/admin/events', { event: 'site.created', data: data(i) }));
    const workerRound = (count) =>
      measure(worker.pid, count, (i) =>
        utils.addJobs(Array.from({ length: endpoints }, (_, e) => ({ identifier: 'deliver', payload: { url: receiver.url, secret: `secret-${e}`, event: 'site.created', data: data(i) } }))),
      );

    await panelRound(Math.ceil(events / 4));
    await workerRound(Math.ceil(events / 4));
    const panel = [];
    const peer = [];
    for (let round = 0; round < rounds; round++) {
      log(`graphile: panelctl (round ${round + 1})…`);
      panel.push(await panelRound(events));
      log(`graphile: graphile-worker (round ${round + 1})…`);
      peer.push(await workerRound(events));
      log(`graphile round ${round + 1}: panelctl ${Math.round(panel.at(-1).rate)}/s, graphile-worker ${Math.round(peer.at(-1).rate)}/s`);
    }
    const ratios = (key, a, b) => {
      const values = a.map((r, i) => r[key] / b[i][key]);
      return { ratio: median(values), range: [Math.min(...values), Math.max(...values)] };
    };
    return {
      events,
      endpoints,
      panel: { rate: median(panel.map((r) => r.rate)), cpuMs: median(panel.map((r) => r.cpuMs)), dbCpuMs: median(panel.map((r) => r.dbCpuMs)) },
      peer: { rate: median(peer.map((r) => r.rate)), cpuMs: median(peer.map((r) => r.cpuMs)), dbCpuMs: median(peer.map((r) => r.dbCpuMs)) },
      rate: ratios('rate', panel, peer),
      cpu: ratios('cpuMs', panel, peer),
      dbCpu: ratios('dbCpuMs', panel, peer),
      rounds: panel.map((r, i) => [r.rate, peer[i].rate]),
    };
  } finally {
    if (worker) {
      worker.proc.removeAllListeners('exit');
      worker.proc.kill('SIGTERM');
      await new Promise((r) => (worker.proc.exitCode !== null ? r() : worker.proc.once('exit', r)));
    }
    await utils.release();
    await stopDaemon(daemon);
    await receiver.close();
    await rm(dir, { recursive: true, force: true });
  }
}

// PostgreSQL benchmarks: POST /sites writes at 1,000 and 50,000 sites, and dispatch with one and
// with two daemons on one database, on a throwaway cluster with the server's durable defaults
// (fsync on, synchronous_commit on). The daemons connect through the server's Unix socket, as a
// daemon on the database's own host does; one daemon over TCP loopback is measured beside them.
// Runs under vite-node (`npm run bench`), which lets it use the tests' cluster helper. Loopback only.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createDatabase, findPgBin, socketUrlOf, startCluster } from '../helpers/postgres.ts';
import { ADMIN_PASSWORD, BIN, ROOT, cpuSeconds, login, makeDataDir, median, pool, startDaemon, startReceiver, stopDaemon, tlsOf } from './lib.mjs';
import { WRITE_CLIENTS, fsyncRate, postSites, prepareWriter, seedStore } from './writes.mjs';
import { clusterCpu, postmasterPid } from './cluster-cpu.mjs';

/** A data directory initialised on `url` (schema and first admin in the database) by the build of `bin`. */
export async function makePgDataDir(url, bin = BIN) {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-bench-'));
  const result = spawnSync(process.execPath, [bin, 'init', '--data-dir', dir, '--database-url', url, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
  if (result.status !== 0) throw new Error(`init --database-url failed: ${result.stderr}`);
  return dir;
}

/** A further daemon's data directory: nothing but the directory (the daemon makes its certificate). */
async function emptyDir() {
  return mkdtemp(join(tmpdir(), 'panelctl-bench-'));
}

/** `serverOptions`: further `-c` options of this cluster (added to BENCH_PG_OPTIONS). */
export async function withCluster(fn, serverOptions = '') {
  const bin = findPgBin();
  if (!bin) throw new Error('PostgreSQL benchmarks need initdb (apt-get install postgresql)');
  const previous = process.env.BENCH_PG_OPTIONS;
  if (serverOptions) process.env.BENCH_PG_OPTIONS = [previous, serverOptions].filter(Boolean).join(' ');
  let cluster;
  try {
    cluster = await startCluster(bin, { durable: true });
  } finally {
    if (previous === undefined) delete process.env.BENCH_PG_OPTIONS;
    else process.env.BENCH_PG_OPTIONS = previous;
  }
  try {
    return await fn(cluster.adminUrl);
  } finally {
    await cluster.stop();
  }
}

/**
 * POST /sites on PostgreSQL at each size in `sizes`: a database seeded with that many sites and
 * a daemon on it, all running at once and measured in alternating rounds (`seconds` split into
 * `rounds`), so that the flat-cost ratio (the last size against the first) is the median of
 * ratios of rounds taken seconds apart, as the other benchmarks do: measured one after the
 * other, the machine's drift alone moved it from 1.19 to 0.77 between runs.
 */
export async function benchWritesPostgres(adminUrl, { sizes = [1_000, 50_000], seconds = 10, rounds = 5, log = () => undefined, settings } = {}) {
  const { PostgresStore } = await import(join(ROOT, 'dist/store/postgres/postgres-store.js'));
  const sides = [];
  try {
    for (const sites of sizes) {
      const url = await socketUrlOf(await createDatabase(adminUrl, `bench_writes_${sites}`));
      const side = { sites, dataDir: await makePgDataDir(url), daemon: null, runs: [] };
      sides.push(side);
      log(`writes postgres ${sites}: seeding…`);
      const store = await PostgresStore.open(url);
      side.subscriptionId = (await seedStore(store, sites)).subscriptionId;
      await store.close();
      side.daemon = await startDaemon(side.dataDir, { env: { PANELCTL_DATABASE_URL: url } });
      side.tls = await tlsOf(side.dataDir);
      side.key = await prepareWriter(side.daemon, side.tls.cert, settings);
      await postSites(side.daemon.url, side.tls.cert, side.key, side.subscriptionId, 2, WRITE_CLIENTS, 'warm');
    }
    const each = seconds / rounds;
    for (let round = 0; round < rounds; round++) {
      // Alternate which size goes first, so neither always follows the other.
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) side.runs.push(await postSites(side.daemon.url, side.tls.cert, side.key, side.subscriptionId, each, WRITE_CLIENTS, `r${round}`));
      log(`writes postgres round ${round + 1}: ${sides.map((side) => `${side.sites}: ${Math.round(side.runs.at(-1).writes)}/s`).join(', ')}`);
    }
    const rows = [];
    for (const side of sides) {
      const writes = side.runs.map((run) => run.writes);
      rows.push({
        store: 'postgres',
        sites: side.sites,
        writes: median(writes),
        p50: median(side.runs.map((run) => run.p50)),
        p99: median(side.runs.map((run) => run.p99)),
        count: side.runs.reduce((sum, run) => sum + run.count, 0),
        fsyncs: await fsyncRate(side.dataDir),
      });
    }
    const first = sides[0].runs;
    const last = sides.at(-1).runs;
    const flat = last.map((run, i) => run.writes / first[i].writes);
    return { rows, flat: median(flat), flatRange: [Math.min(...flat), Math.max(...flat)] };
  } finally {
    for (const side of sides) {
      if (side.daemon) await stopDaemon(side.daemon);
      await rm(side.dataDir, { recursive: true, force: true });
    }
  }
}

/**
 * What `POST /sites` writes, made by a plain `pg` pool of `clients` connections in this
 * process, each write in one transaction: BEGIN, the site, its site.created event, COMMIT (the
 * inserts the daemon makes, without HTTPS, authentication, request limits, the domain rule's
 * checks, the choice of subscription or matching the event to endpoints). Answers writes/s and their count;
 * `beforeEnd` runs once they are made, while the pool is still connected.
 */
async function poolInserts(url, subscriptionId, customerId, seconds, clients, tag, beforeEnd = async () => undefined) {
  const db = new pg.Pool({ connectionString: url, max: clients });
  let done = 0;
  try {
    const end = performance.now() + seconds * 1000;
    const started = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: clients }, async () => {
        const client = await db.connect();
        try {
          while (performance.now() < end) {
            const domain = `${tag}-${next++}.bench-pool.example.com`;
            const at = new Date().toISOString();
            await client.query('BEGIN');
            const { rows } = await client.query('INSERT INTO sites (subscription_id, domain, created_at) VALUES ($1, $2, $3) RETURNING id', [subscriptionId, domain, at]);
            await client.query('INSERT INTO events (id, event, owner_id, data, "timestamp") VALUES ($1, $2, $3, $4, $5)', [
              randomUUID(),
              'site.created',
              customerId,
              JSON.stringify({ site_id: Number(rows[0].id), domain }),
              at,
            ]);
            await client.query('COMMIT');
            done++;
          }
        } finally {
          client.release();
        }
      }),
    );
    const writes = done / ((performance.now() - started) / 1000);
    await beforeEnd();
    return { writes, count: done };
  } finally {
    await db.end();
  }
}

/**
 * `POST /sites` on PostgreSQL (16 clients, a database of 1,000 sites, request limits on) against
 * a plain `pg` pool of 16 making the same inserts in one transaction each, on the same database,
 * in alternating rounds; with the statements the database ran per daemon write
 * (`pg_stat_statements`, every top-level statement: the write's own and whatever else the daemon
 * sends meanwhile, such as request-window counts, change notices and the feed's questions) and
 * the daemon's CPU time per write. Where the CPU of a write goes on each side, for a machine
 * where they share the cores: the cluster's (every PostgreSQL process), and this process's (the
 * HTTPS client making the requests, or the pool making the inserts). Runs on a cluster of its
 * own with pg_stat_statements loaded.
 */
export async function benchWritesVsPool({ seconds = 10, rounds = 5, log = () => undefined, settings } = {}) {
  return withCluster(async (adminUrl) => {
    const url = await socketUrlOf(await createDatabase(adminUrl, 'bench_writes_pool'));
    const dataDir = await makePgDataDir(url);
    const { PostgresStore } = await import(join(ROOT, 'dist/store/postgres/postgres-store.js'));
    const store = await PostgresStore.open(url);
    const { subscriptionId, customerId } = await seedStore(store, 1_000);
    await store.close();
    const stats = new pg.Client({ connectionString: url });
    await stats.connect();
    await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const postmaster = await postmasterPid(url);
    const daemon = await startDaemon(dataDir, { env: { PANELCTL_DATABASE_URL: url } });
    try {
      const tls = await tlsOf(dataDir);
      const key = await prepareWriter(daemon, tls.cert, settings);
      await postSites(daemon.url, tls.cert, key, subscriptionId, 2, WRITE_CLIENTS, 'warm');
      await poolInserts(url, subscriptionId, customerId, 2, WRITE_CLIENTS, 'pool-warm');
      const each = seconds / rounds;
      const panel = [];
      const plain = [];
      const statements = [];
      const cpu = [];
      /** Per round, µs per write: the cluster's CPU and this process's, daemon side and pool side. */
      const split = { daemonDb: [], daemonClient: [], poolDb: [], poolClient: [] };
      /** Runs `round` (answering its writes, and writes/s as `writes`), noting the cluster's and this process's CPU per write. */
      const measured = async (side, round) => {
        const db0 = await clusterCpu(postmaster);
        const own0 = process.cpuUsage();
        let used = null;
        // Taken by the pool before it disconnects: its backends' CPU is gone with them.
        const stop = async () => {
          used ??= { own: process.cpuUsage(own0), db: (await clusterCpu(postmaster)) - db0 };
        };
        const result = await round(stop);
        await stop();
        split[`${side}Db`].push((used.db / result.count) * 1e6);
        split[`${side}Client`].push((used.own.user + used.own.system) / result.count);
        return result;
      };
      const counted = async () =>
        Number((await stats.query('SELECT coalesce(sum(calls), 0) AS n FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())')).rows[0].n);
      for (let round = 0; round < rounds; round++) {
        const daemonRound = async () => {
          await stats.query('SELECT pg_stat_statements_reset()');
          const cpu0 = await cpuSeconds(daemon.pid);
          const run = await measured('daemon', () => postSites(daemon.url, tls.cert, key, subscriptionId, each, WRITE_CLIENTS, `r${round}`));
          const used = (await cpuSeconds(daemon.pid)) - cpu0;
          // The reset itself and this count are the two statements of ours in the figure.
          statements.push((await counted() - 2) / run.count);
          cpu.push((used / run.count) * 1e6);
          panel.push(run.writes);
        };
        const poolRound = async () => plain.push((await measured('pool', (stop) => poolInserts(url, subscriptionId, customerId, each, WRITE_CLIENTS, `pool-r${round}`, stop))).writes);
        // Alternate which goes first, so neither always follows the other.
        if (round % 2 === 0) {
          await daemonRound();
          await poolRound();
        } else {
          await poolRound();
          await daemonRound();
        }
        log(
          `writes postgres vs pool round ${round + 1}: daemon ${Math.round(panel.at(-1))}/s (${statements.at(-1).toFixed(2)} statements, µs CPU per write: ${Math.round(cpu.at(-1))} daemon, ${Math.round(split.daemonDb.at(-1))} cluster, ${Math.round(split.daemonClient.at(-1))} client), ` +
            `pool ${Math.round(plain.at(-1))}/s (${Math.round(split.poolDb.at(-1))} cluster, ${Math.round(split.poolClient.at(-1))} client)`,
        );
      }
      const ratios = panel.map((p, i) => p / plain[i]);
      return {
        daemon: median(panel),
        pool: median(plain),
        ratio: median(ratios),
        ratioRange: [Math.min(...ratios), Math.max(...ratios)],
        statementsPerWrite: median(statements),
        cpuMicrosPerWrite: median(cpu),
        /** µs of CPU per write, medians of the rounds: the cluster's and this process's (the requests' client, or the pool), per side. */
        clusterMicros: { daemon: median(split.daemonDb), pool: median(split.poolDb) },
        clientMicros: { daemon: median(split.daemonClient), pool: median(split.poolClient) },
        rounds: panel.map((p, i) => [p, plain[i]]),
      };
    } finally {
      await stopDaemon(daemon);
      await stats.end();
      await rm(dataDir, { recursive: true, force: true });
    }
  }, '-c shared_preload_libraries=pg_stat_statements');
}

/** Endpoints on `receiver` made through `daemon`'s admin (with the benchmark's settings); answers a publisher's API key. */
async function setUpPublisher(daemon, ca, receiver, { endpoints, settings }) {
  const admin = await login(daemon.url, ca);
  await admin.call('PUT', '/admin/settings', settings);
  for (let i = 0; i < endpoints; i++) await admin.call('POST', '/webhooks', { url: receiver.url, secret: `secret-${i}`, events: 'site.created' });
  return (await admin.call('POST', '/auth/api-keys', { name: 'publisher' })).key;
}

/**
 * Publishes `count` events through `daemons` in turn (32 requests at a time) and answers the
 * deliveries/s from the first publish until `receiver` has answered every delivery.
 */
async function dispatchRate(daemons, receiver, key, count, endpoints) {
  // Each publisher speaks to its daemon with that daemon's certificate.
  const publishers = await Promise.all(daemons.map(async (d) => (await login(d.url, (await tlsOf(d.dir)).cert)).withToken(key)));
  receiver.reset();
  const expected = count * endpoints;
  const start = performance.now();
  const done = receiver.waitFor(expected);
  await pool(count, 32, (i) => publishers[i % publishers.length].call('POST', '/admin/events', { event: 'site.created', data: { site_id: i + 1, domain: `e${i}.example.com` } }));
  const end = await done;
  return expected / ((end - start) / 1000);
}

/**
 * A second daemon on the first's database, warmed before it is measured: a new process runs its
 * first thousands of requests on code not yet optimised (the first, alive since round 1, is warm).
 */
async function startSecond(dir, env, first, receiver, key, { events, endpoints }) {
  const second = await startDaemon(dir, { env });
  second.dir = dir;
  try {
    await dispatchRate([first, second], receiver, key, Math.ceil(events / 4), endpoints);
  } catch (error) {
    await stopDaemon(second);
    throw error;
  }
  return second;
}

const ratioOf = (a, b) => {
  const ratios = a.map((r, i) => r / b[i]);
  return { ratio: median(ratios), range: [Math.min(...ratios), Math.max(...ratios)] };
};

/**
 * Dispatch on PostgreSQL: `events` events to `endpoints` endpoints, published through every
 * daemon in turn, with one daemon and then with two on the same database, and the same on one
 * daemon on the JSON store and on one daemon connected over TCP to a database of its own, in
 * alternating rounds (JSON, one, TCP, two) so that each ratio is the median of ratios of rounds
 * taken minutes apart at most, as the other benchmarks do.
 */
export async function benchDispatchPostgres(adminUrl, { events, endpoints, rounds, log = () => undefined, settings }) {
  const url = await socketUrlOf(await createDatabase(adminUrl, 'bench_dispatch'));
  const firstDir = await makePgDataDir(url);
  const secondDir = await emptyDir();
  // The TCP daemon has a database of its own: on the first's, the first would claim what it published.
  const tcpUrl = await createDatabase(adminUrl, 'bench_dispatch_tcp');
  const tcpDir = await makePgDataDir(tcpUrl);
  const tls = await tlsOf(firstDir);
  const receiver = await startReceiver(tls);
  const env = { PANELCTL_DATABASE_URL: url, NODE_EXTRA_CA_CERTS: join(firstDir, 'tls/cert.pem') };
  const first = await startDaemon(firstDir, { env });
  first.dir = firstDir;
  const jsonDir = await makeDataDir();
  const jsonTls = await tlsOf(jsonDir);
  // The receiver's certificate is the first daemon's: the JSON daemon trusts it as the first does.
  const json = await startDaemon(jsonDir, { env: { NODE_EXTRA_CA_CERTS: join(firstDir, 'tls/cert.pem') } });
  json.dir = jsonDir;
  const tcp = await startDaemon(tcpDir, { env: { ...env, PANELCTL_DATABASE_URL: tcpUrl } });
  tcp.dir = tcpDir;
  let second = null;
  try {
    const key = await setUpPublisher(first, tls.cert, receiver, { endpoints, settings });
    const jsonKey = await setUpPublisher(json, jsonTls.cert, receiver, { endpoints, settings });
    const tcpKey = await setUpPublisher(tcp, (await tlsOf(tcpDir)).cert, receiver, { endpoints, settings });
    const run = (daemons, publisherKey = key, count = events) => dispatchRate(daemons, receiver, publisherKey, count, endpoints);
    const jsonRates = [];
    const one = [];
    const oneTcp = [];
    const two = [];
    // Every daemon warmed before the first round (see startSecond).
    await run([json], jsonKey, Math.ceil(events / 4));
    await run([first], key, Math.ceil(events / 4));
    await run([tcp], tcpKey, Math.ceil(events / 4));
    for (let round = 0; round < rounds; round++) {
      log(`dispatch postgres: the JSON store (round ${round + 1})…`);
      jsonRates.push(await run([json], jsonKey));
      log(`dispatch postgres: one daemon (round ${round + 1})…`);
      if (second) {
        await stopDaemon(second);
        second = null;
      }
      one.push(await run([first]));
      log(`dispatch postgres: one daemon over TCP (round ${round + 1})…`);
      oneTcp.push(await run([tcp], tcpKey));
      log(`dispatch postgres: two daemons (round ${round + 1})…`);
      second = await startSecond(secondDir, env, first, receiver, key, { events, endpoints });
      two.push(await run([first, second]));
    }
    const vsJson = ratioOf(one, jsonRates);
    const tcpVsJson = ratioOf(oneTcp, jsonRates);
    const twoVsOne = ratioOf(two, one);
    return {
      json: median(jsonRates),
      one: median(one),
      two: median(two),
      oneVsJson: vsJson.ratio,
      oneVsJsonRange: vsJson.range,
      oneTcp: median(oneTcp),
      tcpVsJson: tcpVsJson.ratio,
      tcpVsJsonRange: tcpVsJson.range,
      ratio: twoVsOne.ratio,
      ratioRange: twoVsOne.range,
      rounds: one.map((r, i) => [jsonRates[i], r, oneTcp[i], two[i]]),
    };
  } finally {
    if (second) await stopDaemon(second);
    await stopDaemon(json);
    await stopDaemon(tcp);
    await rm(jsonDir, { recursive: true, force: true });
    await stopDaemon(first);
    await receiver.close();
    await rm(firstDir, { recursive: true, force: true });
    await rm(secondDir, { recursive: true, force: true });
    await rm(tcpDir, { recursive: true, force: true });
  }
}

/**
 * Two daemons against one where the endpoints, not the machine, set the pace: the receiver
 * answers each delivery `delayMs` after it arrived, so a daemon's rate is bounded by its slots
 * (at most 64 attempts in flight to one customer's endpoints per daemon, 8 to one endpoint over
 * all daemons, each endpoint served by one daemon at a time), so a second daemon adds only the
 * endpoints it holds. Same events and endpoints as benchDispatchPostgres, on a
 * database of its own, in alternating rounds (one, two).
 */
export async function benchScaleOutPostgres(adminUrl, { events, endpoints, rounds, delayMs, log = () => undefined, settings }) {
  const url = await socketUrlOf(await createDatabase(adminUrl, 'bench_scale_out'));
  const firstDir = await makePgDataDir(url);
  const secondDir = await emptyDir();
  const tls = await tlsOf(firstDir);
  const receiver = await startReceiver(tls, { delayMs });
  const env = { PANELCTL_DATABASE_URL: url, NODE_EXTRA_CA_CERTS: join(firstDir, 'tls/cert.pem') };
  const first = await startDaemon(firstDir, { env });
  first.dir = firstDir;
  let second = null;
  try {
    const key = await setUpPublisher(first, tls.cert, receiver, { endpoints, settings });
    await dispatchRate([first], receiver, key, Math.ceil(events / 4), endpoints);
    const one = [];
    const two = [];
    for (let round = 0; round < rounds; round++) {
      log(`dispatch postgres, receivers answering in ${delayMs} ms: one daemon (round ${round + 1})…`);
      one.push(await dispatchRate([first], receiver, key, events, endpoints));
      log(`dispatch postgres, receivers answering in ${delayMs} ms: two daemons (round ${round + 1})…`);
      second = await startSecond(secondDir, env, first, receiver, key, { events, endpoints });
      two.push(await dispatchRate([first, second], receiver, key, events, endpoints));
      await stopDaemon(second);
      second = null;
    }
    const twoVsOne = ratioOf(two, one);
    return { delayMs, one: median(one), two: median(two), ratio: twoVsOne.ratio, ratioRange: twoVsOne.range, rounds: one.map((r, i) => [r, two[i]]) };
  } finally {
    if (second) await stopDaemon(second);
    await stopDaemon(first);
    await receiver.close();
    await rm(firstDir, { recursive: true, force: true });
    await rm(secondDir, { recursive: true, force: true });
  }
}

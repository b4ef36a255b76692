// One daemon start, as the tests make it (test/helpers/daemon.ts): `daemon start --foreground
// --port 0 --log-level warn` on a fresh copy of an initialised data directory, ready once
// daemon.json names its pid. Measured per start: wall time from spawn to ready, and the
// child's CPU time (user + system) at ready (/proc/PID/stat) and over its whole life (start,
// SIGTERM, clean exit: this process's reaped-children CPU), and its peak RSS at ready. For the JSON store and for
// PostgreSQL (one database per build), alternating this build with another build
// (BENCH_DAEMON_START_OTHER or BENCH_DISPATCH_OTHER: a built checkout) and with `node -e 0`.
//
// `npx vite-node test/bench/run.mjs --only=daemonStart` (BENCH_DAEMON_START_RUNS=N rounds,
// BENCH_DAEMON_START_STORES=json or postgres for one store only; BENCH_PROFILE_DIR=DIR writes a
// CPU profile of each start of this build).
import { spawn } from 'node:child_process';
import { readFileSync, watch } from 'node:fs';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BIN, makeDataDir, median } from './lib.mjs';
import { makePgDataDir, withCluster } from './postgres.mjs';

/** Clock ticks per second of /proc's CPU fields (USER_HZ, 100 on Linux). */
const TICK_MS = 10;

/** CPU time of this process's reaped children so far, in ms. */
function childrenCpuMs() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) * TICK_MS;
}

/** CPU time a live process has used so far, in ms. */
function processCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
}

/** The environment of a test's daemon: no NODE_EXTRA_CA_CERTS (test/helpers/setup.ts removes it). */
function testEnv(extra) {
  const env = { ...process.env, ...extra };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

/** Resolves once `dir`/daemon.json names `pid`: watched, and read again every 20 ms in case an event is missed. */
function readyIn(dir, pid, proc) {
  return new Promise((resolve, reject) => {
    let done = false;
    const check = () => {
      if (done) return;
      let state;
      try {
        state = JSON.parse(readFileSync(join(dir, 'daemon.json'), 'utf8'));
      } catch {
        return;
      }
      if (state.pid !== pid) return;
      done = true;
      finish();
      resolve(performance.now());
    };
    const watcher = watch(dir, (_event, name) => name === 'daemon.json' && check());
    const timer = setInterval(check, 20);
    const onExit = (code) => {
      if (done) return;
      done = true;
      finish();
      reject(new Error(`daemon exited ${code} before it was ready`));
    };
    const finish = () => {
      watcher.close();
      clearInterval(timer);
      proc.off('exit', onExit);
    };
    proc.on('exit', onExit);
    check();
  });
}

/** One start of `bin`'s daemon on a copy of `template`: { ready ms, cpu to ready ms, cpu over its life ms }. */
async function startOnce(bin, template, { env = {}, profileDir } = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-start-'));
  await cp(template, dir, { recursive: true });
  const flags = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  // BENCH_DAEMON_FLAGS="--flag ..." passes further node flags to the profiled starts (e.g. --cpu-prof-interval=100).
  if (profileDir && process.env.BENCH_DAEMON_FLAGS) flags.push(...process.env.BENCH_DAEMON_FLAGS.split(' ').filter(Boolean));
  const before = childrenCpuMs();
  const started = performance.now();
  const proc = spawn(process.execPath, [...flags, bin, 'daemon', 'start', '--foreground', '--data-dir', dir, '--port', '0', '--log-level', 'warn'], {
    env: testEnv(env),
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) => proc.once('exit', resolve));
  try {
    const readyAt = await readyIn(dir, proc.pid, proc);
    const cpuAtReady = processCpuMs(proc.pid);
    const rss = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
    proc.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`daemon exited ${code} after SIGTERM`);
    return { ready: readyAt - started, cpu: cpuAtReady, life: childrenCpuMs() - before, rss };
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  }
}

/** `node -e 0` in the same rounds: the floor of any start. */
async function nodeFloor() {
  const before = childrenCpuMs();
  const started = performance.now();
  const proc = spawn(process.execPath, ['-e', '0'], { env: testEnv(), stdio: 'ignore' });
  await new Promise((resolve) => proc.once('exit', resolve));
  const ready = performance.now() - started;
  return { ready, cpu: childrenCpuMs() - before, life: childrenCpuMs() - before, rss: NaN };
}

function summarise(samples) {
  const mean = (key) => samples.reduce((sum, s) => sum + s[key], 0) / samples.length;
  return { ready: median(samples.map((s) => s.ready)), cpu: mean('cpu'), life: mean('life'), rss: median(samples.map((s) => s.rss)), runs: samples.length };
}

/**
 * `runs` alternating rounds: in each, one start of every side (this build, the other build if
 * given) and `node -e 0`, the order rotated each round.
 */
async function measure(sides, runs, log) {
  const samples = Object.fromEntries(sides.map((s) => [s.name, []]));
  for (const side of sides) await side.start(); // warm the file cache
  for (let round = 0; round < runs; round++) {
    for (let k = 0; k < sides.length; k++) {
      const side = sides[(round + k) % sides.length];
      samples[side.name].push(await side.start(round));
    }
  }
  const result = Object.fromEntries(Object.entries(samples).map(([name, list]) => [name, summarise(list)]));
  for (const [name, r] of Object.entries(result)) {
    const rss = Number.isNaN(r.rss) ? '' : `, peak RSS at ready ${r.rss.toFixed(0)} MB (median)`;
    log(`  ${name}: ready ${r.ready.toFixed(0)} ms (median), CPU ${r.cpu.toFixed(0)} ms to ready, ${r.life.toFixed(0)} ms over its life (means of ${r.runs})${rss}`);
  }
  return result;
}

/**
 * The daemon-start benchmark. `other`: another built checkout (its bin/panelctl.js), measured in
 * the same rounds. `stores`: 'json', 'postgres' (needs initdb).
 */
export async function benchDaemonStart({ runs = 15, other = process.env.BENCH_DAEMON_START_OTHER ?? process.env.BENCH_DISPATCH_OTHER, stores = ['json', 'postgres'], log = () => undefined } = {}) {
  const bins = [{ name: 'this', bin: BIN }, ...(other ? [{ name: 'other', bin: join(other, 'bin/panelctl.js') }] : [])];
  const profileDir = process.env.BENCH_PROFILE_DIR;
  const result = {};
  const floor = { name: 'node -e 0', start: nodeFloor };
  if (stores.includes('json')) {
    log(`daemon start, JSON store, ${runs} rounds`);
    const templates = [];
    try {
      const sides = [];
      for (const { name, bin } of bins) {
        const template = await makeDataDir();
        templates.push(template);
        sides.push({ name, start: () => startOnce(bin, template, { profileDir: name === 'this' ? profileDir : undefined }) });
      }
      result.json = await measure([...sides, floor], runs, log);
    } finally {
      for (const template of templates) await rm(template, { recursive: true, force: true });
    }
  }
  if (stores.includes('postgres')) {
    log(`daemon start, PostgreSQL, ${runs} rounds`);
    result.postgres = await withCluster(async (adminUrl) => {
      const pg = (await import('pg')).default;
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      const templates = [];
      try {
        const sides = [];
        for (const { name, bin } of bins) {
          const database = `start_${name}`;
          await admin.query(`CREATE DATABASE ${database}`);
          const url = Object.assign(new URL(adminUrl), { pathname: `/${database}` }).toString();
          const template = await makePgDataDir(url, bin);
          templates.push(template);
          const env = { PANELCTL_DATABASE_URL: url };
          sides.push({ name, start: () => startOnce(bin, template, { env, profileDir: name === 'this' ? profileDir : undefined }) });
        }
        return await measure([...sides, floor], runs, log);
      } finally {
        await admin.end();
        for (const template of templates) await rm(template, { recursive: true, force: true });
      }
    });
  }
  return result;
}

// Shared pieces of the benchmarks: a built daemon as a separate process, a local HTTPS
// receiver, an authenticated HTTP client, and RSS sampling from /proc.
import { spawn, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { createServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = join(ROOT, 'bin/panelctl.js');
export const ADMIN_PASSWORD = 'bench-password-1';

export async function makeDataDir() {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-bench-'));
  const result = spawnSync(process.execPath, [BIN, 'init', '--data-dir', dir, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
  if (result.status !== 0) throw new Error(`init failed: ${result.stderr}`);
  return dir;
}

export async function tlsOf(dataDir) {
  return {
    cert: await readFile(join(dataDir, 'tls/cert.pem'), 'utf8'),
    key: await readFile(join(dataDir, 'tls/key.pem'), 'utf8'),
  };
}

/** Starts `panelctl daemon start --foreground` and resolves once daemon.json names its URL. */
/** `bin`: another build's bin/panelctl.js (comparing builds in one run). */
export async function startDaemon(dataDir, { env = {}, args = [], bin = BIN } = {}) {
  // BENCH_PROFILE_DIR=DIR writes a V8 CPU profile of each daemon there (for finding hot spots).
  const prof = process.env.BENCH_PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE_DIR}`] : [];
  // BENCH_DAEMON_FLAGS="--flag ..." passes further node flags to each daemon (e.g. --trace-deopt).
  if (process.env.BENCH_DAEMON_FLAGS) prof.push(...process.env.BENCH_DAEMON_FLAGS.split(' ').filter(Boolean));
  const proc = spawn(process.execPath, [...prof, bin, 'daemon', 'start', '--foreground', '--data-dir', dataDir, '--port', '0', '--log-level', 'error', '--allow-private-webhooks', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`daemon exited ${proc.exitCode}`);
    if (Date.now() > deadline) throw new Error('daemon did not start');
    try {
      const state = JSON.parse(await readFile(join(dataDir, 'daemon.json'), 'utf8'));
      if (state.pid === proc.pid) return { proc, url: state.url, pid: proc.pid };
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function stopDaemon(daemon) {
  if (daemon.proc.exitCode !== null) return;
  daemon.proc.kill('SIGTERM');
  await new Promise((r) => daemon.proc.once('exit', r));
}

/** Peak resident set size (VmHWM) of a process, in MB. */
export async function peakRssMb(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /VmHWM:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) / 1024 : NaN;
}

/** CPU time (user + system) a process has used so far, in seconds (from /proc: 10 ms steps). */
export async function cpuSeconds(pid) {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, inside parentheses): utime is the 14th, stime the 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export function client(url, ca, token) {
  const agent = new Agent({ connect: { ca }, connections: 64, pipelining: 1 });
  return {
    agent,
    url,
    ca,
    async call(method, path, body, extraHeaders = {}) {
      const headers = { ...extraHeaders };
      if (token) headers.authorization = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      const res = await request(`${url}/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), dispatcher: agent });
      const text = await res.body.text();
      const parsed = JSON.parse(text);
      if (res.statusCode >= 400) throw new Error(`${method} ${path} → ${res.statusCode} ${text}`);
      return parsed.data;
    },
    withToken(t) {
      return client(url, ca, t);
    },
  };
}

export async function login(url, ca) {
  const anon = client(url, ca);
  const { token } = await anon.call('POST', '/auth/login', { email: 'admin@localhost', password: ADMIN_PASSWORD });
  return client(url, ca, token);
}

/**
 * An HTTPS receiver answering 200, at once or `delayMs` after the request's end (as an endpoint
 * that does some work before it answers); counts answers and resolves when `expected` were sent.
 */
export async function startReceiver(tls, { delayMs = 0 } = {}) {
  let count = 0;
  let waiter = null;
  const answer = (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    count++;
    if (waiter && count >= waiter.expected) {
      const w = waiter;
      waiter = null;
      w.resolve(performance.now());
    }
  };
  const server = createServer({ ...tls, keepAliveTimeout: 30_000 }, (req, res) => {
    req.resume();
    req.on('end', () => (delayMs > 0 ? setTimeout(answer, delayMs, res) : answer(res)));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://127.0.0.1:${server.address().port}/hook`,
    get count() {
      return count;
    },
    reset() {
      count = 0;
    },
    waitFor(expected) {
      if (count >= expected) return Promise.resolve(performance.now());
      return new Promise((resolve) => (waiter = { expected, resolve }));
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

export function sign(secret, body) {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

/** Runs `task(i)` for i in [0, total) with at most `concurrency` at once. */
export async function pool(total, concurrency, task) {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, total) }, async () => {
    while (next < total) {
      const i = next++;
      await task(i);
    }
  });
  await Promise.all(workers);
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

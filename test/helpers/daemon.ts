// A real daemon for tests: the built CLI's `daemon start --foreground` as a child process,
// on a free port (--port 0), in a temporary data directory, spoken to over verified HTTPS.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request as undiciRequest } from 'undici';
import { BIN, runCli } from './cli.js';
import { track } from './processes.js';

export const ADMIN_EMAIL = 'admin@localhost';
export const ADMIN_PASSWORD = 'admin-password-1';

export interface HttpResult<T = any> {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface TestDaemon {
  dataDir: string;
  url: string;
  ca: string;
  proc: ChildProcess;
  /** Everything the daemon wrote to stdout and stderr so far. */
  output(): string;
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<HttpResult<T>>;
  login(email?: string, password?: string): Promise<string>;
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
  /** Starts a new daemon process on the same data directory (and the same port). */
  restart(extraArgs?: string[]): Promise<TestDaemon>;
  /** Stops it and removes the data directory. */
  dispose(): Promise<void>;
}

export interface StartOptions {
  dataDir?: string;
  args?: string[];
  env?: NodeJS.ProcessEnv;
  port?: number;
  /** Keep the data directory on dispose. */
  keep?: boolean;
}

export async function makeDataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'panelctl-test-'));
}

export async function initDataDir(dataDir: string, password = ADMIN_PASSWORD): Promise<void> {
  const result = await runCli(['init', '--data-dir', dataDir, '--password-stdin'], { input: `${password}\n` });
  if (result.code !== 0) throw new Error(`init failed: ${result.stderr}`);
}

export function waitForExit(proc: ChildProcess): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

export async function startDaemon(options: StartOptions = {}): Promise<TestDaemon> {
  const dataDir = options.dataDir ?? (await makeDataDir());
  try {
    await readFile(join(dataDir, 'store.json'));
  } catch {
    await initDataDir(dataDir);
  }
  const args = [BIN, 'daemon', 'start', '--foreground', '--data-dir', dataDir, '--port', String(options.port ?? 0), '--log-level', 'warn', ...(options.args ?? [])];
  // Tracked: a test that times out never reaches its dispose, and the daemon must not outlive it.
  const proc = track(spawn(process.execPath, args, { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  proc.stderr!.on('data', (chunk) => (output += chunk));

  const ca = await readFile(join(dataDir, 'tls', 'cert.pem'), 'utf8');
  const agent = new Agent({ connect: { ca }, keepAliveTimeout: 1000 });
  const deadline = Date.now() + 45_000;
  let url = '';
  while (!url) {
    if (proc.exitCode !== null) throw new Error(`daemon exited with ${proc.exitCode}: ${output}`);
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`daemon did not start: ${output}`);
    }
    try {
      const state = JSON.parse(await readFile(join(dataDir, 'daemon.json'), 'utf8')) as { pid: number; url: string };
      if (state.pid === proc.pid) url = state.url;
    } catch {
      // not yet
    }
    if (!url) await new Promise((resolve) => setTimeout(resolve, 50));
  }

  const daemon: TestDaemon = {
    dataDir,
    url,
    ca,
    proc,
    output: () => output,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let body: string | undefined = opts.rawBody;
      if (opts.body !== undefined) {
        body = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await undiciRequest(`${url}${path.startsWith('/api') ? path : `/api/v1${path}`}`, {
        method: method as any,
        headers,
        body,
        dispatcher: agent,
      });
      const text = await response.body.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: response.statusCode, headers: response.headers, body: parsed as any, text };
    },
    async login(email = ADMIN_EMAIL, password = ADMIN_PASSWORD) {
      const result = await daemon.request('POST', '/auth/login', { body: { email, password } });
      if (result.status !== 200) throw new Error(`login failed: ${result.status} ${result.text}`);
      return result.body.data.token as string;
    },
    async stop() {
      if (proc.exitCode !== null) return proc.exitCode;
      proc.kill('SIGTERM');
      const code = await waitForExit(proc);
      await agent.close().catch(() => undefined);
      return code;
    },
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGKILL');
        await waitForExit(proc);
      }
      await agent.destroy().catch(() => undefined);
    },
    async restart(extraArgs) {
      await daemon.kill();
      const port = Number(new URL(url).port);
      return startDaemon({ ...options, dataDir, port, args: [...(options.args ?? []), ...(extraArgs ?? [])] });
    },
    async dispose() {
      await daemon.kill();
      if (!options.keep) await rm(dataDir, { recursive: true, force: true });
    },
  };
  return daemon;
}

export interface LoggedIn {
  daemon: TestDaemon;
  /** The admin's JWT. */
  admin: string;
}

/**
 * The suite's daemon fixture: a started daemon with its admin signed in and, when given,
 * settings applied (e.g. limits raised out of the way of a test about something else).
 *
 * @example
 * beforeAll(async () => ({ daemon, admin } = await startLoggedIn({ settings: RELAXED })));
 * afterAll(() => daemon?.dispose());
 */
export async function startLoggedIn(options: StartOptions & { settings?: Record<string, unknown> } = {}): Promise<LoggedIn> {
  const daemon = await startDaemon(options);
  const admin = await daemon.login();
  if (options.settings) {
    const result = await daemon.request('PUT', '/admin/settings', { token: admin, body: options.settings });
    if (result.status !== 200) throw new Error(`settings refused: ${result.status} ${result.text}`);
  }
  return { daemon, admin };
}

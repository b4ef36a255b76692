// A real daemon for tests: the built CLI's `daemon start --foreground` as a child process,
// on a free port (--port 0), in a temporary data directory, spoken to over verified HTTPS.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request as undiciRequest } from 'undici';
import { BIN, runCli } from './cli.js';
import { createDatabase, createMigratedDatabase, pgAdminUrl } from './postgres-db.js';
import { track } from './processes.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, templates } from './templates.js';

/**
 * The store the daemons of this run use: `PANELCTL_TEST_STORE=postgres` (the `postgres` test
 * project) gives each data directory its own database on the run's PostgreSQL cluster.
 */
export const TEST_STORE: 'json' | 'postgres' = process.env.PANELCTL_TEST_STORE === 'postgres' ? 'postgres' : 'json';
const databases = new Map<string, string>();
const initialisedDatabases = new Set<string>();
/** Copies of the template with the admin (see createDatabaseWithAdmin) no data directory was initialised for yet. */
const adminCopies = new Set<string>();

/**
 * The database of a data directory in the postgres project (made on first use); undefined on JSON.
 * `withAdmin`: made holding the test admin already, for a data directory initDataDir prepares.
 */
export async function testDatabaseFor(dataDir: string, withAdmin = false): Promise<string | undefined> {
  if (TEST_STORE !== 'postgres') return undefined;
  let url = databases.get(dataDir);
  if (!url) {
    const { url: adminUrl, reason } = pgAdminUrl();
    if (!adminUrl) throw new Error(`PANELCTL_TEST_STORE=postgres but no PostgreSQL: ${reason}`);
    url = withAdmin ? await createDatabaseWithAdmin(adminUrl, 'panelctl_daemon') : await createMigratedDatabase(adminUrl, 'panelctl_daemon');
    databases.set(dataDir, url);
  }
  return url;
}

/**
 * A fresh database as `panelctl init` with the test admin leaves it (a copy of the run's template;
 * without one, a migrated database that initDataDir initialises). initDataDir on it prepares only
 * the data directory.
 */
export async function createDatabaseWithAdmin(adminUrl: string, prefix: string): Promise<string> {
  const template = templates()?.databaseWithAdmin;
  if (!template) return createMigratedDatabase(adminUrl, prefix);
  const url = await createDatabase(adminUrl, prefix, template);
  initialisedDatabases.add(url);
  adminCopies.add(url);
  return url;
}

/** Tells startDaemon that `url` names a database initialised already (e.g. as another role than its initialiser). */
export function markInitialised(url: string): void {
  initialisedDatabases.add(url);
}

export { ADMIN_EMAIL, ADMIN_PASSWORD };

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
  /** The PostgreSQL store the daemon runs on (undefined: the JSON store in its data directory). */
  databaseUrl?: string;
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
  /** A PostgreSQL store (else the env's PANELCTL_DATABASE_URL, else the run's TEST_STORE). */
  databaseUrl?: string;
}

export async function makeDataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'panelctl-test-'));
}

/**
 * Initialises a data directory as `panelctl init` does. With the run's template (see
 * templates.ts) its TLS pair is copied first, which init keeps; a JSON store for the test
 * admin is the template's copy, with a JWT secret of its own.
 */
export async function initDataDir(dataDir: string, password = ADMIN_PASSWORD, databaseUrl?: string): Promise<void> {
  const url = databaseUrl ?? (await testDatabaseFor(dataDir, password === ADMIN_PASSWORD));
  const template = templates()?.dataDir;
  if (template) {
    if (!url && password === ADMIN_PASSWORD) {
      await cp(template, dataDir, { recursive: true });
      await writeFile(join(dataDir, 'jwt-secret'), randomBytes(48).toString('base64url'), { mode: 0o600 });
      return;
    }
    await cp(join(template, 'tls'), join(dataDir, 'tls'), { recursive: true });
    // A copy of the template with the admin: the database is initialised, the directory now too.
    if (url && password === ADMIN_PASSWORD && adminCopies.delete(url)) return;
  }
  const result = await runCli(['init', '--data-dir', dataDir, '--password-stdin', ...(url ? ['--database-url', url] : [])], { input: `${password}\n` });
  if (result.code !== 0) throw new Error(`init failed: ${result.stderr}`);
  if (url) initialisedDatabases.add(url);
}

/** The JWT signing secret the daemon uses: its data directory's file, or the database's. */
export async function jwtSecretOf(daemon: TestDaemon): Promise<string> {
  if (!daemon.databaseUrl) return (await readFile(join(daemon.dataDir, 'jwt-secret'), 'utf8')).trim();
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: daemon.databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ value: string }>("SELECT value FROM shared_secrets WHERE name = 'jwt'")).rows[0].value;
  } finally {
    await client.end();
  }
}

export function waitForExit(proc: ChildProcess): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
}

export async function startDaemon(options: StartOptions = {}): Promise<TestDaemon> {
  const dataDir = options.dataDir ?? (await makeDataDir());
  const databaseUrl = options.databaseUrl ?? options.env?.PANELCTL_DATABASE_URL ?? (await testDatabaseFor(dataDir, true));
  if (databaseUrl) {
    // A second daemon of a database needs no init: its data directory only gets TLS, pid and log.
    if (!initialisedDatabases.has(databaseUrl) || adminCopies.has(databaseUrl)) await initDataDir(dataDir, ADMIN_PASSWORD, databaseUrl);
  } else {
    try {
      await readFile(join(dataDir, 'store.json'));
    } catch {
      await initDataDir(dataDir);
    }
  }
  const args = [BIN, 'daemon', 'start', '--foreground', '--data-dir', dataDir, '--port', String(options.port ?? 0), '--log-level', 'warn', ...(options.args ?? [])];
  const env = { ...process.env, ...options.env, ...(databaseUrl ? { PANELCTL_DATABASE_URL: databaseUrl } : {}) };
  // Tracked: a test that times out never reaches its dispose, and the daemon must not outlive it.
  const proc = track(spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  proc.stderr!.on('data', (chunk) => (output += chunk));

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
  // Read once the daemon is up: a new data directory of a database gets its certificate at start.
  const ca = await readFile(join(dataDir, 'tls', 'cert.pem'), 'utf8');
  const agent = new Agent({ connect: { ca }, keepAliveTimeout: 1000 });

  const daemon: TestDaemon = {
    dataDir,
    databaseUrl,
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
      return startDaemon({ ...options, dataDir, port, databaseUrl, args: [...(options.args ?? []), ...(extraArgs ?? [])] });
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
 * Every item of a list, page after page: follows each answer's `Link: <…>; rel="next"` (a list
 * answers at most 1000 items a page), checking every page's status.
 * @example
 * const sites = await listAll<{ id: number; domain: string }>(daemon, `/sites?subscription_id=${id}`, token);
 */
export async function listAll<T = any>(daemon: Pick<TestDaemon, 'request'>, path: string, token: string): Promise<T[]> {
  const items: T[] = [];
  let next: string | null = path;
  while (next !== null) {
    const page: HttpResult<{ data: T[] }> = await daemon.request('GET', next, { token });
    if (page.status !== 200) throw new Error(`GET ${next} answered ${page.status}: ${page.text.slice(0, 300)}`);
    items.push(...page.body.data);
    const link = [page.headers.link ?? []].flat().join(', ');
    const target = /<([^>]*)>\s*;\s*rel="?next"?/.exec(link)?.[1];
    next = target ? target.replace(/^\/api\/v1/, '') : null;
  }
  return items;
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

// The in-process app (fastify `app.inject`, no port, no TLS, no child process): the fixture of
// route tests whose point is the HTTP API rather than the daemon process. It runs on the store
// of the run (a JSON store in a temporary directory, or a fresh PostgreSQL database in the
// `postgres` project, as test/helpers/daemon.ts does for daemons), with the first admin made as
// `panelctl init` makes it, a clock the test moves, and `request`/`login` shaped like a
// TestDaemon's, so a test written against a daemon runs against it unchanged.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/daemon/app.js';
import { newUserRecord } from '../../src/daemon/auth/password.js';
import { newJwtSecret } from '../../src/daemon/init.js';
import { layout } from '../../src/shared/paths.js';
import { openStore } from '../../src/store/factory.js';
import type { Store } from '../../src/store/store.js';
import type { Role } from '../../src/store/types.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, markInitialised, testDatabaseFor, type HttpResult, type RequestOptions } from './daemon.js';
import { quickPasswordHash } from './passwords.js';

/** The app's clock: real time plus an offset the test moves (time keeps flowing in between). */
export interface TestClock {
  /** Epoch milliseconds, as the app reads them. */
  now(): number;
  /** Moves the clock forward (or back, with a negative amount). */
  advance(ms: number): void;
  /** Puts the clock at an instant; it flows on from there. */
  set(epochMs: number): void;
}

export function testClock(start?: number): TestClock {
  let offset = start === undefined ? 0 : start - Date.now();
  return {
    now: () => Date.now() + offset,
    advance: (ms) => void (offset += ms),
    set: (epochMs) => void (offset = epochMs - Date.now()),
  };
}

/**
 * A clock that stands still until the test moves it: for rules checked to the second (a lock's
 * remaining seconds, a window's reset header), which a flowing clock would blur.
 */
export function fixedClock(start: number): TestClock {
  let now = start;
  return {
    now: () => now,
    advance: (ms) => void (now += ms),
    set: (epochMs) => void (now = epochMs),
  };
}

export interface TestAppOptions {
  /** Settings applied through the admin API before the app is handed over (e.g. limits raised). */
  settings?: Record<string, unknown>;
  /** The clock to read (shared across a restart); default: a new one at real time. */
  clock?: TestClock;
  /** As `--allow-private-webhooks`. */
  allowPrivateWebhooks?: boolean;
  /** CA certificates (PEM) webhook receivers are trusted with, as the daemon's NODE_EXTRA_CA_CERTS. */
  webhookCa?: string[];
  /** A PostgreSQL database to initialise and run on, whatever the run's store. */
  databaseUrl?: string;
  /** Reopen this data directory (and database) instead of making new ones: see restart(). */
  reopen?: { dir: string; databaseUrl?: string; jwtSecret: Uint8Array };
  /** Keep the app's log lines at warn level and above (JSON, as a daemon writes them): see output(). */
  log?: boolean;
  /**
   * Hash the first admin's password, and addUser's, at the daemon's cost. By default they are
   * stored as quickPasswordHash makes them (as the daemons' template admin is): login verifies
   * the parameters stored with a hash, the same check at a sixteenth of the CPU. For tests that
   * time a login.
   */
  daemonPasswordCost?: boolean;
}

export interface TestUser {
  id: number;
  email: string;
  password: string;
  /** A JWT of the user. */
  token: string;
}

export interface TestApp {
  dir: string;
  /** The same directory, named as a TestDaemon names it. */
  dataDir: string;
  /** The PostgreSQL store the app runs on (undefined: the JSON store in `dir`). */
  databaseUrl?: string;
  store: Store;
  app: FastifyInstance;
  clock: TestClock;
  /** The JWT signing secret the app uses (as jwtSecretOf gives a daemon's). */
  jwtSecret: Uint8Array;
  /** As TestDaemon.request: `path` is under /api/v1 unless it starts with /api. */
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<HttpResult<T>>;
  /**
   * Also listens on a loopback port (plain HTTP) and answers its URL, for what app.inject cannot
   * do: a browser, a kept-alive connection, a stream read as it arrives. Closed with the app.
   */
  listen(): Promise<string>;
  /** As TestDaemon.login: the first admin by default. */
  login(email?: string, password?: string): Promise<string>;
  /** A user of that role made straight in the store, signed in. */
  addUser(email: string, role: Role, password?: string): Promise<TestUser>;
  /** An API key of a user (through the API, as its owner would make it). */
  addApiKey(token: string, name: string, expiresAt?: string): Promise<{ id: number; key: string }>;
  /**
   * Closes the app and the store (flushing, as a daemon's SIGTERM does) and opens both again;
   * `whileStopped` runs in between (e.g. to edit the stopped store's files).
   */
  restart(whileStopped?: () => Promise<void>): Promise<TestApp>;
  /** Closes the app and the store and removes the directory. */
  close(): Promise<void>;
  /** The log lines written so far (with the `log` option; otherwise nothing). */
  output(): string;
}

let recordShape: ReturnType<typeof newUserRecord> | undefined;

/** newUserRecord with the password stored as quickPasswordHash makes it (the rest as newUserRecord makes it). */
const quickUserRecord: typeof newUserRecord = async (fields, now) => {
  recordShape ??= newUserRecord({ email: 'shape@localhost', name: 'shape', role: 'customer', password: 'shape-password-1' }, now);
  const { email, name, role, password } = fields;
  return { ...(await recordShape), email: email.trim().toLowerCase(), name, role, password_hash: quickPasswordHash(password), created_at: now, updated_at: now };
};

/**
 * @example
 * const t = await buildTestApp({ settings: RELAXED });
 * const admin = await t.login();
 * const res = await t.request('GET', '/sites', { token: admin });
 * t.clock.advance(61_000); // a minute later, for the app
 */
export async function buildTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const clock = options.clock ?? testClock();
  const userRecord = options.daemonPasswordCost ? newUserRecord : quickUserRecord;
  const dir = options.reopen?.dir ?? (await mkdtemp(join(tmpdir(), 'panelctl-app-')));
  const databaseUrl = options.reopen ? options.reopen.databaseUrl : (options.databaseUrl ?? (await testDatabaseFor(dir)));
  const store = await openStore({ dataDir: dir, databaseUrl, create: !options.reopen });
  let jwtSecret = options.reopen?.jwtSecret;
  let adminId = 0;
  if (!jwtSecret) {
    // As `panelctl init`: the first admin, and (PostgreSQL) the shared signing secret.
    const secret = databaseUrl ? (await store.sharedSecret('jwt', newJwtSecret))! : newJwtSecret();
    jwtSecret = new TextEncoder().encode(secret);
    const now = new Date(clock.now()).toISOString();
    adminId = (await store.users.insert(await userRecord({ email: ADMIN_EMAIL, name: 'Administrator', role: 'admin', password: ADMIN_PASSWORD }, now))).id;
    // A daemon started on this database later (restart tests) must not initialise it again.
    if (databaseUrl) markInitialised(databaseUrl);
  }
  let logged = '';
  const app = await buildApp(
    {
      store,
      paths: layout(dir),
      jwtSecret,
      clock: clock.now,
      allowPrivateWebhooks: options.allowPrivateWebhooks ?? false,
      webhookCa: options.webhookCa,
    },
    options.log ? ({ logger: { level: 'warn', stream: { write: (line: string) => void (logged += line) } } } as object) : {},
  );
  await app.ready();

  const fixture: TestApp = {
    dir,
    dataDir: dir,
    databaseUrl,
    store,
    app,
    clock,
    jwtSecret,
    async request(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let payload: string | undefined = opts.rawBody;
      if (opts.body !== undefined) {
        payload = JSON.stringify(opts.body);
        headers['content-type'] ??= 'application/json';
      }
      const response = await app.inject({ method: method as any, url: path.startsWith('/api') ? path : `/api/v1${path}`, headers, payload });
      // As they arrive over HTTP: every header value a string.
      const answered: HttpResult['headers'] = {};
      for (const [name, value] of Object.entries(response.headers)) {
        answered[name] = Array.isArray(value) ? value.map(String) : value === undefined ? undefined : String(value);
      }
      const text = response.payload;
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON
      }
      return { status: response.statusCode, headers: answered, body: parsed as any, text };
    },
    listen() {
      return app.listen({ host: '127.0.0.1', port: 0 });
    },
    async login(email = ADMIN_EMAIL, password = ADMIN_PASSWORD) {
      const result = await fixture.request('POST', '/auth/login', { body: { email, password } });
      if (result.status !== 200) throw new Error(`login failed: ${result.status} ${result.text}`);
      return result.body.data.token as string;
    },
    async addUser(email, role, password = `${role}-password-1`) {
      const user = await store.users.insert(await userRecord({ email, name: email.split('@')[0], role, password }, new Date(clock.now()).toISOString()));
      return { id: user.id, email, password, token: await app.tokens.issue(user.id, role, 3600) };
    },
    async addApiKey(token, name, expiresAt) {
      const result = await fixture.request('POST', '/auth/api-keys', { token, body: { name, ...(expiresAt ? { expires_at: expiresAt } : {}) } });
      if (result.status !== 201) throw new Error(`api key refused: ${result.status} ${result.text}`);
      return { id: result.body.data.id, key: result.body.data.key };
    },
    async restart(whileStopped) {
      await app.close();
      await store.flush();
      await store.close();
      await whileStopped?.();
      return buildTestApp({ ...options, clock, settings: undefined, reopen: { dir, databaseUrl, jwtSecret: jwtSecret! } });
    },
    async close() {
      await app.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
    output: () => logged,
  };
  if (options.settings && adminId) {
    const result = await fixture.request('PUT', '/admin/settings', { token: await app.tokens.issue(adminId, 'admin', 3600), body: options.settings });
    if (result.status !== 200) throw new Error(`settings refused: ${result.status} ${result.text}`);
  }
  return fixture;
}

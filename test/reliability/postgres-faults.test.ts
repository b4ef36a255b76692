// A PostgreSQL daemon and the faults of its database: connections cut by the server, a server
// restarted under load, a table lock held for long, refused connections. The daemons stay up,
// answer 2xx or a 503 envelope (never a 500, never a reset connection), write again by
// themselves once the server is back, lose nothing they acknowledged and log one line per
// interval. The cluster is this file's own: it is stopped and started again.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { mapError } from '../../src/store/postgres/errors.js';
import { resolvePgLimits, PG_LIMIT_DEFAULTS } from '../../src/store/postgres/limits.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { Agent, request } from 'undici';
import { ADMIN_PASSWORD, initDataDir, makeDataDir, markInitialised, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createDatabase, findPgBin, startCluster, type Cluster } from '../helpers/postgres.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';

const bin = findPgBin();
if (!bin) console.warn('PostgreSQL fault tests skipped: no initdb found');

interface Writer {
  daemon: TestDaemon;
  token: string;
  subscription: number;
}

interface Load {
  /** Domains of the sites answered 201. */
  acked: string[];
  /** Every answer that was neither a 201 nor a 503 envelope with Retry-After, and every failed exchange. */
  wrong: string[];
  unavailable: number;
  stop(): Promise<void>;
}

/** `writers` clients creating sites one after another through each of `targets` in turn. */
function writeLoad(targets: Writer[], writers: number, prefix: string): Load {
  let stopped = false;
  let n = 0;
  const load: Load = { acked: [], wrong: [], unavailable: 0, stop: async () => undefined };
  const worker = async (w: number) => {
    while (!stopped) {
      const target = targets[(w + n) % targets.length];
      const domain = `${prefix}-${++n}.example.org`;
      try {
        const res = await target.daemon.request('POST', '/sites', { token: target.token, body: { domain, subscription_id: target.subscription } });
        if (res.status === 201) load.acked.push(domain);
        else if (res.status === 503 && res.body?.error === 'storage unavailable' && res.headers['retry-after']) {
          load.unavailable++;
          // A refusal comes at once: let the other side of the test (the fault) have the CPU.
          await new Promise((resolve) => setTimeout(resolve, 10));
        } else load.wrong.push(`${res.status} ${res.text.slice(0, 200)}`);
      } catch (error) {
        load.wrong.push(`no answer: ${(error as Error).message}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  };
  const running = Array.from({ length: writers }, (_, w) => worker(w));
  load.stop = async () => {
    stopped = true;
    await Promise.all(running);
  };
  return load;
}

function alive(daemon: TestDaemon): boolean {
  return daemon.proc.exitCode === null && daemon.proc.signalCode === null;
}

async function sql<R extends pg.QueryResultRow = pg.QueryResultRow>(url: string, text: string, values?: unknown[]): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The daemon's admin token and a customer subscription to create sites in. */
async function writerOf(daemon: TestDaemon, subscription?: number): Promise<Writer> {
  const token = await daemon.login();
  if (subscription === undefined) {
    const raised = await daemon.request('PUT', '/admin/settings', { token, body: { rate_limit_user_per_minute: 1_000_000, rate_limit_login_per_minute: 1_000 } });
    expect(raised.status, raised.text).toBe(200);
    const customer = await daemon.request('POST', '/admin/users', { token, body: { email: 'c@example.com', name: 'C', password: 'customer-password', role: 'customer' } });
    expect(customer.status, customer.text).toBe(201);
    const created = await daemon.request('POST', '/admin/subscriptions', { token, body: { customer_id: customer.body.data.id, main_domain: 'c.example' } });
    expect(created.status, created.text).toBe(201);
    subscription = created.body.data.id as number;
  }
  return { daemon, token, subscription };
}

/** Waits until each writer's daemon has acknowledged a new site of its own. */
async function writesAgain(writers: Writer[], prefix: string): Promise<void> {
  let n = 0;
  for (const writer of writers) {
    await vi.waitFor(
      async () => {
        expect(alive(writer.daemon), writer.daemon.output().slice(-2000)).toBe(true);
        const res = await writer.daemon.request('POST', '/sites', { token: writer.token, body: { domain: `${prefix}-${++n}.example.org`, subscription_id: writer.subscription } });
        expect(res.status, res.text).toBe(201);
      },
      { timeout: 30_000, interval: 200 },
    );
  }
}

async function expectAllKept(url: string, acked: string[]): Promise<void> {
  const rows = await sql<{ domain: string }>(url, 'SELECT domain FROM sites');
  const stored = new Set(rows.map((r) => r.domain));
  expect(acked.filter((domain) => !stored.has(domain))).toEqual([]);
}

describe('PostgreSQL limits', () => {
  it('bounds every wait by default, and takes the environment and the URL', () => {
    const defaults = resolvePgLimits({}, 'postgres://db/panel');
    expect(defaults).toEqual(PG_LIMIT_DEFAULTS);
    for (const value of Object.values(defaults)) expect(value).toBeGreaterThan(0);
    expect(defaults.statementTimeoutMs).toBeLessThanOrEqual(10_000);
    expect(defaults.lockTimeoutMs).toBeLessThan(defaults.statementTimeoutMs);
    expect(defaults.acquireTimeoutMs).toBeLessThanOrEqual(5_000);
    const env = {
      PANELCTL_DATABASE_POOL_SIZE: '4',
      PANELCTL_DATABASE_STATEMENT_TIMEOUT_MS: '900',
      PANELCTL_DATABASE_LOCK_TIMEOUT_MS: '300',
      PANELCTL_DATABASE_ACQUIRE_TIMEOUT_MS: '700',
    };
    expect(resolvePgLimits(env, 'postgres://db/panel')).toEqual({ poolSize: 4, statementTimeoutMs: 900, lockTimeoutMs: 300, acquireTimeoutMs: 700 });
    // The server's own parameters in the URL win over the environment.
    expect(resolvePgLimits(env, 'postgres://db/panel?statement_timeout=1500&lock_timeout=250')).toMatchObject({ statementTimeoutMs: 1500, lockTimeoutMs: 250 });
    expect(() => resolvePgLimits({ PANELCTL_DATABASE_LOCK_TIMEOUT_MS: '0' }, 'postgres://db/panel')).toThrow(/PANELCTL_DATABASE_LOCK_TIMEOUT_MS/);
    expect(() => resolvePgLimits({ PANELCTL_DATABASE_POOL_SIZE: 'ten' }, 'postgres://db/panel')).toThrow(/PANELCTL_DATABASE_POOL_SIZE/);
  });
});

describe('PostgreSQL errors', () => {
  it('answers exceeded bounds and lost connections as unavailable (503), not as failures (500)', () => {
    const unavailable = [
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated unexpectedly'),
      new Error('Client has encountered a connection error and is not queryable'),
    ];
    for (const error of unavailable) expect(mapError(error), error.message).toBeInstanceOf(StoreUnavailableError);
    expect(mapError(Object.assign(new Error('syntax error'), { code: '42601' }))).not.toBeInstanceOf(StoreUnavailableError);
  });
});

describe.skipIf(!bin)('a PostgreSQL daemon and its database failing', () => {
  let cluster: Cluster;
  const daemons: TestDaemon[] = [];
  let tls: ReceiverTls;
  /** The webhook receiver of the daemons below (each test hooks a path of its own). */
  let receiver: Receiver;
  /** A daemon whose database has its connections cut and its tables locked, one test after another. */
  let single: { url: string; writer: Writer };
  /** A daemon with a pool of two connections, whose server is refused. */
  let small: { url: string; writer: Writer };
  /** Two daemons of one database; the second connects as its own role (panel_b), so it alone can be cut off. */
  let pair: { url: string; writers: Writer[] };

  async function started(promise: Promise<TestDaemon>): Promise<TestDaemon> {
    const daemon = await promise;
    daemons.push(daemon);
    return daemon;
  }

  async function startSingle(env: NodeJS.ProcessEnv, args: string[]): Promise<{ url: string; writer: Writer }> {
    const url = await createDatabase(cluster.adminUrl, 'panelctl_faults');
    return { url, writer: await writerOf(await started(startDaemon({ databaseUrl: url, env, args }))) };
  }

  async function startPair(env: NodeJS.ProcessEnv, args: string[]): Promise<{ url: string; writers: Writer[] }> {
    const url = await createDatabase(cluster.adminUrl, 'panelctl_faults');
    await sql(cluster.adminUrl, 'CREATE ROLE panel_b LOGIN SUPERUSER');
    const urlB = new URL(url);
    urlB.username = 'panel_b';
    markInitialised(urlB.toString());
    const dirs = [await makeDataDir(), await makeDataDir()];
    await initDataDir(dirs[0], ADMIN_PASSWORD, url);
    const [one, two] = await Promise.all([
      started(startDaemon({ dataDir: dirs[0], databaseUrl: url, env, args })),
      started(startDaemon({ dataDir: dirs[1], databaseUrl: urlB.toString(), env, args })),
    ]);
    const first = await writerOf(one);
    return { url, writers: [first, await writerOf(two, first.subscription)] };
  }

  // Every daemon of the file starts at once, each on its own database but the pair: the tests
  // that stop the whole server (refused, restarted) come last, so the daemons that idle through
  // an outage are only those of the tests still to come, which check that they serve again.
  beforeAll(async () => {
    cluster = await startCluster(bin!);
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls);
    const env = { NODE_EXTRA_CA_CERTS: tls.caFile };
    const args = ['--allow-private-webhooks'];
    [single, small, pair] = await Promise.all([startSingle(env, args), startSingle({ ...env, PANELCTL_DATABASE_POOL_SIZE: '2' }, args), startPair(env, args)]);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(daemons.map((daemon) => daemon.dispose()));
    await receiver?.close();
    await tls?.dispose();
    await cluster?.stop();
  });

  it('outlives its connections being terminated under write load, losing nothing acknowledged', async () => {
    const { url, writer } = single;
    const { daemon } = writer;
    const load = writeLoad([writer], 20, 'cut');
    try {
      for (let round = 0; round < 6; round++) {
        const before = load.acked.length;
        await vi.waitFor(
          () => {
            expect(alive(daemon), daemon.output().slice(-2000)).toBe(true);
            expect(load.acked.length).toBeGreaterThan(before + 20);
          },
          { timeout: 30_000, interval: 50 },
        );
        const cut = await sql(
          cluster.adminUrl,
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'panelctl%'",
          [new URL(url).pathname.slice(1)],
        );
        expect(cut.length).toBeGreaterThan(0);
      }
    } finally {
      await load.stop();
    }
    expect(alive(daemon), daemon.output().slice(-2000)).toBe(true);
    expect(load.wrong).toEqual([]);
    await writesAgain([writer], 'cut-after');
    await expectAllKept(url, load.acked);
    expect(daemon.output()).not.toMatch(/DeprecationWarning|Unhandled 'error' event/);
  }, 120_000);

  it('answers 503 envelopes within the bounds while a table is locked, and every other route as usual', async () => {
    // The default bounds: nothing here is set.
    const { url, writer } = single;
    const { daemon } = writer;
    const locker = new pg.Client({ connectionString: url });
    locker.on('error', () => undefined);
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE sites IN ACCESS EXCLUSIVE MODE');
      const releasing = setTimeout(() => void locker.query('ROLLBACK').catch(() => undefined), 40_000);
      try {
        const timed = async (method: string, path: string, body?: unknown) => {
          const started = Date.now();
          const res = await daemon.request(method, path, { token: writer.token, body });
          return { res, ms: Date.now() - started };
        };
        // Requests on the locked table, several at once, while the other routes are used: fewer
        // than the pool's connections (the others answer as usual), then more (a request may
        // then find no connection in time, and is answered 503 too, never 500).
        for (const [waiting, others] of [
          [8, 'as usual'],
          [24, 'never 500'],
        ] as const) {
          const locked = Promise.all(
            Array.from({ length: waiting }, (_, i) =>
              i % 2
                ? timed('GET', `/sites?subscription_id=${writer.subscription}`)
                : timed('POST', '/sites', { domain: `locked-${waiting}-${i}.example.org`, subscription_id: writer.subscription }),
            ),
          );
          const answers: Array<{ status: number; text: string; body: any; headers: Record<string, unknown> }> = [];
          for (let i = 0; i < 5; i++) {
            answers.push(await daemon.request('POST', '/auth/login', { body: { email: 'admin@localhost', password: ADMIN_PASSWORD } }));
            answers.push(await daemon.request('GET', '/webhooks', { token: writer.token }));
            answers.push(await daemon.request('POST', '/admin/events', { token: writer.token, body: { event: 'backup.completed', data: { schedule_id: i + 1, name: 'nightly' } } }));
            answers.push(await daemon.request('GET', '/health'));
          }
          for (const answer of answers) {
            if (others === 'as usual' || answer.status !== 503) expect(answer.status, answer.text).toBe(200);
            else expect([answer.body?.error, answer.headers['retry-after']], answer.text).toEqual(['storage unavailable', expect.stringMatching(/^[1-9][0-9]*$/)]);
          }
          for (const { res, ms } of await locked) {
            expect([res.status, res.body?.error], res.text).toEqual([503, 'storage unavailable']);
            expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
            expect(ms).toBeLessThan(20_000);
          }
        }
      } finally {
        clearTimeout(releasing);
        await locker.query('ROLLBACK').catch(() => undefined);
      }
    } finally {
      await locker.end().catch(() => undefined);
    }
    await writesAgain([writer], 'unlocked');
  }, 120_000);

  it('announces nothing for a site whose event could not be queued behind a lock (its transaction rolled back)', async () => {
    const { url, writer } = single;
    const { daemon } = writer;
    const hookUrl = `${receiver.url}/sites`;
    const hook = await daemon.request('POST', '/webhooks', { token: writer.token, body: { url: hookUrl, secret: 'rollback-secret', events: 'site.created' } });
    expect(hook.status, hook.text).toBe(201);
    const locker = new pg.Client({ connectionString: url });
    locker.on('error', () => undefined);
    await locker.connect();
    const refused: string[] = [];
    try {
      // The site's row is written; its event waits for the outbox, past the lock bound.
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE');
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => daemon.request('POST', '/sites', { token: writer.token, body: { domain: `rolled-back-${i}.example.org`, subscription_id: writer.subscription } })),
      );
      for (const [i, res] of answers.entries()) {
        expect([res.status, res.body?.error], res.text).toEqual([503, 'storage unavailable']);
        refused.push(`rolled-back-${i}.example.org`);
      }
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end().catch(() => undefined);
    }
    // A site made afterwards is announced: once its event is in, the refused ones would have been too.
    const kept = await daemon.request('POST', '/sites', { token: writer.token, body: { domain: 'kept.example.org', subscription_id: writer.subscription } });
    expect(kept.status, kept.text).toBe(201);
    const domains = () => receiver.requests.filter((r) => r.path === new URL(hookUrl).pathname).map((r) => (JSON.parse(r.body) as { data: { domain: string } }).data.domain);
    await vi.waitFor(() => expect(domains()).toContain('kept.example.org'), { timeout: 20_000, interval: 100 });
    expect(domains().filter((domain) => refused.includes(domain))).toEqual([]);
    expect(await sql(url, 'SELECT domain FROM sites WHERE domain = ANY ($1)', [refused])).toEqual([]);
  }, 120_000);

  it('logs a refused database once per interval, not a stack per request', async () => {
    const { writer } = small;
    const { daemon } = writer;
    const mark = daemon.output().length;
    await cluster.halt();
    try {
      const load = writeLoad([writer], 16, 'refused');
      await vi.waitFor(() => expect(load.unavailable).toBeGreaterThan(300), { timeout: 30_000, interval: 50 });
      await load.stop();
      expect(load.wrong).toEqual([]);
      expect(load.acked).toEqual([]);
    } finally {
      await cluster.start();
    }
    await writesAgain([writer], 'refused-after');
    const lines = daemon
      .output()
      .slice(mark)
      .split('\n')
      .filter((line) => line.trim() !== '');
    // A few seconds of refusals: at most a line for the requests and one for the dispatcher.
    expect(lines.filter((line) => /unavailable/i.test(line)).length).toBeLessThanOrEqual(4);
    expect(lines.join('\n')).not.toMatch(/"stack"|\n\s+at /);
  }, 120_000);

  it('serves again by itself, two daemons of it, after the server is restarted five times under write load', async () => {
    const { url, writers } = pair;
    const [one, two] = writers.map((writer) => writer.daemon);
    const load = writeLoad(writers, 16, 'restart');
    try {
      for (let round = 0; round < 5; round++) {
        const before = load.acked.length;
        await vi.waitFor(() => expect(load.acked.length).toBeGreaterThan(before + 20), { timeout: 30_000, interval: 50 });
        await cluster.halt();
        await cluster.start();
        await writesAgain(writers, `restart-${round}`);
      }
    } finally {
      await load.stop();
    }
    for (const daemon of [one, two]) expect(alive(daemon), daemon.output().slice(-2000)).toBe(true);
    expect(load.wrong).toEqual([]);
    await expectAllKept(url, load.acked);
  }, 240_000);

  it('hears the other daemon again after its change feed reconnects: settings and log entries made meanwhile', async () => {
    // The second daemon connects as its own role, so it alone can be cut off from the server.
    const { writers } = pair;
    const [one, two] = writers.map((writer) => writer.daemon);
    const hook = await one.request('POST', '/webhooks', { token: writers[0].token, body: { url: `${receiver.url}/hook`, secret: 'listen-secret', events: 'backup.completed' } });
    expect(hook.status, hook.text).toBe(201);
    const agent = new Agent({ connect: { ca: two.ca } });
    const controller = new AbortController();
    try {
      await cluster.halt();
      await cluster.start();
      await writesAgain(writers, 'listen');
      // A stream on the second daemon, open across its outage.
      const stream = await request(`${two.url}/api/v1/webhooks/deliveries/stream?endpoint_id=${hook.body.data.id}`, {
        headers: { authorization: `Bearer ${writers[1].token}` },
        dispatcher: agent,
        signal: controller.signal,
      });
      expect(stream.statusCode).toBe(200);
      stream.body.setEncoding('utf8');
      let text = '';
      stream.body.on('data', (chunk: string) => (text += chunk));
      await vi.waitFor(() => expect(text).toContain(': connected'));
      // Cut the second daemon off; while it cannot hear, the first changes the settings and makes an attempt.
      await sql(cluster.adminUrl, 'ALTER ROLE panel_b NOLOGIN');
      await sql(cluster.adminUrl, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'panel_b'");
      await vi.waitFor(async () => expect(await sql(cluster.adminUrl, "SELECT pid FROM pg_stat_activity WHERE usename = 'panel_b'")).toEqual([]));
      const sent = await one.request('POST', `/webhooks/${hook.body.data.id}/test`, { token: writers[0].token, body: { message: 'while away' } });
      expect(sent.status, sent.text).toBe(200);
      const lowered = await one.request('PUT', '/admin/settings', { token: writers[0].token, body: { rate_limit_mode: 'requests', rate_limit_user_per_minute: 5 } });
      expect(lowered.status, lowered.text).toBe(200);
      await sql(cluster.adminUrl, 'ALTER ROLE panel_b LOGIN');
      // The entry made meanwhile reaches the stream, and the lowered limit the request hook.
      await vi.waitFor(() => expect(text).toContain(`id: ${sent.body.data.id}\n`), { timeout: 20_000, interval: 100 });
      await vi.waitFor(
        async () => {
          const res = await two.request('GET', '/webhooks', { token: writers[1].token });
          expect(res.status, res.text).toBe(429);
        },
        { timeout: 20_000, interval: 100 },
      );
      expect(alive(two)).toBe(true);
    } finally {
      controller.abort();
      await agent.destroy();
    }
  }, 120_000);
});

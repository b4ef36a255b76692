// What only PostgreSQL shows, on a real server: migrations under concurrent opens, constraints
// kept across daemons, the NOTIFY change feed, leased claims from two store instances, the
// atomic limiter. The backend-neutral behaviour is the contract suite's (contract-postgres).
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { QUEUE_VACUUM_ROWS } from '../../src/store/postgres/queue-vacuum.js';
import { PUBLISH_SQL } from '../../src/store/postgres/repositories/outbox.js';
import { StoreConflictError, StoreCorruptError, StoreUnavailableError, type Change } from '../../src/store/store.js';
import type { DeliveryLogEntry, DeliveryRecord, UserRecord } from '../../src/store/types.js';
import { createDatabase, pgAdminUrl } from '../helpers/postgres-db.js';
import { socketUrlOf } from '../helpers/postgres.js';

const { url: adminUrl, reason } = pgAdminUrl();
if (!adminUrl) console.warn(`PostgreSQL store tests skipped: ${reason}`);

const now = () => new Date().toISOString();
let n = 0;
const user = (role: UserRecord['role'] = 'customer', email = `u${++n}@example.com`): Omit<UserRecord, 'id'> => ({
  email,
  name: 'U',
  role,
  password_hash: 'scrypt$x',
  totp_secret: null,
  totp_pending_secret: null,
  two_factor_enabled: false,
  totp_last_step: null,
  created_at: now(),
  updated_at: now(),
});
const webhook = (userId: number) => ({
  user_id: userId,
  url: 'https://hooks.example.com/x',
  secret: 's',
  events: '*',
  active: true,
  created_at: now(),
  updated_at: now(),
});
const delivery = (endpointId: number, at: number, extra: Partial<DeliveryRecord> = {}): DeliveryRecord => ({
  id: randomUUID(),
  endpoint_id: endpointId,
  owner_id: null,
  event: 'site.created',
  body: '{"x":1}',
  state: 'pending',
  attempts: 0,
  next_attempt_at: at,
  created_at: new Date(at).toISOString(),
  ...extra,
});
const event = () => ({ id: randomUUID(), event: 'site.created', owner_id: null, data: {}, timestamp: now() });
const logEntry = (endpointId: number, extra: Partial<DeliveryLogEntry> = {}): Omit<DeliveryLogEntry, 'id'> => ({
  delivery_id: randomUUID(),
  endpoint_id: endpointId,
  event: 'site.created',
  payload: { event: 'site.created', data: { domain: 'a.example', n: [1, 2, { deep: null }] } },
  attempt: 1,
  status_code: 200,
  response: 'ok',
  success: true,
  duration_ms: 12,
  created_at: now(),
  request_headers: { 'content-type': 'application/json' },
  ...extra,
});

/** Resolves with the first change `accept` takes, seen by `store`'s feed. */
function nextChange(store: PostgresStore, accept: (c: Change) => boolean): Promise<Change> {
  return new Promise((resolve) => {
    const off = store.changes.subscribe((change) => {
      if (!accept(change)) return;
      off();
      resolve(change);
    });
  });
}

/**
 * Changes `store` hears from now on; `until` resolves with the first that `accept` takes, heard
 * before or after it is called (a late notice of an earlier test's change is passed over).
 */
function heard(store: PostgresStore): { until(accept: (c: Change) => boolean): Promise<Change> } {
  const seen: Change[] = [];
  const waiting: Array<{ accept: (c: Change) => boolean; resolve: (c: Change) => void }> = [];
  store.changes.subscribe((change) => {
    seen.push(change);
    for (const w of [...waiting]) {
      if (!w.accept(change)) continue;
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve(change);
    }
  });
  return {
    until: (accept) => {
      const found = seen.find(accept);
      return found ? Promise.resolve(found) : new Promise((resolve) => waiting.push({ accept, resolve }));
    },
  };
}

async function conflict(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(StoreConflictError);
  return (error as StoreConflictError).constraint;
}

type DeliveryTableStats = { n_tup_ins: number; n_tup_del: number; seq_tup_read: number };

/**
 * The `deliveries` table's statistics once `done` holds for them. A connection reports its
 * statistics as it ends (close the store first); they reach the view a moment later.
 */
async function deliveriesStats(client: pg.Client, done: (stats: DeliveryTableStats) => boolean): Promise<DeliveryTableStats> {
  const read = async () => {
    const { rows } = await client.query("SELECT n_tup_ins, n_tup_del, seq_tup_read FROM pg_stat_user_tables WHERE relname = 'deliveries'");
    return { n_tup_ins: Number(rows[0].n_tup_ins), n_tup_del: Number(rows[0].n_tup_del), seq_tup_read: Number(rows[0].seq_tup_read) };
  };
  // Past the bound, the last figures, for the caller's assertion to show.
  return vi
    .waitFor(
      async () => {
        const stats = await read();
        if (!done(stats)) throw new Error('not yet');
        return stats;
      },
      { timeout: 10_000, interval: 50 },
    )
    .catch(read);
}

/** A store and a plain client on a database of the test's own, closed when `fn` ends. */
async function withFreshStore(fn: (store: PostgresStore, client: pg.Client) => Promise<void>): Promise<void> {
  const fresh = await createDatabase(adminUrl!);
  const store = await PostgresStore.open(fresh);
  const client = new pg.Client({ connectionString: fresh });
  await client.connect();
  try {
    await fn(store, client);
  } finally {
    await store.close();
    await client.end();
  }
}

describe.skipIf(!adminUrl)('PostgresStore on a real server', () => {
  let url: string;
  let a: PostgresStore;
  let b: PostgresStore;

  beforeAll(async () => {
    url = await createDatabase(adminUrl!);
    // Two daemons starting together: both open, the schema is made once.
    [a, b] = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  it('migrates once when two stores open the same empty database at the same time', async () => {
    const fresh = await createDatabase(adminUrl!);
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open(fresh)));
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    const { rows } = await client.query('SELECT version, count(*)::int AS n FROM schema_migrations GROUP BY version');
    await client.end();
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    expect(await PostgresStore.initialised(fresh)).toBe(false);
    await stores[0].users.insert(user('admin'));
    expect(await PostgresStore.initialised(fresh)).toBe(true);
    expect(stores[0].info).toEqual({ kind: 'postgres', location: new URL(fresh).host + new URL(fresh).pathname });
    await Promise.all(stores.map((s) => s.close()));
  });

  it('refuses a database made by a development build from before the baseline, and leaves it untouched', async () => {
    const old = await createDatabase(adminUrl!);
    const client = new pg.Client({ connectionString: old });
    await client.connect();
    try {
      await client.query("CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())");
      await client.query("INSERT INTO schema_migrations (version, name) VALUES (1, 'initial'), (2, 'claim per endpoint')");
      const error = await PostgresStore.open(old).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StoreCorruptError);
      expect((error as Error).message).toMatch(/development build of panelctl from before 0\.1\.0/);
      const { rows } = await client.query("SELECT to_regclass('users')::text AS users, (SELECT count(*)::int FROM schema_migrations) AS n");
      expect(rows[0]).toEqual({ users: null, n: 2 });
    } finally {
      await client.end();
    }
  });

  it('answers initialised false for a database without the schema, and unavailable for an unreachable server', async () => {
    const empty = await createDatabase(adminUrl!);
    expect(await PostgresStore.initialised(empty)).toBe(false);
    const unreachable = 'postgres://panel:hunter2@127.0.0.1:1/nothing';
    const error = await PostgresStore.open(unreachable).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).not.toContain('hunter2');
    expect((error as Error).cause).toBeDefined();
    await expect(PostgresStore.initialised(unreachable)).rejects.toBeInstanceOf(StoreUnavailableError);
  });

  it('connects through the server\'s Unix socket when the URL names its directory (host=DIR)', async () => {
    const tcp = await createDatabase(adminUrl!);
    const socket = await socketUrlOf(tcp);
    const params = new URL(socket).searchParams;
    const store = await PostgresStore.open(socket);
    try {
      const id = (await store.users.insert(user('admin'))).id;
      expect((await store.users.get(id))?.role).toBe('admin');
      expect(store.info.location).toBe(`${params.get('host')}:${params.get('port')}${new URL(tcp).pathname}`);
      // The store's connections to this database came through the socket: no client address.
      const admin = new pg.Client({ connectionString: adminUrl! });
      await admin.connect();
      const { rows } = await admin.query<{ socket: number; tcp: number }>(
        `SELECT count(*) FILTER (WHERE client_addr IS NULL)::int AS socket, count(*) FILTER (WHERE client_addr IS NOT NULL)::int AS tcp
         FROM pg_stat_activity WHERE datname = $1 AND application_name = 'panelctl'`,
        [new URL(tcp).pathname.slice(1)],
      );
      await admin.end();
      expect(rows[0].socket).toBeGreaterThan(0);
      expect(rows[0].tcp).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('keeps the unique rules as conflicts, whichever daemon writes', async () => {
    await a.users.insert(user('customer', 'Mixed@Example.com'));
    expect(await conflict(b.users.insert(user('customer', 'mixed@example.COM')))).toBe('users.email');
    const other = await b.users.insert(user());
    expect(await conflict(a.users.update(other.id, { email: 'MIXED@example.com' }))).toBe('users.email');
    expect((await a.users.byEmail('MIXED@EXAMPLE.COM'))!.email).toBe('Mixed@Example.com');

    const c1 = await a.users.insert(user());
    const c2 = await a.users.insert(user());
    const admin = await a.users.insert(user('admin'));
    const s1 = await a.subscriptions.insert({ customer_id: c1.id, main_domain: 'one.example', is_default: false, status: 'active', created_at: now(), updated_at: now() });
    expect(s1.is_default).toBe(true); // the customer's first
    const s2 = await b.subscriptions.insert({ customer_id: c2.id, main_domain: 'two.example', is_default: false, status: 'active', created_at: now(), updated_at: now() });
    const sub = (customer_id: number, main_domain: string, is_default = false) =>
      ({ customer_id, main_domain, is_default, status: 'active' as const, created_at: now(), updated_at: now() });
    expect(await conflict(b.subscriptions.insert(sub(c2.id, 'one.example')))).toBe('subscriptions.main_domain');
    expect(await conflict(b.subscriptions.insert(sub(admin.id, 'admin.example')))).toBe('users.customer');
    expect(await conflict(b.subscriptions.insert(sub(999_999, 'ghost.example')))).toBe('users.customer');

    await a.sites.insert({ subscription_id: s1.id, domain: 'www.one.example', created_at: now() });
    expect(await conflict(b.sites.insert({ subscription_id: s2.id, domain: 'www.one.example', created_at: now() }))).toBe('sites.domain');
    // A site may not take another customer's main domain, nor a main domain another's site.
    expect(await conflict(b.sites.insert({ subscription_id: s2.id, domain: 'one.example', created_at: now() }))).toBe('domains.owner');
    expect(await conflict(b.subscriptions.insert(sub(c2.id, 'www.one.example')))).toBe('domains.owner');
    // The customer's own main domain as a site is fine.
    await b.sites.insert({ subscription_id: s1.id, domain: 'one.example', created_at: now() });
    expect(await conflict(a.sites.insert({ subscription_id: 999_999, domain: 'x.example', created_at: now() }))).toBe('subscriptions.missing');

    // A new default takes the mark from the old one in the same transaction.
    const s3 = await a.subscriptions.insert(sub(c1.id, 'three.example', true));
    expect(s3.is_default).toBe(true);
    expect((await b.subscriptions.get(s1.id))!.is_default).toBe(false);
    expect((await b.subscriptions.defaultFor(c1.id))!.id).toBe(s3.id);
  });

  it('lets only one of two daemons take a domain for different customers, however they race', async () => {
    const c1 = await a.users.insert(user());
    const c2 = await b.users.insert(user());
    const sub = (customer_id: number, main_domain: string) =>
      ({ customer_id, main_domain, is_default: false, status: 'active' as const, created_at: now(), updated_at: now() });
    const s1 = await a.subscriptions.insert(sub(c1.id, `race-a-${n}.example`));
    for (let i = 0; i < 15; i++) {
      const domain = `race-${i}-${n}.example`;
      // One daemon adds it as c1's site while the other makes it c2's main domain.
      const results = await Promise.allSettled([
        a.sites.insert({ subscription_id: s1.id, domain, created_at: now() }),
        b.subscriptions.insert(sub(c2.id, domain)),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(StoreConflictError);
      expect((lost.reason as StoreConflictError).constraint).toBe('domains.owner');
    }
  });

  it('keeps the domain rule exact when sites and subscriptions are created with their events, however two daemons race', async () => {
    const c1 = await a.users.insert(user());
    const c2 = await b.users.insert(user());
    // The customers' own endpoints: an admin's would also take the events of the tests after this one.
    const hooks = [(await a.webhooks.insert(webhook(c1.id))).id, (await a.webhooks.insert(webhook(c2.id))).id];
    const created = (name: string, idKey: string, domain: string) => ({
      id: randomUUID(),
      event: name,
      timestamp: now(),
      next_attempt_at: Date.now(),
      idKey,
      data: { domain },
    });
    await a.subscriptions.insert({ customer_id: c1.id, main_domain: `crace-a-${n}.example`, is_default: true, status: 'active', created_at: now(), updated_at: now() });
    const pending = async () => [...(await a.outbox.pendingByEndpoint(hooks)).values()].reduce((sum, n) => sum + n, 0);
    const before = await pending();
    for (let i = 0; i < 15; i++) {
      const domain = `crace-${i}-${n}.example`;
      // One daemon adds it as c1's site (in their default subscription) while the other makes it c2's main domain.
      const results = await Promise.allSettled([
        a.sites.create({ customer_id: c1.id, domain, created_at: now() }, created('site.created', 'site_id', domain)),
        b.subscriptions.create(
          { customer_id: c2.id, main_domain: domain, is_default: false, status: 'active', created_at: now(), updated_at: now() },
          created('subscription.created', 'subscription_id', domain),
        ),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
      expect(lost.reason).toBeInstanceOf(StoreConflictError);
      expect((lost.reason as StoreConflictError).constraint).toBe('domains.owner');
    }
    // The customers' endpoints got exactly the winners' events.
    expect(await pending()).toBe(before + 15);
    // Their deliveries go with them: the claim tests after this one claim whatever is pending.
    for (const id of hooks) await a.webhooks.remove(id);
  });

  it('creates a site with its event in one statement outside a transaction: no BEGIN, no reads, no COMMIT of its own', async () => {
    const c = await a.users.insert(user());
    const hook = await a.webhooks.insert(webhook(c.id));
    await a.subscriptions.insert({ customer_id: c.id, main_domain: `one-${n}.example`, is_default: true, status: 'active', created_at: now(), updated_at: now() });
    const sent: string[] = [];
    const query = pg.Client.prototype.query;
    const spy = vi.spyOn(pg.Client.prototype, 'query').mockImplementation(function (this: pg.Client, ...args: unknown[]) {
      const first = args[0] as string | { text?: string };
      sent.push(typeof first === 'string' ? first : (first?.text ?? ''));
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query);
    try {
      const domain = `a.one-${n}.example`;
      const site = await a.sites.create(
        { customer_id: c.id, domain, created_at: now() },
        { id: randomUUID(), event: 'site.created', timestamp: now(), next_attempt_at: Date.now(), idKey: 'site_id', data: { domain } },
      );
      expect(site.domain).toBe(domain);
    } finally {
      spy.mockRestore();
    }
    // Change notices go out after the commit, on their own (batched with others); the store's
    // housekeeping, should it run meanwhile, reads no sites or subscriptions and inserts nothing.
    const statements = sent.filter((text) => /^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT)|panelctl_create_site|FROM (sites|subscriptions)|INTO (sites|events|deliveries)/i.test(text));
    expect(statements).toHaveLength(1);
    expect(statements[0]).toContain('panelctl_create_site');
    expect(await a.outbox.pendingByEndpoint([hook.id])).toEqual(new Map([[hook.id, 1]]));
    await a.webhooks.remove(hook.id);
  });

  it('commits a transaction as a whole, rolls it back on a throw, and survives a conflict caught inside it', async () => {
    const boom = new Error('boom');
    const thrown = await a
      .transaction(async (tx) => {
        await tx.users.insert(user('customer', 'rolled-back@example.com'));
        throw boom;
      })
      .catch((e: unknown) => e);
    expect(thrown).toBe(boom);
    expect(await b.users.byEmail('rolled-back@example.com')).toBeUndefined();

    const taken = await a.users.insert(user());
    const made = await a.transaction(async (tx) => {
      const first = await tx.users.insert(user());
      await expect(tx.users.insert(user('customer', taken.email))).rejects.toBeInstanceOf(StoreConflictError);
      const second = await tx.users.insert(user());
      // Not visible to the other daemon before commit.
      expect(await b.users.get(first.id)).toBeUndefined();
      return [first, second];
    });
    expect(await b.users.get(made[0].id)).toEqual(made[0]);
    expect(await b.users.get(made[1].id)).toEqual(made[1]);
  });

  it('removes a user with everything they own by cascade', async () => {
    const customer = await a.users.insert(user());
    const key = await a.apiKeys.insert({ user_id: customer.id, name: 'k', key_hash: randomUUID(), key_prefix: 'ncp_x', last_used_at: null, expires_at: null, created_at: now() });
    const hook = await a.webhooks.insert(webhook(customer.id));
    const sub = await a.subscriptions.insert({ customer_id: customer.id, main_domain: `cascade-${n}.example`, is_default: true, status: 'active', created_at: now(), updated_at: now() });
    const site = await a.sites.insert({ subscription_id: sub.id, domain: `www.cascade-${n}.example`, created_at: now() });
    const token = await a.resetTokens.insert({ user_id: customer.id, token_hash: randomUUID(), expires_at: new Date(Date.now() + 3600_000).toISOString(), used_at: null, created_at: now() });
    const d = delivery(hook.id, Date.now());
    await a.outbox.enqueue(event(), [d]);
    const [entry] = await a.deliveryLog.append([logEntry(hook.id)]);
    expect((await a.users.remove(customer.id))!.id).toBe(customer.id);
    expect(await b.apiKeys.get(key.id)).toBeUndefined();
    expect(await b.webhooks.get(hook.id)).toBeUndefined();
    expect(await b.subscriptions.get(sub.id)).toBeUndefined();
    expect(await b.sites.get(site.id)).toBeUndefined();
    expect(await b.resetTokens.byHash(token.token_hash)).toBeUndefined();
    expect(await b.outbox.get(d.id)).toBeUndefined();
    expect(await b.deliveryLog.get(hook.id, entry.id)).toBeUndefined();
  });

  it("takes an endpoint's deliveries in every state with it when it is removed (pending or not, each by its own index)", async () => {
    const owner = await a.users.insert(user());
    const hook = await a.webhooks.insert(webhook(owner.id));
    const other = await a.webhooks.insert(webhook(owner.id));
    const pending = delivery(hook.id, Date.now());
    const settled = { ...delivery(hook.id, Date.now()), state: 'failed' as const };
    const kept = { ...delivery(other.id, Date.now()), state: 'failed' as const };
    await a.outbox.enqueue(event(), [pending, settled, kept]);
    expect(await b.outbox.get(settled.id)).toMatchObject({ state: 'failed' });
    await a.webhooks.remove(hook.id);
    expect(await b.outbox.get(pending.id)).toBeUndefined();
    expect(await b.outbox.get(settled.id)).toBeUndefined();
    expect(await b.outbox.get(kept.id)).toMatchObject({ state: 'failed' });
  });

  it('leaves no delivery or log row of an endpoint removed while they are written, whichever commits first', async () => {
    const owner = await a.users.insert(user());
    const admin = new pg.Client({ connectionString: url });
    const remover = new pg.Client({ connectionString: url });
    await Promise.all([admin.connect(), remover.connect()]);
    const rowsOf = async (id: number) => {
      const { rows } = await admin.query<{ n: number }>(
        'SELECT (SELECT count(*) FROM deliveries WHERE endpoint_id = $1) + (SELECT count(*) FROM delivery_log WHERE endpoint_id = $1) AS n',
        [id],
      );
      return Number(rows[0].n);
    };
    // Statements of this database waiting for a row lock.
    const waiting = async () => {
      const { rows } = await admin.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
      );
      return rows[0].n;
    };
    try {
      // The removal first (not yet committed): the writes wait for it, then leave the endpoint out.
      const gone = await a.webhooks.insert(webhook(owner.id));
      await remover.query('BEGIN');
      await remover.query('DELETE FROM webhooks WHERE id = $1', [gone.id]);
      const recorded = a.outbox.record('w', [], [logEntry(gone.id)]);
      const published = a.outbox.publish({ ...event(), owner_id: owner.id }, { body: '{}', next_attempt_at: Date.now(), created_at: now() });
      const enqueued = a.outbox.enqueue(event(), [delivery(gone.id, Date.now())]);
      await vi.waitFor(async () => expect(await waiting()).toBe(3), { timeout: 10_000 });
      await remover.query('COMMIT');
      const [entry] = await recorded;
      expect(await a.deliveryLog.getMany([entry.id])).toEqual([]);
      expect(await published).toEqual([]);
      await enqueued;
      expect(await rowsOf(gone.id)).toBe(0);

      // The writes first: the removal waits for their commit, then takes their rows with it.
      const hook = await a.webhooks.insert(webhook(owner.id));
      let removed: Promise<unknown> | null = null;
      await a.transaction(async (tx) => {
        await tx.outbox.enqueue(event(), [delivery(hook.id, Date.now())]);
        expect(await tx.outbox.publish({ ...event(), owner_id: owner.id }, { body: '{}', next_attempt_at: Date.now(), created_at: now() })).toHaveLength(1);
        await tx.deliveryLog.append([logEntry(hook.id)]);
        removed = remover.query('DELETE FROM webhooks WHERE id = $1', [hook.id]);
        await vi.waitFor(async () => expect(await waiting()).toBe(1), { timeout: 10_000 });
      });
      expect((await removed!) as pg.QueryResult).toMatchObject({ rowCount: 1 });
      expect(await rowsOf(hook.id)).toBe(0);
    } finally {
      await Promise.all([admin.end(), remover.end()]);
    }
  });

  it('publishes changes to every store of the database, the writer included', async () => {
    const heardByB = heard(b);
    const heardByA = heard(a);
    const made = await a.users.insert(user());
    const ofMade = (c: Change) => c.kind === 'record' && c.collection === 'users' && c.id === made.id;
    expect(await heardByB.until(ofMade)).toEqual({ kind: 'record', collection: 'users', id: made.id });
    expect(await heardByA.until(ofMade)).toEqual({ kind: 'record', collection: 'users', id: made.id });

    const hook = await a.webhooks.insert(webhook(made.id));
    const outbox = nextChange(b, (c) => c.kind === 'outbox');
    await a.outbox.enqueue(event(), [delivery(hook.id, Date.now() + 3600_000)]);
    expect(await outbox).toEqual({ kind: 'outbox' });

    // New log entries are announced by id, one notice per write, whatever their size; B reads them by id.
    const logged = nextChange(b, (c) => c.kind === 'logged');
    const entries = await a.deliveryLog.append([logEntry(hook.id), logEntry(hook.id, { response: 'x'.repeat(4096), payload: { blob: 'y'.repeat(9000) } })]);
    expect(await logged).toEqual({ kind: 'logged', ids: entries.map((e) => e.id) });
    expect(await b.deliveryLog.getMany(entries.map((e) => e.id))).toEqual(entries);

    // Settings: B's cached copy is refreshed by the feed.
    expect((await b.settings.get()).login_max_attempts).toBe(5);
    const refreshed = nextChange(b, (c) => c.kind === 'record' && c.collection === 'settings');
    await a.settings.update({ login_max_attempts: 7 });
    await refreshed;
    expect((await b.settings.get()).login_max_attempts).toBe(7);
    expect((await a.settings.update({ jwt_ttl_seconds: 600 })).login_max_attempts).toBe(7);
  });

  it('announces a record\'s entries with its commit, 400 ids a notice at most, and a retry among its outcomes as outbox work', async () => {
    const owner = await a.users.insert(user());
    const hook = await a.webhooks.insert(webhook(owner.id));
    const retried = delivery(hook.id, 0);
    // The enqueue's own notice is heard before listening for the record's.
    const queued = nextChange(b, (c) => c.kind === 'outbox');
    await a.outbox.enqueue(event(), [retried]);
    await queued;
    expect(await a.outbox.claim({ owner: 'w', now: 1, leaseMs: 60_000, limit: 1, perEndpoint: 1 })).toHaveLength(1);
    const heardByB = heard(b);
    const entries = Array.from({ length: 450 }, () => logEntry(hook.id));
    const recorded = await a.outbox.record('w', [{ id: retried.id, state: 'pending', attempts: 1, next_attempt_at: 2_000 }], entries);
    const ids = recorded.map((e) => e.id);
    const first = await heardByB.until((c) => c.kind === 'logged' && c.ids.includes(ids[0]));
    const last = await heardByB.until((c) => c.kind === 'logged' && c.ids.includes(ids[449]));
    // Two notices (a payload holds 8,000 bytes at most), every id once, in order.
    expect(first).not.toBe(last);
    expect([...(first as { ids: number[] }).ids, ...(last as { ids: number[] }).ids]).toEqual(ids);
    expect(await heardByB.until((c) => c.kind === 'outbox')).toEqual({ kind: 'outbox' });
    // The retry leaves with its endpoint: the claim tests count what the outbox holds.
    await a.webhooks.remove(hook.id);
  });

  it('records an entry\'s text as given: payload key order, quotes, commas, backslashes, surrogate pairs; a lone surrogate as U+FFFD', async () => {
    const owner = await a.users.insert(user());
    const hook = await a.webhooks.insert(webhook(owner.id));
    const odd = 'quote " comma , brace } backslash \\ tab \t é 😀 \\u0000';
    const entry = logEntry(hook.id, {
      payload: { z: odd, a: [odd, { y: 1, b: null }], m: 1.5 },
      response: odd,
      request_headers: { 'x-odd': odd },
      reason: odd,
      daemon: 'host:1',
      next_attempt_at: null,
    });
    const [recorded] = await a.outbox.record('w', [], [entry]);
    const [listed] = await b.deliveryLog.list(hook.id);
    expect(listed).toEqual(recorded);
    expect(JSON.stringify(listed.payload)).toBe(JSON.stringify(entry.payload));
    // A lone surrogate (which no decoded answer holds) goes in as the driver encodes text.
    const [lone] = await a.outbox.record('w', [], [logEntry(hook.id, { response: `a\ud800b` })]);
    expect((await b.deliveryLog.getMany([lone.id]))[0].response).toBe('a\ufffdb');
    // A NUL in the request headers or extra fields (kept as text, read as jsonb, which refuses
    // one) is kept as U+FFFD: the log stays readable.
    const [nul] = await a.outbox.record('w', [], [logEntry(hook.id, { request_headers: { 'x-n\0': 'a\0b' }, reason: 'r\0' })]);
    const [read] = await b.deliveryLog.getMany([nul.id]);
    expect(read.request_headers).toEqual({ 'x-n\ufffd': 'a\ufffdb' });
    expect(read.reason).toBe('r\ufffd');
    expect((await b.deliveryLog.list(hook.id))[0].id).toBe(nul.id);
  });

  it('reconnects its LISTEN connection when the server drops it, and asks listeners to look again', async () => {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const lookAgain = nextChange(b, (c) => c.kind === 'outbox');
      const { rows } = await admin.query(
        "SELECT pg_terminate_backend(pid) AS done FROM pg_stat_activity WHERE application_name = 'panelctl-listen' AND datname = current_database()",
      );
      expect(rows.length).toBe(2); // a's and b's
      await lookAgain;
      const seen = nextChange(b, (c) => c.kind === 'record' && c.collection === 'users');
      const made = await a.users.insert(user());
      expect(await seen).toEqual({ kind: 'record', collection: 'users', id: made.id });

      // Idle pool connections killed under the store: the statement they never ran is sent again
      // on a fresh connection, for single calls and transactions alike.
      const kill = () =>
        admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'panelctl' AND datname = current_database()");
      await kill();
      expect(await a.users.get(made.id)).toEqual(made);
      await Promise.all(Array.from({ length: 10 }, () => a.users.count()));
      await kill();
      expect(await a.transaction((tx) => tx.users.get(made.id))).toEqual(made);
    } finally {
      await admin.end();
    }
  });

  it('never gives two store instances the same delivery, spreads each claim over endpoints, and serves each endpoint from one claimer', async () => {
    const owner = await a.users.insert(user());
    const hooks = await Promise.all(Array.from({ length: 8 }, () => a.webhooks.insert(webhook(owner.id))));
    const t0 = Date.now() - 60_000;
    const all = hooks.flatMap((h, i) => Array.from({ length: 25 }, (_, j) => delivery(h.id, t0 + j * 10 + i, { owner_id: owner.id })));
    await a.outbox.enqueue(event(), all);
    const claimed = new Map<string, string>();
    // Claimers racing one another may come back short, or empty when another holds all their
    // candidates for the moment; claiming on drains the rest (the contract), so each claims on
    // until every delivery is taken. (Each used to stop at its first empty claim: three that lost
    // their first race left everything to the fourth, the likely cause of a "spread" failure
    // seen once in about 20 runs.)
    const claimer = async (store: PostgresStore, name: string) => {
      while (claimed.size < all.length) {
        const got = await store.outbox.claim({ owner: name, now: Date.now(), leaseMs: 60_000, limit: 7, perEndpoint: 2 });
        const perEndpoint = new Map<number, number>();
        for (const d of got) perEndpoint.set(d.endpoint_id, (perEndpoint.get(d.endpoint_id) ?? 0) + 1);
        expect(Math.max(...perEndpoint.values())).toBeLessThanOrEqual(2);
        for (const d of got) {
          expect(claimed.get(d.id)).toBeUndefined();
          claimed.set(d.id, name);
        }
      }
    };
    await Promise.all([claimer(a, 'a1'), claimer(b, 'b1'), claimer(a, 'a2'), claimer(b, 'b2')]);
    expect(claimed.size).toBe(all.length);
    // An endpoint is served by one claimer at a time (its cap held over all of them): every
    // delivery of an endpoint went to the claimer holding it. How the endpoints spread over the
    // claimers is the race's: the first claim may take them all.
    for (const hook of hooks) {
      expect(new Set(all.filter((d) => d.endpoint_id === hook.id).map((d) => claimed.get(d.id))).size).toBe(1);
    }
    // Only the lease holder's outcomes count.
    const [first] = all;
    expect(await b.outbox.settle('nobody', [{ id: first.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([]);
    expect(await a.outbox.get(first.id)).toMatchObject({ state: 'pending' });
    const holder = claimed.get(first.id)!;
    expect(await b.outbox.settle(holder, [{ id: first.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([first.id]);
    // A final outcome leaves the outbox (its attempt is in the delivery log).
    expect(await a.outbox.get(first.id)).toBeUndefined();
  });

  it('claims past the deliveries another claimer holds locked, within each endpoint\'s share and the limit', async () => {
    const owner = await a.users.insert(user());
    const hooks = await Promise.all(Array.from({ length: 3 }, () => a.webhooks.insert(webhook(owner.id))));
    const t0 = Date.now() - 60_000;
    const all = hooks.flatMap((h, i) => Array.from({ length: 6 }, (_, j) => delivery(h.id, t0 + j * 10 + i, { owner_id: owner.id })));
    await a.outbox.enqueue(event(), all);
    // Another daemon in the middle of its claim: the first two deliveries of each endpoint locked.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    await other.query('BEGIN');
    const held = hooks.flatMap((h) => all.filter((d) => d.endpoint_id === h.id).slice(0, 2).map((d) => d.id));
    await other.query('SELECT id FROM deliveries WHERE id = ANY ($1::text[]) FOR UPDATE', [held]);
    try {
      const got = await b.outbox.claim({ owner: 'b-past', now: Date.now(), leaseMs: 60_000, limit: 5, perEndpoint: 2, skipOwners: [] });
      // The next two of each endpoint in due order, five in all: none of the held ones.
      const next = hooks.flatMap((h) => all.filter((d) => d.endpoint_id === h.id).slice(2, 4));
      next.sort((x, y) => x.next_attempt_at - y.next_attempt_at);
      expect(got.map((d) => d.id)).toEqual(next.slice(0, 5).map((d) => d.id));
    } finally {
      await other.query('ROLLBACK');
      await other.end();
    }
    // The held ones are claimable once released, two of an endpoint at most (by another
    // claimer once b-past has stopped: it holds the endpoints it leased from until then).
    await b.outbox.leave('b-past');
    const rest = await a.outbox.claim({ owner: 'a-rest', now: Date.now(), leaseMs: 60_000, limit: 100, perEndpoint: 2 });
    expect(rest.map((d) => d.id).sort()).toEqual([...held].sort());
  });

  it('lets another claimer take a delivery once its lease ends, and then ignores the first holder', async () => {
    const owner = await a.users.insert(user());
    const hook = await a.webhooks.insert(webhook(owner.id));
    const t = 5_000_000_000_000; // far future, so other tests' claims do not reach it
    const d = delivery(hook.id, t, { owner_id: owner.id, manual: true });
    await a.outbox.enqueue(event(), [d]);
    const opts = { limit: 10, perEndpoint: 10, leaseMs: 1000, ids: [d.id] };
    expect((await a.outbox.claim({ ...opts, owner: 'a', now: t })).map((x) => x.id)).toEqual([d.id]);
    expect(await b.outbox.claim({ ...opts, owner: 'b', now: t + 999 })).toEqual([]);
    const retaken = await b.outbox.claim({ ...opts, owner: 'b', now: t + 1000 });
    expect(retaken).toEqual([{ ...d }]);
    expect(await a.outbox.settle('a', [{ id: d.id, state: 'failed', attempts: 1, next_attempt_at: t }])).toEqual([]);
    expect(await b.outbox.settle('b', [{ id: d.id, state: 'pending', attempts: 1, next_attempt_at: t + 2000 }])).toEqual([d.id]);
    expect(await a.outbox.get(d.id)).toMatchObject({ state: 'pending', attempts: 1, next_attempt_at: t + 2000, manual: true });
    // Released leases are claimable at once; skips do not hide named deliveries.
    expect(await a.outbox.claim({ ...opts, owner: 'a', now: t + 2000, skipEndpoints: [hook.id] })).toHaveLength(1);
    await a.outbox.release('a', [d.id]);
    const skipped = await b.outbox.claim({ owner: 'b', now: t + 2000, leaseMs: 1000, limit: 1000, perEndpoint: 1000, skipEndpoints: [hook.id] });
    expect(skipped.map((x) => x.id)).not.toContain(d.id);
    await b.outbox.release('b', skipped.map((x) => x.id));
    expect(await b.outbox.claim({ ...opts, owner: 'b', now: t + 2000 })).toHaveLength(1);
  });

  it('counts 100 concurrent limiter hits from two daemons exactly once each', async () => {
    const key = `login:${randomUUID()}`;
    const t = Date.now();
    const hits = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).limiter.hit(key, 60_000, t)));
    expect(hits.map((h) => h.count).sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect((await a.limiter.get(key))!.count).toBe(100);
    // A lock keeps counting; once it ends, the next hit starts a new window.
    await b.limiter.lock(key, t + 1000);
    expect(await a.limiter.lock(key, t + 500)).toMatchObject({ locked_until: t + 1000 });
    expect(await a.limiter.hit(key, 60_000, t + 10)).toMatchObject({ count: 101, locked_until: t + 1000 });
    expect(await a.limiter.hit(key, 60_000, t + 1000)).toEqual({ key, count: 1, window_start: t + 1000, locked_until: 0 });
    await b.limiter.release(key);
    await b.limiter.release(key);
    expect((await a.limiter.get(key))!.count).toBe(0);
    expect(await a.limiter.hit(key, 60_000, t + 61_000)).toMatchObject({ count: 1, window_start: t + 61_000 });
  });

  it('counts concurrent request-window hits of several keys from two daemons exactly once each, several keys a statement', async () => {
    const keys = Array.from({ length: 5 }, () => `rl:user:${randomUUID()}`);
    const t = Date.now();
    const hits = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b).limiter.countRequest(keys[i % keys.length], 60_000, t)));
    for (const key of keys) {
      const counts = hits.filter((h) => h.key === key).map((h) => h.count);
      expect(counts.sort((x, y) => x - y), key).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect((await a.limiter.get(key))!.count).toBe(40);
    }
    // The window ended: the next hit starts a new one, as a durable hit would.
    expect(await b.limiter.countRequest(keys[0], 60_000, t + 60_000)).toEqual({ key: keys[0], count: 1, window_start: t + 60_000, locked_until: 0 });
  });

  it('holds API key uses in memory until flushed, and shares one secret between daemons', async () => {
    const owner = await a.users.insert(user());
    const key = await a.apiKeys.insert({ user_id: owner.id, name: 'k', key_hash: randomUUID(), key_prefix: 'ncp_x', last_used_at: null, expires_at: null, created_at: now() });
    await a.apiKeys.touch(key.id, Date.parse('2026-11-21T10:00:00.250Z'));
    expect((await a.apiKeys.get(key.id))!.last_used_at).toBe('2026-11-21T10:00:00.000Z');
    await a.flush();
    expect((await b.apiKeys.get(key.id))!.last_used_at).toBe('2026-11-21T10:00:00.000Z');

    const [s1, s2] = await Promise.all([a.sharedSecret('jwt', () => 'from-a'), b.sharedSecret('jwt', () => 'from-b')]);
    expect(s1).toBe(s2);
    expect(await b.sharedSecret('jwt', () => 'later')).toBe(s1);
  });

  it('keeps the newest 100 log entries per endpoint, filters them, and resumes a stream by id', async () => {
    const owner = await a.users.insert(user());
    const hook = await a.webhooks.insert(webhook(owner.id));
    const t = Date.parse('2026-01-01T00:00:00.000Z');
    const entries = Array.from({ length: 130 }, (_, i) =>
      logEntry(hook.id, { success: i % 3 !== 0, event: i % 2 ? 'site.created' : 'site.deleted', created_at: new Date(t + i * 1000).toISOString(), payload: i }),
    );
    const appended = [];
    for (let i = 0; i < entries.length; i += 20) appended.push(...(await a.deliveryLog.append(entries.slice(i, i + 20))));
    const ids = appended.map((e) => e.id);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    const listed = await b.deliveryLog.list(hook.id, { limit: 500 });
    expect(listed).toHaveLength(100);
    expect(listed[0]).toEqual(appended[129]);
    expect(listed.map((e) => e.payload)).toEqual(Array.from({ length: 100 }, (_, i) => 129 - i));
    expect((await b.deliveryLog.list(hook.id, { failed: true })).every((e) => !e.success)).toBe(true);
    expect((await b.deliveryLog.list(hook.id, { event: 'site.deleted', limit: 5 })).map((e) => e.payload)).toEqual([128, 126, 124, 122, 120]);
    expect((await b.deliveryLog.list(hook.id, { since: t + 125_000 })).map((e) => e.payload)).toEqual([129, 128, 127, 126, 125]);
    expect(await b.deliveryLog.get(hook.id, appended[0].id)).toBeUndefined();
    expect((await b.deliveryLog.since(appended[126].id, 10)).map((e) => e.payload)).toEqual([127, 128, 129]);
  });

  it('prunes a dispatcher\'s log rows every 100 entries of an endpoint, and only that endpoint\'s', async () => {
    const owner = await a.users.insert(user());
    const [busy, quiet] = [await a.webhooks.insert(webhook(owner.id)), await a.webhooks.insert(webhook(owner.id))];
    await a.outbox.record('w', [], Array.from({ length: 30 }, () => logEntry(quiet.id)));
    const recorded: DeliveryLogEntry[] = [];
    for (let i = 0; i < 25; i++) recorded.push(...(await a.outbox.record('w', [], Array.from({ length: 10 }, () => logEntry(busy.id)))));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const rows = async (endpointId: number) =>
      (await client.query('SELECT id FROM delivery_log WHERE endpoint_id = $1 ORDER BY id DESC', [endpointId])).rows.map((r) => Number(r.id));
    // Pruned at the 100th and the 200th entry, each time to the newest 100 of the rows there
    // before that batch (190 then: 100 kept, and the batch's 10), so 110 and 50 since.
    expect(await rows(busy.id)).toEqual(recorded.slice(-160).map((e) => e.id).reverse());
    expect(await rows(quiet.id)).toHaveLength(30);
    await client.end();
  });

  it('keeps claims and outcomes on their indexes when the outbox outgrows the plans made while it was small', async () => {
    // A database of its own: the table statistics read at the end are this store's alone.
    const fresh = await createDatabase(adminUrl!);
    const store = await PostgresStore.open(fresh);
    const owner = await store.users.insert(user('admin'));
    const hook = await store.webhooks.insert(webhook(owner.id));
    let queued = 0;
    const queue = async (count: number) => {
      const t0 = Date.now() - 60_000;
      await store.outbox.enqueue(event(), Array.from({ length: count }, (_, i) => delivery(hook.id, t0 + i)));
      queued += count;
    };
    // A dispatcher's turn: claim, then record the outcomes and their log entries in one batch.
    const turn = async () => {
      const claimed = await store.outbox.claim({ owner: 'w', now: Date.now(), leaseMs: 60_000, limit: 100, perEndpoint: 100 });
      const outcomes = claimed.map((d) => ({ id: d.id, state: 'succeeded' as const, attempts: 1, next_attempt_at: 0 }));
      await store.outbox.record('w', outcomes, claimed.map((d) => logEntry(hook.id, { delivery_id: d.id })));
      return claimed.length;
    };
    try {
      // The statements are prepared, and planned, while the outbox holds a row at a time...
      for (let i = 0; i < 8; i++) {
        await queue(1);
        expect(await turn()).toBe(1);
      }
      // ...and then made over thousands of rows.
      await queue(3_000);
      let made = 0;
      while (made < 3_000) made += await turn();
    } finally {
      await store.close();
    }
    const client = new pg.Client({ connectionString: fresh });
    await client.connect();
    try {
      const stats = await deliveriesStats(client, (x) => x.n_tup_del >= queued);
      expect(stats.n_tup_del).toBe(queued);
      // Every claim and outcome found its rows by index or row address: no delivery was read by
      // a scan of the table.
      expect(stats.seq_tup_read).toBe(0);
    } finally {
      await client.end();
    }
  });

  it('publishes without reading one endpoint\'s backlog, whatever the statistics say about it', async () => {
    // A dead endpoint's deliveries pile up; with statistics that know it, a publish's look for
    // claimable deliveries of each matched endpoint was planned as a scan of the table (a
    // hundred milliseconds a publish at 50,000 pending).
    await withFreshStore(async (store, client) => {
      const owner = await store.users.insert(user('admin'));
      const hooks: Array<{ id: number }> = [];
      for (let i = 0; i < 5; i++) hooks.push(await store.webhooks.insert(webhook(owner.id)));
      const t0 = Date.now() - 60_000;
      const backlog = Array.from({ length: 5_000 }, (_, i) => delivery(hooks[0].id, t0 + i));
      await store.outbox.enqueue(event(), backlog);
      await client.query('ANALYZE deliveries');
      let published = 0;
      for (let i = 0; i < 5; i++) {
        const queued = await store.outbox.publish(event(), { body: '{"x":1}', next_attempt_at: Date.now(), created_at: now() });
        expect(queued).toHaveLength(hooks.length);
        published += queued.length;
      }
      // Closed (and so its statistics reported) before they are read; closing again is a no-op.
      await store.close();
      const stats = await deliveriesStats(client, (x) => x.n_tup_ins >= backlog.length + published);
      expect(stats.n_tup_ins).toBe(backlog.length + published);
      expect(stats.seq_tup_read).toBe(0);
    });
  });

  it('matches a published event to its endpoints by index, not by reading every endpoint', async () => {
    await withFreshStore(async (store, client) => {
      const admin = await store.users.insert(user('admin'));
      const customers = [await store.users.insert(user()), await store.users.insert(user())];
      // 5,000 endpoints of the two customers, listening to another event; 10 of the first listen to this one.
      await client.query(
        `INSERT INTO webhooks (user_id, url, secret, events, active, created_at, updated_at)
         SELECT CASE WHEN i % 2 = 0 THEN $1::bigint ELSE $2::bigint END, 'https://hooks.example.com/x', 's',
                CASE WHEN i % 500 = 0 THEN 'site.created' ELSE 'backup.completed' END, true, $3, $3
         FROM generate_series(1, 5000) AS i`,
        [customers[0].id, customers[1].id, now()],
      );
      const adminHook = await store.webhooks.insert({ ...webhook(admin.id), events: 'site.created' });
      await client.query('ANALYZE');
      const queued = await store.outbox.publish({ ...event(), owner_id: customers[0].id }, { body: '{}', next_attempt_at: 1, created_at: now() });
      expect(queued).toHaveLength(11);
      expect(queued.map((q) => q.endpoint_id)).toContain(adminHook.id);
      // The publish statement as the store runs it, planned with these values.
      const values = [[randomUUID()], ['site.created'], [customers[0].id], ['{}'], [now()], ['{}'], [1], [now()]];
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${PUBLISH_SQL}`, values);
      const scans: string[] = [];
      const walk = (node: Record<string, unknown>) => {
        if (node['Node Type'] === 'Seq Scan') scans.push(String(node['Relation Name']));
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      walk(rows[0]['QUERY PLAN'][0].Plan);
      expect(scans).not.toContain('webhooks');
      expect(scans).not.toContain('webhook_events');
    });
  });

  it('keeps the pages of a drained outbox when it is vacuumed (no exclusive lock taken to give them back)', async () => {
    // A database of its own: rows of other tests at the table's end would keep its pages anyway.
    await withFreshStore(async (store, client) => {
      const owner = await store.users.insert(user());
      const hook = await store.webhooks.insert(webhook(owner.id));
      const batch = Array.from({ length: 500 }, (_, i) => delivery(hook.id, Date.now() - 60_000 + i));
      await store.outbox.enqueue(event(), batch);
      const claimed = await store.outbox.claim({ owner: 'v', now: Date.now(), leaseMs: 60_000, limit: 500, perEndpoint: 500, ids: batch.map((d) => d.id) });
      await store.outbox.record('v', claimed.map((d) => ({ id: d.id, state: 'succeeded' as const, attempts: 1, next_attempt_at: 0 })), []);
      const size = async () => Number((await client.query<{ n: string }>("SELECT pg_relation_size('deliveries') AS n")).rows[0].n);
      const bytes = await size();
      expect(bytes).toBeGreaterThan(0);
      expect((await client.query<{ n: number }>('SELECT count(*)::int AS n FROM deliveries')).rows[0].n).toBe(0);
      await client.query('VACUUM deliveries');
      expect(await size()).toBe(bytes);
    });
  });

  it('vacuums the outbox and the log itself once a few thousand of their rows turned over', async () => {
    const owner = await a.users.insert(user());
    const hook = await a.webhooks.insert(webhook(owner.id));
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const vacuums = async () => {
      const { rows } = await client.query<{ relname: string; vacuum_count: string }>(
        "SELECT relname, vacuum_count FROM pg_stat_user_tables WHERE relname IN ('deliveries', 'delivery_log') ORDER BY relname",
      );
      return rows.map((r) => Number(r.vacuum_count));
    };
    const before = await vacuums();
    const vacuumed = async () => {
      const after = await vacuums();
      return after[0] > before[0] && after[1] > before[1];
    };
    // Deliveries claimed and settled, and their attempts logged, as a dispatcher does: 1,000
    // queue rows turned over per batch. A vacuum that found autovacuum on a table skipped it, so
    // the turnover goes on (a few times at most) until both tables were vacuumed by the store.
    const t0 = Date.now() - 60_000;
    let done = false;
    for (let round = 0; round < 5 && !done; round++) {
      for (let turned = 0; turned < QUEUE_VACUUM_ROWS; turned += 1_000) {
        const batch = Array.from({ length: 500 }, (_, i) => delivery(hook.id, t0 + i));
        await a.outbox.enqueue(event(), batch);
        const claimed = await a.outbox.claim({ owner: 'v', now: Date.now(), leaseMs: 60_000, limit: 500, perEndpoint: 500, ids: batch.map((d) => d.id) });
        expect(claimed).toHaveLength(500);
        const outcomes = claimed.map((d) => ({ id: d.id, state: 'succeeded' as const, attempts: 1, next_attempt_at: 0 }));
        await a.outbox.record('v', outcomes, claimed.map((d) => logEntry(hook.id, { delivery_id: d.id })));
      }
      done = await vi
        .waitFor(
          async () => {
            if (!(await vacuumed())) throw new Error('not vacuumed yet');
            return true;
          },
          { timeout: 5_000, interval: 50 },
        )
        .catch(() => false);
    }
    // vacuum_count counts manual vacuums (autovacuum has its own count): these are the store's.
    expect(done).toBe(true);
    await client.end();
  });
});

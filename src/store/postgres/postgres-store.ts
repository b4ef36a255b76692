// The PostgreSQL store: the Store contract on a database several daemons share. Constraints are
// unique indexes and foreign keys (plus the cross-table domain rule under an advisory lock),
// outbox work is claimed with FOR UPDATE SKIP LOCKED under leases, and changes reach every
// daemon through LISTEN/NOTIFY.
import pg from 'pg';
import type { Settings } from '../../shared/settings.js';
import { describeDatabaseUrl } from '../factory.js';
import type { Repositories, Store, StoreInfo } from '../store.js';
import { createPool, Notifier, PoolDb, withTransaction } from './db.js';
import { mapError } from './errors.js';
import { PgChangeFeed, READ_CHANGES_KEPT_MS } from './feed.js';
import { resolvePgLimits, type PgLimits } from './limits.js';
import { applyMigrations } from './migrations.js';
import { QueueVacuum } from './queue-vacuum.js';
import { CHANNEL, createRepositories, timedCommit, type StoreContext } from './repositories.js';

export interface PostgresStoreOptions {
  /** Accepted for the factory's sake: opening migrates an empty database either way. */
  create?: boolean;
  /** Connections in the request pool (default: the limits'). */
  poolSize?: number;
  /** Bounds of every wait (default: from the environment and the URL, see limits.ts). */
  limits?: PgLimits;
  /** How often held API key uses are written (default 1000 ms). */
  touchFlushMs?: number;
}

/** Events no delivery refers to any more are kept this long. */
const EVENT_RETENTION_MS = 7 * 24 * 3600_000;
const HOUSEKEEPING_EVERY_MS = 10 * 60_000;
/** Lease rows of fence members are dropped this long after the lease ended (see PgChangeFeed). */
const MEMBER_ROWS_KEPT_MS = 60_000;
/** A dispatcher has a claim, a batch of outcomes and a read of endpoints in flight at most. */
const WORK_POOL_SIZE = 3;

// The repositories are the store's own fields (Store extends Repositories), assigned from
// createRepositories: the list of them is written once, there.
export interface PostgresStore extends Repositories {}

export class PostgresStore implements Store {
  readonly info: StoreInfo;
  readonly changes: PgChangeFeed;

  readonly #pool: pg.Pool;
  readonly #db: PoolDb;
  /** The dispatcher's connections: its claims do not wait behind API requests for the main pool. */
  readonly #workPool: pg.Pool;
  readonly #notifier: Notifier;
  readonly #ctx: StoreContext;
  readonly #vacuum: QueueVacuum;
  #settings: Settings | null = null;
  #touchTimer: NodeJS.Timeout;
  #housekeepingTimer: NodeJS.Timeout;
  #flushing: Promise<void> | null = null;
  #closed = false;

  private constructor(url: string, pool: pg.Pool, limits: PgLimits, touchFlushMs: number) {
    this.info = { kind: 'postgres', location: describeDatabaseUrl(url) };
    this.#pool = pool;
    this.#notifier = new Notifier(pool, CHANNEL, PgChangeFeed.fenceNotice);
    this.#db = new PoolDb(pool, this.#notifier);
    // The dispatcher's statements each have one right plan, by index or row address, however
    // large the outbox. The server plans by the statistics of the queue tables, which lag their
    // churn, and keeps a prepared statement's plan: one planned while the outbox held a handful
    // of rows walked the whole table (dead rows included) for every outcome of a batch once it
    // held thousands (see docs/decisions/postgres.md, "Plans that do not follow the outbox").
    // Statements with no index to use still scan the table. Bitmap scans are off for the same
    // reason: a claim's walk of an endpoint's first due deliveries was planned, while the
    // statistics counted a backlog, as a bitmap scan of all of them and a sort. With those two
    // off, each statement's generic plan is its right plan, so the prepared plan is always used
    // (plan_cache_mode): the server otherwise re-planned the claim on every call whenever its
    // estimate of the generic plan (which cannot know the limits) exceeded a custom one's, and
    // planning the claim costs the server about what running it does. JIT compilation is off:
    // a generic plan's cost estimate, made without the limits, can pass the server's JIT
    // thresholds, and the claim was then compiled anew on every call (over a second with a
    // backlog of 100,000) to run for a millisecond. Set before the connection's first use, in
    // one text: a statement sent beside another on one connection is deprecated in the driver.
    this.#workPool = createPool(url, {
      max: WORK_POOL_SIZE,
      limits,
      onConnect: (client) => client.query('SET enable_seqscan = off; SET enable_bitmapscan = off; SET plan_cache_mode = force_generic_plan; SET jit = off'),
    });
    this.changes = new PgChangeFeed(url, () => {
      this.#settings = null;
    });
    this.#notifier.fencer = () => this.changes.beginFence();
    // First subscriber: the cache is dropped before anyone else hears of a settings change.
    this.changes.subscribe((change) => {
      if (change.kind === 'record' && change.collection === 'settings') this.#settings = null;
    });
    const store = this;
    // SKIP_LOCKED: while another daemon (or autovacuum) vacuums a table, this one leaves it.
    this.#vacuum = new QueueVacuum(() => pool.query('VACUUM (SKIP_LOCKED) deliveries, delivery_log'));
    this.#ctx = {
      heldTouches: new Map(),
      heldHits: new Set(),
      unpruned: new Map(),
      pruned: new Map(),
      commitObserver: null,
      vacuum: this.#vacuum,
      cachedSettings: () => (store.changes.connected ? store.#settings : null),
      cacheSettings: (settings) => {
        store.#settings = store.changes.connected ? settings : null;
      },
    };
    const repos: Repositories = createRepositories(this.#db, this.#ctx, new PoolDb(this.#workPool, this.#notifier));
    Object.assign(this, repos);
    this.#touchTimer = setInterval(() => void this.#flushTouches().catch(() => undefined), touchFlushMs);
    this.#touchTimer.unref();
    this.#housekeepingTimer = setInterval(() => void this.#housekeeping().catch(() => undefined), HOUSEKEEPING_EVERY_MS);
    this.#housekeepingTimer.unref();
  }

  /**
   * Connects, brings the schema up to date (once, however many daemons start together) and
   * starts listening for changes.
   * @example
   * const store = await PostgresStore.open('postgres://panel@db.internal/panelctl');
   */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const limits = options.limits ?? resolvePgLimits(process.env, url);
    const pool = createPool(url, { max: options.poolSize ?? limits.poolSize, limits });
    let store: PostgresStore | undefined;
    try {
      const client = await pool.connect();
      try {
        await applyMigrations(client);
      } finally {
        client.release();
      }
      store = new PostgresStore(url, pool, limits, options.touchFlushMs ?? 1000);
      await store.changes.start();
      return store;
    } catch (error) {
      if (store) await store.close().catch(() => undefined);
      else await pool.end().catch(() => undefined);
      throw mapError(error);
    }
  }

  /** Whether the database holds an initialised panel: the schema exists with at least one user. */
  static async initialised(url: string): Promise<boolean> {
    const client = new pg.Client({ connectionString: url, application_name: 'panelctl' });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ users: string | null }>("SELECT to_regclass('users')::text AS users");
      if (!rows[0]?.users) return false;
      const found = await client.query('SELECT 1 FROM users LIMIT 1');
      return (found.rowCount ?? 0) > 0;
    } catch (error) {
      throw mapError(error);
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T> {
    const done = withTransaction(this.#pool, this.#notifier, (db) => fn(createRepositories(db, this.#ctx)));
    return this.#ctx.commitObserver ? timedCommit(this.#ctx, done) : done;
  }

  observeCommits(observer: ((seconds: number) => void) | null): void {
    this.#ctx.commitObserver = observer;
  }

  async sharedSecret(name: string, make: () => string): Promise<string> {
    // Every daemon races to insert its candidate; all of them read back the one that won.
    await this.#db.query('INSERT INTO shared_secrets (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, make()]);
    const { rows } = await this.#db.query<{ value: string }>('SELECT value FROM shared_secrets WHERE name = $1', [name]);
    return rows[0].value;
  }

  async ready(): Promise<string | null> {
    try {
      await this.#db.query('SELECT 1 FROM users LIMIT 1');
      return null;
    } catch (error) {
      return `the database does not answer (${(error as Error).message})`;
    }
  }

  async flush(): Promise<void> {
    await this.#flushTouches();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#touchTimer);
    clearInterval(this.#housekeepingTimer);
    try {
      await this.#vacuum.stop();
      await this.#flushTouches();
      await Promise.all([...this.#ctx.heldHits].map((hits) => hits.flush()));
      await this.#notifier.flush();
    } finally {
      await this.changes.close();
      await Promise.all([this.#pool.end().catch(() => undefined), this.#workPool.end().catch(() => undefined)]);
    }
  }

  /** Writes the held API key uses in one statement; uses recorded meanwhile wait for the next. */
  #flushTouches(): Promise<void> {
    if (this.#flushing) return this.#flushing.then(() => this.#flushTouches());
    const held = this.#ctx.heldTouches;
    if (held.size === 0) return Promise.resolve();
    const batch = [...held.entries()];
    this.#flushing = this.#db
      .query(
        `UPDATE api_keys k SET last_used_at = t.at
         FROM unnest($1::bigint[], $2::text[]) AS t (id, at)
         WHERE k.id = t.id AND (k.last_used_at IS NULL OR k.last_used_at < t.at)`,
        [batch.map(([id]) => id), batch.map(([, at]) => at)],
      )
      .then(() => {
        // Forget what was written unless a later use came in meanwhile.
        for (const [id, at] of batch) if (held.get(id) === at) held.delete(id);
      })
      .finally(() => {
        this.#flushing = null;
      });
    return this.#flushing;
  }

  /**
   * Drops events past their retention that no delivery refers to any more, and notes of changes
   * older than any snapshot a feed still asks about. (A final outcome deletes its delivery.)
   */
  async #housekeeping(): Promise<void> {
    const before = Date.now() - EVENT_RETENTION_MS;
    await this.#db.atomic(async (db) => {
      // Not a request: a large backlog of old events may take longer than a request's bound.
      await db.query('SET LOCAL statement_timeout = 0');
      await db.query(
        'DELETE FROM events e WHERE e."timestamp"::timestamptz < to_timestamp($1::double precision / 1000) AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id)',
        [before],
      );
      await db.query('DELETE FROM read_changes WHERE at < clock_timestamp() - make_interval(secs => $1::double precision / 1000)', [READ_CHANGES_KEPT_MS]);
      // Members gone without leaving (a crash): their leases ended long ago.
      await db.query('DELETE FROM feed_members WHERE lease_until < (extract(epoch from clock_timestamp()) * 1000)::bigint - $1', [MEMBER_ROWS_KEPT_MS]);
    });
    // Previous secrets of rotations whose overlap ended, also on endpoints that got no delivery since.
    await this.webhooks.forgetExpiredSecrets(new Date().toISOString());
  }
}

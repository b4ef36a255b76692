// Where a repository's SQL runs: the pool (each call its own transaction) or one client inside
// `store.transaction`. `atomic` groups several statements: a real transaction on the pool, a
// savepoint inside a transaction (so a conflict the caller catches does not poison the rest).
import { createHash } from 'node:crypto';
import pg from 'pg';
import { StoreUnavailableError } from '../store.js';
import { mapError } from './errors.js';
import type { PgLimits } from './limits.js';

export type Row = Record<string, unknown>;

export interface Db {
  readonly inTransaction: boolean;
  query<R extends Row = Row>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>>;
  atomic<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** Tells every daemon of a change (a change-feed notice) once it is committed. */
  announce(notice: string): void;
  /**
   * Tells every daemon that row `id` (null: any) of a cached collection changed, and resolves
   * once no daemon can serve a cache missing it (the write fence, see PgChangeFeed). Outside a
   * transaction call it after the change committed; inside one it is sent after the commit,
   * and the transaction resolves after the fence.
   */
  fence(collection: string, id: number | null): Promise<void>;
}

/** Starts a write's fence (PgChangeFeed.beginFence): the token for its notice, and the wait. */
export type FenceStarter = () => { token: string; wait: { sent(): void; abandon(): void; done: Promise<void> } };

/** A fence notice that cannot be sent is tried again this long at most; the write then answers 503. */
const FENCE_SEND_MOST_MS = 3_000;

/**
 * Sends change notices on their own, after the writes that made them committed, several in one
 * statement. A NOTIFY inside a writing transaction takes a lock that serialises the commits of
 * every notifying transaction on the server through their WAL flush: with it, 16 clients
 * inserting rows on this machine made 1,860 to 2,320 commits a second, against 5,100 to 6,250
 * without. A notice lost to a crash in between is made up by the dispatchers' safety poll (the
 * outbox) and by reconnecting streams (log entries); settings changes still notify in their own
 * transaction, as a daemon's cached settings depend on it.
 */
export class Notifier {
  #pending = new Set<string>();
  #sending: Promise<void> | null = null;
  /** The cached-collection changes to send in the next fence notice, and the writes waiting on it. */
  #fenced: { changes: Map<string, [string, number | null]>; done: Promise<void>; resolve: () => void; reject: (error: Error) => void } | null = null;
  /** Set by the store once its change feed exists; without one a fence resolves once sent. */
  fencer: FenceStarter | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly channel: string,
    /** Makes the notice of a fence from its token and changes (see PgChangeFeed.fenceNotice). */
    private readonly fenceNotice: (token: string, changes: Array<[string, number | null]>) => string = (t, c) =>
      JSON.stringify({ kind: 'fence', t, c }),
  ) {}

  send(notice: string): void {
    this.#pending.add(notice);
    this.#sending ??= this.#drain();
  }

  /**
   * Sends a change of a cached collection (after the write committed) in the next fence notice,
   * one for all the writes of a turn; resolves when that notice's fence does.
   */
  fence(collection: string, id: number | null): Promise<void> {
    if (!this.#fenced) {
      let resolve!: () => void;
      let reject!: (error: Error) => void;
      const done = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.#fenced = { changes: new Map(), done, resolve, reject };
    }
    this.#fenced.changes.set(`${collection}:${id}`, [collection, id]);
    this.#sending ??= this.#drain();
    return this.#fenced.done;
  }

  /** Resolves once everything sent so far has gone out (or failed). */
  async flush(): Promise<void> {
    while (this.#sending) await this.#sending;
  }

  /** Sends `notices`; the error when it failed, else null. */
  #notify(notices: string[]): Promise<unknown> {
    return this.pool.query('SELECT pg_notify($1, n) FROM unnest($2::text[]) AS n', [this.channel, notices]).then(
      () => null,
      (error: unknown) => error ?? new Error('notify failed'),
    );
  }

  async #drain(): Promise<void> {
    // Notices that come while one statement is out go together in the next.
    await Promise.resolve();
    while (this.#pending.size > 0 || this.#fenced) {
      const batch = [...this.#pending];
      this.#pending.clear();
      const fenced = this.#fenced;
      this.#fenced = null;
      const started = Date.now();
      // Begun here, after every write of the batch committed (see FenceWait).
      const fence = fenced ? (this.fencer?.() ?? null) : null;
      const notice = fenced ? this.fenceNotice(fence?.token ?? 'none', [...fenced.changes.values()]) : null;
      if (notice) batch.push(notice);
      let failure = await this.#notify(batch);
      if (!fenced) continue;
      // The writes committed: until their notice is out no daemon hears of them, so it is sent
      // again (alone) for a while; past that the writes answer 503, their outcome unknown to the
      // client as when a commit's answer is lost.
      for (let delay = 50; failure && Date.now() - started < FENCE_SEND_MOST_MS; delay *= 2) {
        await new Promise((resolve) => setTimeout(resolve, delay));
        failure = await this.#notify([notice!]);
      }
      if (failure) {
        fence?.wait.abandon();
        fenced.reject(new StoreUnavailableError('the change was saved but could not be announced to the other daemons', { cause: failure }));
      } else if (!fence) fenced.resolve();
      else {
        fence.wait.sent();
        void fence.wait.done.then(fenced.resolve);
      }
    }
    this.#sending = null;
  }
}

/** bigint (int8) columns as numbers: every id and epoch-ms time the store keeps is below 2^53. */
export const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) =>
    oid === pg.types.builtins.INT8 ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format as 'text')) as pg.CustomTypesConfig['getTypeParser'],
};

/** Statement names by text (a few dozen texts: the repositories' SQL is fixed, up to the columns of a patch). */
const names = new Map<string, string>();

/**
 * A statement with parameters goes as a named prepared statement: each connection parses and
 * plans it once, not on every call (re-planning the outbox's CTE statements was much of the
 * server's time when dispatching). The name is a digest of the text, so equal texts share it.
 * A statement without parameters goes as a prepared one only when its caller passes an empty
 * list of values (a fixed text called often, such as the dispatcher's next-due query); without
 * values it is sent as text, parsed and planned each time, as transaction control, savepoints
 * with their numbered names and one-off statements must be.
 */
function prepared(text: string, values: unknown[] | undefined): pg.QueryConfig | string {
  if (!values) return text;
  let name = names.get(text);
  if (!name) {
    name = `panelctl_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    if (names.size < 1_000) names.set(text, name);
  }
  return { name, text, values };
}

export class PoolDb implements Db {
  readonly inTransaction = false;

  constructor(
    private readonly pool: pg.Pool,
    private readonly notifier: Notifier,
  ) {}

  announce(notice: string): void {
    this.notifier.send(notice);
  }

  fence(collection: string, id: number | null): Promise<void> {
    return this.notifier.fence(collection, id);
  }

  async query<R extends Row = Row>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    // Idle connections the server ended (a restart, pg_terminate_backend) answer their next
    // query with the FATAL they were sent while idle: that query never ran, so it is sent again
    // on another connection (the pool drops the dead one). At most once per pooled connection.
    for (let attempt = 0; ; attempt++) {
      try {
        const statement = prepared(text, values);
        return await (typeof statement === 'string' ? this.pool.query<R>(statement) : this.pool.query<R>(statement));
      } catch (error) {
        if (!endedWhileIdle(error) || attempt >= this.pool.options.max) throw mapError(error);
      }
    }
  }

  atomic<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    return withTransaction(this.pool, this.notifier, fn);
  }
}

export class ClientDb implements Db {
  readonly inTransaction = true;
  #savepoints = 0;
  /** The statement last sent: the next one waits for it (see query). */
  #previous: Promise<unknown> = Promise.resolve();
  /** Sent once the transaction commits. */
  readonly notices: string[] = [];
  /** Cached-collection changes fenced once the transaction commits. */
  readonly fenced: Array<[string, number | null]> = [];

  constructor(private readonly client: pg.PoolClient) {}

  announce(notice: string): void {
    this.notices.push(notice);
  }

  fence(collection: string, id: number | null): Promise<void> {
    this.fenced.push([collection, id]);
    return Promise.resolve();
  }

  /**
   * Statements of one transaction go one at a time, whatever the caller awaits together: the
   * driver's queue of statements per client is deprecated (and gone in its next major).
   */
  query<R extends Row = Row>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    const run = this.#previous.then(async () => {
      try {
        const statement = prepared(text, values);
        return await (typeof statement === 'string' ? this.client.query<R>(statement) : this.client.query<R>(statement));
      } catch (error) {
        throw mapError(error);
      }
    });
    this.#previous = run.catch(() => undefined);
    return run;
  }

  /** Resolves once no statement of this transaction is in flight. */
  async idle(): Promise<void> {
    await this.#previous;
  }

  async atomic<T>(fn: (db: Db) => Promise<T>): Promise<T> {
    const name = `sp_${++this.#savepoints}`;
    const announced = this.notices.length;
    const fenced = this.fenced.length;
    await this.query(`SAVEPOINT ${name}`);
    try {
      const result = await fn(this);
      await this.query(`RELEASE SAVEPOINT ${name}`);
      return result;
    } catch (error) {
      await this.query(`ROLLBACK TO SAVEPOINT ${name}`).catch(() => undefined);
      this.notices.length = announced;
      this.fenced.length = fenced;
      throw error;
    }
  }
}

/**
 * BEGIN on a pooled client, `fn`, COMMIT; ROLLBACK and rethrow (unchanged: it may be the
 * caller's own error) when `fn` throws. Driver errors reach here already mapped by `query`.
 */
/**
 * Runs `fn` in a transaction; one the server chose as a deadlock victim (40P01) or refused for a
 * serialization failure (40001) is run again, a few times: it changed nothing.
 */
export async function withTransaction<T>(pool: pg.Pool, notifier: Notifier, fn: (db: ClientDb) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await transactionOnce(pool, notifier, fn);
    } catch (error) {
      const code = ((error as { cause?: { code?: unknown } }).cause ?? (error as { code?: unknown }))?.code;
      if ((code !== '40P01' && code !== '40001') || attempt >= 4) throw error;
    }
  }
}

async function transactionOnce<T>(pool: pg.Pool, notifier: Notifier, fn: (db: ClientDb) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw mapError(error);
  }
  // A client whose rollback failed (its connection is gone) is destroyed, not put back.
  let broken: Error | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      await client.query('BEGIN');
      break;
    } catch (error) {
      client.release(error as Error);
      if (!endedWhileIdle(error) || attempt >= pool.options.max) throw mapError(error);
      try {
        client = await pool.connect();
      } catch (connectError) {
        throw mapError(connectError);
      }
    }
  }
  const db = new ClientDb(client);
  let result: T;
  try {
    result = await fn(db);
    await db.query('COMMIT');
    for (const notice of db.notices) notifier.send(notice);
  } catch (error) {
    try {
      await db.idle();
      await client.query('ROLLBACK');
    } catch (rollbackError) {
      broken = rollbackError as Error;
    }
    throw error;
  } finally {
    client.release(broken);
  }
  // The connection is back in the pool while the fence waits for the other daemons.
  if (db.fenced.length > 0) await Promise.all(db.fenced.map(([collection, id]) => notifier.fence(collection, id)));
  return result;
}

export interface PoolOptions {
  /** Connections at most. */
  max: number;
  limits: PgLimits;
  /** Run on each new connection before its first use. */
  onConnect?: (client: pg.ClientBase) => Promise<unknown>;
}

/**
 * A pool whose connections each have an error listener for their whole life. The pool listens
 * only while a connection is idle: one that dies while checked out (between two statements of a
 * transaction) would otherwise throw its error out of the process. Such a connection fails the
 * statements on it and is destroyed when released (the pool does not reuse an unqueryable one).
 */
export function createPool(url: string, options: PoolOptions): pg.Pool {
  const { limits } = options;
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    types: pgTypes,
    application_name: 'panelctl',
    connectionTimeoutMillis: limits.acquireTimeoutMs,
    statement_timeout: limits.statementTimeoutMs,
    lock_timeout: limits.lockTimeoutMs,
    // Connections outlive a pause of a minute: a new one costs the server a process and each
    // prepared statement its parse and plan again, which a burst after a lull would pay at once.
    idleTimeoutMillis: 60_000,
    // A server gone without a word (a host lost) is noticed by the socket, not only by a statement.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(options.onConnect ? { onConnect: options.onConnect } : {}),
  } as pg.PoolConfig);
  pool.on('connect', (client) => client.on('error', () => undefined));
  // An idle connection that dies is dropped by the pool; the next statement opens another.
  pool.on('error', () => undefined);
  return pool;
}

/** The server ended this connection before the statement was sent (admin or crash shutdown). */
function endedWhileIdle(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return code === '57P01' || code === '57P02';
}

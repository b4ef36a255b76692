// What every repository of one store shares: the channel of change notices, the state kept per
// process (held key uses, cached settings, where log prunes ended) and the helpers that announce
// a write's changes and time its commit.
import { performance } from 'node:perf_hooks';
import type pg from 'pg';
import type { Settings } from '../../../shared/settings.js';
import type { Db, Row } from '../db.js';
import type { QueueVacuum } from '../queue-vacuum.js';

export const CHANNEL = 'panelctl_changes';
/** The notice that wakes dispatchers: the outbox has new or returned work. */
export const OUTBOX_NOTICE = '{"kind":"outbox"}';

/**
 * Where a prune of an endpoint's log ended: every entry below `below` was deleted (up to
 * PRUNE_MOST). The next prune starts there, so it reads only the entries since: one that read
 * the whole log went through every entry deleted since the last vacuum, thousands per endpoint
 * under load. What it misses (an entry below `below` that another daemon committed after this
 * prune, a rest over PRUNE_MOST) goes with the next full prune.
 */
export interface PrunedLog {
  below: number;
  count: number;
}

/** State shared by every set of repositories of one store (one process). */
export interface StoreContext {
  /** API key uses not yet written: id → last_used_at (ISO, to the second). */
  readonly heldTouches: Map<number, string>;
  /** Request-window hits held back (see HitBatcher's spacing): sent by the store's close. */
  readonly heldHits: Set<{ flush(): Promise<void> }>;
  /** Settings as last read or written, valid while the change feed is connected. */
  cachedSettings(): Settings | null;
  cacheSettings(settings: Settings | null): void;
  /** Entries recorded per endpoint since its log was last pruned (by this process). */
  readonly unpruned: Map<number, number>;
  /** Per endpoint, where this process's last prune of its log ended, and how many it made. */
  readonly pruned: Map<number, PrunedLog>;
  /** Told how long each timed write took to commit (see Store.observeCommits); null: none is timed. */
  commitObserver: ((seconds: number) => void) | null;
  /** Told how many queue rows each batch of outcomes turned over (see QueueVacuum). */
  readonly vacuum: QueueVacuum;
}


/** Resolves as `write` does, telling the commit observer how long it took (when it succeeded). */
export async function timedCommit<T>(ctx: StoreContext, write: Promise<T>): Promise<T> {
  const observer = ctx.commitObserver;
  const started = performance.now();
  const result = await write;
  observer?.((performance.now() - started) / 1000);
  return result;
}

/**
 * The collections daemons cache (callers, listings): a write of theirs waits for the fence
 * (Db.fence), so every daemon serving caches has dropped what it changed before the write
 * resolves. The database also notes their writing transactions in `read_changes`.
 */
const FENCED = new Set(['users', 'api_keys', 'subscriptions', 'sites', 'revoked_tokens']);

/**
 * Tells every daemon, once committed, that the row `id` of `collection` changed; for a cached
 * collection, resolves once no daemon can still serve it unchanged (call it after the commit,
 * or inside a transaction). A user deleted takes its subscriptions and sites with it.
 */
export function announceRecord(d: Db, collection: string, id: unknown): Promise<void> {
  if (FENCED.has(collection)) {
    const fence = d.fence(collection, id === null ? null : Number(id));
    return collection === 'users' ? Promise.all([fence, d.fence('subscriptions', null)]).then(() => undefined) : fence;
  }
  d.announce(JSON.stringify({ kind: 'record', collection, id: Number(id) }));
  return Promise.resolve();
}

/** Runs a statement that changes `collection`; each row it returns is announced once committed. */
export async function changing(d: Db, collection: string, text: string, values: unknown[]): Promise<pg.QueryResult<Row>> {
  const result = await d.query(text, values);
  await Promise.all(result.rows.map((row) => announceRecord(d, collection, row.id)));
  return result;
}

/**
 * Makes one repository bound to `db` (the pool, or the client of a `store.transaction`); `work`
 * is where the dispatcher's outbox statements run (claims, outcomes, the endpoints of a claimed
 * batch), so a burst of API requests does not queue them behind its own. Inside a transaction,
 * the transaction's client.
 */
export type RepositoryFactory<R> = (db: Db, ctx: StoreContext, work: Db) => R;

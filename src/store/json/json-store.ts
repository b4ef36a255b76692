// The embedded JSON store. State lives in memory; every committed transaction is one line of a
// write-ahead journal (journal.ts: generations, replay, compaction into the snapshot of
// snapshot.ts), appended and fsynced with group commit: the transactions that commit while one
// batch is on its way to disk share the next fsync, so the cost of a write does not grow with
// the size of the store.
//
// Transactions run one at a time (their bodies only touch memory, so they are short) and
// commit without waiting for each other's fsync. A failed journal write fails that transaction
// and every one committed after it, and rolls them back in reverse order: nothing is answered
// as done that is not on disk, and nothing stays in memory that is not.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir, readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import type { DataLayout } from '../../shared/paths.js';
import { SCHEMA_VERSION } from '../migrations.js';
import {
  StoreUnavailableError,
  repositoriesOf,
  type Change,
  type ChangeFeed,
  type Repositories,
  type Store,
  type StoreInfo,
} from '../store.js';
import type { LimiterRecord } from '../types.js';
import { JsonDeliveryLog } from './delivery-log.js';
import { realFileOps, type FileOps } from './file-ops.js';
import { Journal, replayJournals, type JournalHost } from './journal.js';
import { JsonRepositories, type RunOptions } from './repositories.js';
import { loadSnapshot } from './snapshot.js';
import { Writer, type Op, type State } from './state.js';

export interface JsonStoreOptions {
  /** Create an empty store when the file does not exist (init); otherwise that is an error. */
  create?: boolean;
  /** Replaces the disk operations, for fault-injection tests. */
  fileOps?: Partial<FileOps>;
  /** Told of what the store repaired at open (a torn journal tail), for the daemon's log. */
  warn?: (message: string) => void;
  /**
   * How long recorded API key uses (`last_used_at`) may wait for a write of their own; any
   * earlier write takes them along.
   */
  usageFlushMs?: number;
  /** The journal is folded into a new snapshot once it exceeds this size and the snapshot's. */
  compactAfterBytes?: number;
  /**
   * Read what is on disk without writing anything (not even cutting a torn journal tail): for
   * a look at a store a running daemon owns. Every change is refused.
   */
  readOnly?: boolean;
}

/** How long soft changes (request windows, key uses) may wait for their journal line. */
const SOFT_FLUSH_MS = 1_000;
/**
 * A write through the store's own methods inside a transaction would wait for the transaction
 * it is part of (a deadlock); with this set, it fails at once instead. Off by default: an
 * AsyncLocalStorage turns on Node's promise hooks for the whole process, which cost every
 * request (figures: docs/PERFORMANCE.md, "The JSON store's figures behind its design"). The
 * test suite sets it.
 */
const NESTING_CHECKS = process.env.PANELCTL_STORE_CHECKS === '1';

/** One transaction at a time; `lock` resolves when it is the caller's turn. */
class Mutex {
  #tail: Promise<void> = Promise.resolve();

  lock(): Promise<() => void> {
    let unlock!: () => void;
    const turn = new Promise<void>((resolve) => (unlock = resolve));
    const ready = this.#tail.then(() => unlock);
    this.#tail = this.#tail.then(() => turn);
    return ready;
  }
}

class LocalFeed implements ChangeFeed {
  readonly #listeners = new Set<(change: Change) => void>();

  subscribe(listener: (change: Change) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  caughtUp(): true {
    return true;
  }

  publish(changes: Change[]): void {
    for (const change of changes) {
      for (const listener of this.#listeners) {
        try {
          listener(change);
        } catch {
          // A listener's failure is its own; the write stands.
        }
      }
    }
  }
}

// The repositories are declared by the contract and assigned by name (repositoriesOf).
export interface JsonStore extends Omit<Repositories, 'deliveryLog'> {}

export class JsonStore implements Store {
  readonly info: StoreInfo;
  readonly changes = new LocalFeed();
  readonly deliveryLog: JsonDeliveryLog;

  readonly #state: State;
  readonly #mutex = new Mutex();
  /** Set only under PANELCTL_STORE_CHECKS=1 (tests): see NESTING_CHECKS. */
  readonly #context = NESTING_CHECKS ? new AsyncLocalStorage<Writer>() : null;
  readonly #usageFlushMs: number;
  readonly #readOnly: boolean;
  #commitObserver: ((seconds: number) => void) | null = null;
  /** Why the last journal write failed, until one succeeds again (see ready). */
  #writeFailure: string | null = null;
  readonly #journal: Journal;
  /** Committed to memory and handed to the journal, not yet on disk: in commit order. */
  #unsettled: Writer[] = [];
  /** Set from a failed journal write until the writes after it are rolled back. */
  #recovering: Promise<void> | null = null;
  /** True from the moment a journal write fails until the rollback is done: nothing more is appended. */
  #failing = false;
  readonly #touched = new Set<number>();
  /** Soft changes waiting for their journal line (see #applyNow), by record. */
  readonly #soft = new Map<string, Op>();
  /**
   * Soft changes of request windows (limiter records), by the window's key: apart from #soft so
   * that a hit, which every API request makes, is held under the limiter's own key string (whose
   * hash is kept with it) instead of a key string made for each hit.
   */
  readonly #softWindows = new Map<string, Op>();
  #softTimer: NodeJS.Timeout | null = null;
  /** A soft line was written without fsync since the last flush. */
  #softUnsynced = false;
  #usageTimer: NodeJS.Timeout | null = null;
  #closed = false;

  private constructor(state: State, journal: (host: JournalHost) => Journal, paths: DataLayout, ops: FileOps, options: JsonStoreOptions) {
    this.#state = state;
    this.#usageFlushMs = options.usageFlushMs ?? 30_000;
    this.#readOnly = options.readOnly ?? false;
    this.#journal = journal({
      exclusive: (fn) => this.#exclusive(fn),
      snapshot: (gen) => state.snapshot(SCHEMA_VERSION, gen),
      onError: (error) => this.#onJournalError(error),
    });
    this.info = { kind: 'json', location: paths.store };
    this.deliveryLog = new JsonDeliveryLog(
      paths.deliveriesDir,
      {
        reserveIds: (count) => this.#journal.reserveLogIds(state.counters, count),
        appended: (entries) => this.changes.publish([{ kind: 'logged', ids: entries.map((entry) => entry.id) }]),
      },
      ops,
    );
    const repositories = new JsonRepositories(state, (change, runOptions) => this.#run(change, runOptions), this.deliveryLog, {
      removeLogs: (ids) => this.#removeLogs(ids),
      touched: (id) => this.#touch(id),
      putWindow: (record) => this.#putWindow(record),
    });
    Object.assign(this, repositoriesOf(repositories));
  }

  /** Whether the data directory holds a store (an initialised panel). */
  static async exists(paths: DataLayout): Promise<boolean> {
    try {
      await readFile(paths.store);
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Opens (or with `create`, creates) the store in a data directory.
   * @example
   * const store = await JsonStore.open(layout('/var/lib/panelctl'));
   */
  static async open(paths: DataLayout, options: JsonStoreOptions = {}): Promise<JsonStore> {
    const ops = { ...realFileOps, ...options.fileOps };
    const snapshot = await loadSnapshot(paths, ops, options);
    if (!options.readOnly) {
      await mkdir(paths.root, { recursive: true, mode: 0o700 });
      await mkdir(paths.deliveriesDir, { recursive: true, mode: 0o700 });
    }
    const warn = options.warn ?? (() => undefined);
    const { gen, seq } = await replayJournals(paths.root, snapshot.gen, snapshot.state, warn, !options.readOnly);
    const journal = (host: JournalHost) =>
      new Journal(paths, snapshot.file, { gen, seq, snapshotBytes: snapshot.bytes }, host, { ops, compactAfterBytes: options.compactAfterBytes });
    const store = new JsonStore(snapshot.state, journal, paths, ops, options);
    if (snapshot.rewrite) await store.#journal.compact();
    return store;
  }

  transaction<T>(fn: (tx: Repositories) => Promise<T>): Promise<T> {
    if (this.#context?.getStore()) {
      return Promise.reject(new Error('store.transaction inside a transaction: use the tx repositories'));
    }
    return this.#inTransaction(async (writer) => {
      const tx = new JsonRepositories(this.#state, async (change) => change(writer), this.deliveryLog, {
        removeLogs: (ids) => this.#removeLogs(ids),
        touched: (id) => this.#touch(id),
      });
      return this.#context ? this.#context.run(writer, () => fn(tx)) : fn(tx);
    });
  }

  observeCommits(observer: ((seconds: number) => void) | null): void {
    this.#commitObserver = observer;
  }

  async ready(): Promise<string | null> {
    if (this.#closed) return 'the store is closed';
    if (this.#writeFailure === null) return null;
    // An empty journal line, fsynced: whether the disk takes writes again (replay skips it).
    await this.#journal.append([], true).then(
      () => (this.#writeFailure = null),
      () => undefined,
    );
    return this.#writeFailure;
  }

  async sharedSecret(): Promise<string | null> {
    return null;
  }

  /** Pending deliveries, for status lines. */
  get pendingDeliveries(): number {
    return this.#state.deliveries.size;
  }

  async flush(): Promise<void> {
    await this.#flushUses();
    const written = this.#flushSoft(true);
    await this.#journal.idle();
    await this.#recovering;
    await written;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#readOnly) {
      this.#closed = true;
      return;
    }
    await this.flush().catch(() => undefined);
    await this.#journal.close();
    this.#closed = true;
    if (this.#usageTimer) clearTimeout(this.#usageTimer);
    await this.deliveryLog.close();
  }

  /** A change outside a transaction: its own commit (or, not durable, applied and written without waiting). */
  #run<T>(change: (writer: Writer) => T, options: RunOptions = {}): Promise<T> {
    const inside = this.#context?.getStore();
    if (inside) return Promise.reject(new Error('a store write inside a transaction must go through the tx repositories'));
    if (options.durable === false) return this.#applyNow(change);
    return this.#inTransaction(async (writer) => change(writer));
  }

  /**
   * Soft state (request windows, key uses): applied and published at once; written without
   * fsync, in one journal line a second at most (the latest value of each record), so a request
   * counted by the limiter costs no write of its own. A crash forgets at most that second.
   */
  async #applyNow<T>(change: (writer: Writer) => T): Promise<T> {
    this.#assertOpen();
    const writer = new Writer(this.#state);
    const result = change(writer);
    if (writer.enqueued.length) this.#state.lanes.admit(writer.enqueued);
    for (const op of writer.ops) {
      if (op.t === 'limiter') this.#softWindows.set(op.k as string, op);
      else this.#soft.set(op.t === 'settings' || op.t === 'enqueue' ? `${op.t}:${this.#soft.size}` : `${op.t}:${op.k}`, op);
    }
    this.#armSoftFlush();
    this.changes.publish(writer.changes);
    return result;
  }

  /**
   * A request window's hit (limiter.countRequest), the soft change every API request makes: what
   * #applyNow does for a writer holding this one put, without the writer (its undo list, operation
   * list and promise): a hit is never rolled back and publishes no change.
   */
  #putWindow(record: LimiterRecord): Promise<LimiterRecord> {
    try {
      if (this.#context?.getStore()) throw new Error('a store write inside a transaction must go through the tx repositories');
      this.#assertOpen();
    } catch (error) {
      return Promise.reject(error);
    }
    this.#state.limiter.put(record);
    this.#softWindows.set(record.key, { t: 'limiter', k: record.key, v: record });
    this.#armSoftFlush();
    return Promise.resolve(record);
  }

  /** Soft changes are held: their journal line is written within SOFT_FLUSH_MS. */
  #armSoftFlush(): void {
    if (this.#soft.size + this.#softWindows.size > 0 && !this.#softTimer && !this.#closed) {
      this.#softTimer = setTimeout(() => this.#flushSoft(), SOFT_FLUSH_MS);
      this.#softTimer.unref();
    }
  }

  /** Writes the soft changes held so far in one journal line; `durable` (flush): fsynced, and its failure answered. */
  #flushSoft(durable = false): Promise<void> {
    if (this.#softTimer) clearTimeout(this.#softTimer);
    this.#softTimer = null;
    // A durable flush also fsyncs the soft lines written before it (an empty line does).
    if ((this.#soft.size + this.#softWindows.size === 0 && !(durable && this.#softUnsynced)) || this.#failing) return Promise.resolve();
    const ops = [...this.#soft.values(), ...this.#softWindows.values()];
    this.#soft.clear();
    this.#softWindows.clear();
    this.#softUnsynced = !durable;
    const written = this.#journal.append(ops, durable);
    written.catch(() => undefined);
    return written;
  }

  async #inTransaction<T>(body: (writer: Writer) => Promise<T>): Promise<T> {
    this.#assertOpen();
    const unlock = await this.#mutex.lock();
    const writer = new Writer(this.#state);
    let result: T;
    try {
      result = await body(writer);
      if (this.#failing) throw new StoreUnavailableError('storage is unavailable: an earlier write failed');
    } catch (error) {
      writer.rollback();
      unlock();
      throw error;
    }
    if (writer.ops.length === 0) {
      unlock();
      this.changes.publish(writer.changes);
      return result;
    }
    // Soft changes made before this one go with it (any later write takes them along).
    this.#flushSoft();
    this.#unsettled.push(writer);
    const observer = this.#commitObserver;
    const started = observer ? performance.now() : 0;
    const written = this.#journal.append(writer.ops, writer.durable);
    unlock();
    try {
      await written;
      observer?.((performance.now() - started) / 1000);
      this.#writeFailure = null;
    } catch (error) {
      await this.#recovering;
      throw new StoreUnavailableError('the change could not be saved: storage is unavailable; nothing was changed', { cause: error });
    }
    // Batches complete in order: everything up to this one is on disk.
    const at = this.#unsettled.indexOf(writer);
    if (at >= 0) this.#unsettled.splice(0, at + 1);
    // Only now may a dispatcher claim what this transaction queued.
    if (writer.enqueued.length) this.#state.lanes.admit(writer.enqueued);
    for (const after of writer.afterCommit) await Promise.resolve(after()).catch(() => undefined);
    this.changes.publish(writer.changes);
    this.#journal.maybeCompact();
    return result;
  }

  /**
   * A journal write failed: every write not yet on disk is rolled back, newest first, once no
   * transaction body runs (a body running now fails at its commit and rolls itself back first).
   */
  #onJournalError(error?: unknown): void {
    this.#failing = true;
    // The error code only: readiness answers anyone, and the message names files.
    const code = (error as { cause?: { code?: string } } | undefined)?.cause?.code ?? (error as { code?: string } | undefined)?.code;
    this.#writeFailure = `the last journal write failed${code ? ` (${code})` : ''}`;
    this.#recovering ??= (async () => {
      const unlock = await this.#mutex.lock();
      try {
        const failed = this.#unsettled;
        this.#unsettled = [];
        // Their records were readable in memory meanwhile: their ids are not handed out again,
        // and the counters go with the next journal line (soft: a later id carries them anyway).
        for (let i = failed.length - 1; i >= 0; i--) failed[i].rollback({ keepIds: true });
        for (const writer of failed) {
          for (const op of writer.ops) {
            if (op.t === 'counter') this.#soft.set(`counter:${op.k}`, { t: 'counter', k: op.k, v: this.#state.counters[op.k] ?? op.v });
          }
        }
      } finally {
        this.#failing = false;
        this.#recovering = null;
        unlock();
      }
    })();
  }

  async #removeLogs(ids: number[]): Promise<void> {
    await Promise.all(ids.map((id) => this.deliveryLog.removeEndpoint(id).catch(() => undefined)));
  }

  #touch(id: number): void {
    this.#touched.add(id);
    if (this.#usageTimer || this.#closed) return;
    this.#usageTimer = setTimeout(() => {
      this.#usageTimer = null;
      void this.#flushUses().catch(() => undefined);
    }, this.#usageFlushMs);
    this.#usageTimer.unref();
  }

  async #flushUses(): Promise<void> {
    if (this.#touched.size === 0) return;
    const ids = [...this.#touched];
    this.#touched.clear();
    await this.#applyNow((writer) => {
      for (const id of ids) {
        const key = this.#state.api_keys.get(id);
        if (key) writer.put('api_keys', key, false);
      }
    });
  }

  /** Runs `fn` for a compaction: no transaction runs, and everything committed is on disk. */
  async #exclusive<T>(fn: () => T): Promise<T> {
    const unlock = await this.#mutex.lock();
    try {
      await this.#journal.idle();
      // A recovery waits for the mutex, so none can be half done here.
      if (this.#unsettled.length) throw new StoreUnavailableError('storage is unavailable: writes are being rolled back');
      return fn();
    } finally {
      unlock();
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    if (this.#readOnly) throw new StoreUnavailableError('the store was opened read-only');
  }
}

export { SCHEMA_VERSION };

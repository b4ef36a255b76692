// The embedded JSON store. State lives in memory; every committed transaction is one line of a
// write-ahead journal (journal-<gen>.jsonl), appended and fsynced with group commit: the
// transactions that commit while one batch is on its way to disk share the next fsync, so the
// cost of a write does not grow with the size of the store. store.json is a snapshot, rewritten
// atomically once the journal has grown, after which older journal files are removed. At open
// the snapshot is read and the journals since it are replayed.
//
// Transactions run one at a time (their bodies only touch memory, so they are short) and
// commit without waiting for each other's fsync. A failed journal write fails that transaction
// and every one committed after it, and rolls them back in reverse order: nothing is answered
// as done that is not on disk, and nothing stays in memory that is not.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdir, readdir, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Low, type Adapter } from 'lowdb';
import type { DataLayout } from '../../shared/paths.js';
import { SCHEMA_VERSION, migrate } from '../migrations.js';
import {
  StoreCorruptError,
  StoreUnavailableError,
  type Change,
  type ChangeFeed,
  type Repositories,
  type Store,
  type StoreInfo,
} from '../store.js';
import type { DeliveryRecord } from '../types.js';
import { AppendLog } from './append-log.js';
import { JsonDeliveryLog } from './delivery-log.js';
import { realFileOps, replaceFile, type FileOps } from './file-ops.js';
import { JsonRepositories, type RunOptions } from './repositories.js';
import { State, Writer, type Op, type Snapshot } from './state.js';

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

/**
 * lowdb adapter for the snapshot document (store.json): strict reads (a file that cannot be
 * read is an error, never replaced) and byte-checked atomic writes. The document is kept as its
 * JSON text: it is serialised under the store's lock, in one go, at a consistent point.
 */
class SnapshotAdapter implements Adapter<string | null> {
  constructor(
    readonly path: string,
    private readonly ops: FileOps,
  ) {}

  async read(): Promise<string | null> {
    try {
      return await readFile(this.path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new StoreCorruptError(this.path, (error as Error).message);
    }
  }

  async write(text: string | null): Promise<void> {
    if (text !== null) await replaceFile(this.ops, this.path, text, 0o600);
  }
}

interface JournalLine {
  s: number;
  o: Op[];
}

const JOURNAL = /^journal-(\d+)\.jsonl$/;
const COMPACT_AFTER_BYTES = 16 * 1024 * 1024;
/** Delivery log ids reserved by one fsynced journal line (see reserveIds). */
const LOG_ID_BLOCK = 1_000;
/** How long soft changes (request windows, key uses) may wait for their journal line. */
const SOFT_FLUSH_MS = 1_000;
/**
 * A write through the store's own methods inside a transaction would wait for the transaction
 * it is part of (a deadlock); with this set, it fails at once instead. Off by default: an
 * AsyncLocalStorage turns on Node's promise hooks for the whole process, which cost every
 * request (GET /sites ran at 0.6 of the bare route with it, against 0.75 before it). The test
 * suite sets it.
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

export class JsonStore implements Store {
  readonly info: StoreInfo;
  readonly changes = new LocalFeed();
  readonly users;
  readonly apiKeys;
  readonly subscriptions;
  readonly sites;
  readonly webhooks;
  readonly resetTokens;
  readonly revokedTokens;
  readonly limiter;
  readonly settings;
  readonly outbox;
  readonly deliveryLog: JsonDeliveryLog;

  readonly #state: State;
  readonly #paths: DataLayout;
  readonly #ops: FileOps;
  readonly #mutex = new Mutex();
  /** Set only under PANELCTL_STORE_CHECKS=1 (tests): see NESTING_CHECKS. */
  readonly #context = NESTING_CHECKS ? new AsyncLocalStorage<Writer>() : null;
  readonly #compactAfter: number;
  readonly #usageFlushMs: number;
  readonly #readOnly: boolean;
  /** Delivery log ids up to this one are reserved on disk (in the current journal generation). */
  #logIdsReserved = 0;
  #logIdsSaved: Promise<void> = Promise.resolve();
  #commitObserver: ((seconds: number) => void) | null = null;
  /** Why the last journal write failed, until one succeeds again (see ready). */
  #writeFailure: string | null = null;
  #journal: AppendLog;
  #gen: number;
  #seq: number;
  #journalBytes = 0;
  #snapshotBytes: number;
  /** Committed to memory and handed to the journal, not yet on disk: in commit order. */
  #unsettled: Writer[] = [];
  /** Set from a failed journal write until the writes after it are rolled back. */
  #recovering: Promise<void> | null = null;
  /** True from the moment a journal write fails until the rollback is done: nothing more is appended. */
  #failing = false;
  #compacting: Promise<void> | null = null;
  #compactFailedAt = 0;
  readonly #touched = new Set<number>();
  /** Soft changes waiting for their journal line (see #applyNow), by record. */
  readonly #soft = new Map<string, Op>();
  #softTimer: NodeJS.Timeout | null = null;
  #usageTimer: NodeJS.Timeout | null = null;
  #closed = false;

  private constructor(
    state: State,
    paths: DataLayout,
    ops: FileOps,
    private readonly snapshotFile: Low<string | null>,
    gen: number,
    seq: number,
    snapshotBytes: number,
    options: JsonStoreOptions,
  ) {
    this.#state = state;
    this.#paths = paths;
    this.#ops = ops;
    this.#gen = gen;
    this.#seq = seq;
    this.#snapshotBytes = snapshotBytes;
    this.#compactAfter = options.compactAfterBytes ?? COMPACT_AFTER_BYTES;
    this.#usageFlushMs = options.usageFlushMs ?? 30_000;
    this.#readOnly = options.readOnly ?? false;
    this.#journal = this.#openJournal(gen);
    this.info = { kind: 'json', location: paths.store };
    this.deliveryLog = new JsonDeliveryLog(
      paths.deliveriesDir,
      {
        reserveIds: (count) => {
          // Entries are announced (streams) once written, without fsync: their ids are reserved a
          // block ahead in a fsynced journal line, so after a crash no announced id is used again.
          const first = (state.counters.delivery_log ?? 0) + 1;
          const last = first + count - 1;
          state.counters.delivery_log = last;
          if (last > this.#logIdsReserved) {
            const mark = last + LOG_ID_BLOCK;
            this.#logIdsReserved = mark;
            this.#logIdsSaved = this.#append({ s: ++this.#seq, o: [{ t: 'counter', k: 'delivery_log', v: mark }] }, true);
            this.#logIdsSaved.catch(() => {
              // Not reserved: the next append tries again.
              if (this.#logIdsReserved === mark) this.#logIdsReserved = 0;
            });
          }
          return { first, saved: this.#logIdsSaved };
        },
        appended: (entries) => this.changes.publish([{ kind: 'logged', ids: entries.map((entry) => entry.id) }]),
      },
      ops,
    );
    const repositories = new JsonRepositories(state, (change, runOptions) => this.#run(change, runOptions), this.deliveryLog, {
      removeLogs: (ids) => this.#removeLogs(ids),
      touched: (id) => this.#touch(id),
    });
    this.users = repositories.users;
    this.apiKeys = repositories.apiKeys;
    this.subscriptions = repositories.subscriptions;
    this.sites = repositories.sites;
    this.webhooks = repositories.webhooks;
    this.resetTokens = repositories.resetTokens;
    this.revokedTokens = repositories.revokedTokens;
    this.limiter = repositories.limiter;
    this.settings = repositories.settings;
    this.outbox = repositories.outbox;
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
    const warn = options.warn ?? (() => undefined);
    const snapshotFile = new Low<string | null>(new SnapshotAdapter(paths.store, ops), null);
    await snapshotFile.read();
    const text = snapshotFile.data;
    // Not kept: the snapshot's text is as large as the store (tens of MB with a big backlog).
    snapshotFile.data = null;
    if (text === null && !options.create) throw new StoreCorruptError(paths.store, 'the file does not exist (run `panelctl init`)');
    let doc: Record<string, unknown> = {};
    if (text !== null) {
      try {
        doc = JSON.parse(text) as Record<string, unknown>;
      } catch (error) {
        throw new StoreCorruptError(paths.store, `not valid JSON (${(error as Error).message})`);
      }
      if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new StoreCorruptError(paths.store, 'not a JSON object');
    }
    let rewrite = text === null && !options.readOnly;
    try {
      rewrite = migrate(doc) || rewrite;
    } catch (error) {
      throw new StoreCorruptError(paths.store, (error as Error).message);
    }
    const state = new State();
    state.load(doc as unknown as Snapshot);
    // Stores written before the journal kept the outbox in outbox.jsonl.
    if (typeof doc.journal_gen !== 'number') {
      await loadLegacyOutbox(paths, state);
      rewrite = !options.readOnly;
    }
    if (!options.readOnly) {
      await mkdir(paths.root, { recursive: true, mode: 0o700 });
      await mkdir(paths.deliveriesDir, { recursive: true, mode: 0o700 });
    }
    const snapshotGen = typeof doc.journal_gen === 'number' ? doc.journal_gen : 1;
    const { gen, seq } = await replayJournals(paths.root, snapshotGen, state, warn, !options.readOnly);
    const store = new JsonStore(state, paths, ops, snapshotFile, gen, seq, text?.length ?? 0, options);
    // Read-only: a migrated document stays in memory only (the daemon owning the files migrates them).
    if (rewrite && !options.readOnly) await store.#compactNow();
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
    await this.#append({ s: ++this.#seq, o: [] }, true).then(
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
    this.#flushSoft();
    await this.#journal.idle();
    await this.#recovering;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#readOnly) {
      this.#closed = true;
      return;
    }
    await this.flush().catch(() => undefined);
    await this.#compacting;
    if (this.#journalBytes > 0) await this.#compactNow().catch(() => undefined);
    this.#closed = true;
    if (this.#usageTimer) clearTimeout(this.#usageTimer);
    await this.#journal.close();
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
    for (const op of writer.ops) this.#soft.set(op.t === 'settings' || op.t === 'enqueue' ? `${op.t}:${this.#soft.size}` : `${op.t}:${op.k}`, op);
    if (this.#soft.size > 0 && !this.#softTimer && !this.#closed) {
      this.#softTimer = setTimeout(() => this.#flushSoft(), SOFT_FLUSH_MS);
      this.#softTimer.unref();
    }
    this.changes.publish(writer.changes);
    return result;
  }

  #flushSoft(): void {
    if (this.#softTimer) clearTimeout(this.#softTimer);
    this.#softTimer = null;
    if (this.#soft.size === 0 || this.#failing) return;
    const ops = [...this.#soft.values()];
    this.#soft.clear();
    this.#append({ s: ++this.#seq, o: ops }, false).catch(() => undefined);
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
    writer.seq = ++this.#seq;
    this.#unsettled.push(writer);
    const observer = this.#commitObserver;
    const started = observer ? performance.now() : 0;
    const written = this.#append({ s: writer.seq, o: writer.ops }, writer.durable);
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
    this.#maybeCompact();
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

  #append(line: JournalLine, durable: boolean): Promise<void> {
    const text = JSON.stringify(line);
    this.#journalBytes += text.length + 1;
    return this.#journal.append(text, durable);
  }

  #openJournal(gen: number): AppendLog {
    return new AppendLog(join(this.#paths.root, `journal-${gen}.jsonl`), {
      ops: this.#ops,
      failQueuedOnError: true,
      closeWhenIdle: true,
      onError: (error) => this.#onJournalError(error),
    });
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

  #maybeCompact(): void {
    if (this.#compacting || this.#closed) return;
    if (this.#journalBytes < Math.max(this.#compactAfter, this.#snapshotBytes)) return;
    // After a failure (a full disk), try again a little later rather than on every write.
    if (Date.now() - this.#compactFailedAt < 5_000) return;
    this.#compacting = this.#compactNow()
      .catch(() => {
        this.#compactFailedAt = Date.now();
      })
      .finally(() => (this.#compacting = null));
  }

  /**
   * Writes a snapshot of everything on disk so far and moves on to a new journal file; the
   * older journals are removed once the snapshot is durable. Until then they are replayed at
   * open, so a failed snapshot (a full disk) loses nothing.
   */
  async #compactNow(): Promise<void> {
    const unlock = await this.#mutex.lock();
    let snapshot: string;
    let previous: AppendLog;
    const gen = this.#gen + 1;
    try {
      await this.#journal.idle();
      await this.#recoveringDone();
      snapshot = this.#state.snapshot(SCHEMA_VERSION, gen);
      previous = this.#journal;
      this.#journal = this.#openJournal(gen);
      this.#gen = gen;
      this.#journalBytes = 0;
      // The snapshot holds the ids used so far; the next ones are reserved in the new journal.
      this.#logIdsReserved = 0;
    } finally {
      unlock();
    }
    await previous.close();
    this.snapshotFile.data = snapshot;
    await this.snapshotFile.write();
    this.snapshotFile.data = null;
    this.#snapshotBytes = snapshot.length;
    for (const name of await readdir(this.#paths.root)) {
      const match = JOURNAL.exec(name);
      if (match && Number(match[1]) < gen) await rm(join(this.#paths.root, name), { force: true });
    }
    await rm(this.#paths.outbox, { force: true });
  }

  async #recoveringDone(): Promise<void> {
    // Called with the mutex held: a recovery waits for the mutex, so none can be half done here.
    if (this.#unsettled.length) throw new StoreUnavailableError('storage is unavailable: writes are being rolled back');
  }

  #assertOpen(): void {
    if (this.#closed) throw new StoreUnavailableError('the store is closed');
    if (this.#readOnly) throw new StoreUnavailableError('the store was opened read-only');
  }
}

/** Replays the journals from `fromGen` on, in order; a torn last line (never acknowledged) is cut off. */
async function replayJournals(
  root: string,
  fromGen: number,
  state: State,
  warn: (message: string) => void,
  repair: boolean,
): Promise<{ gen: number; seq: number }> {
  const gens = (await readdir(root))
    .map((name) => JOURNAL.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .filter((g) => g >= fromGen)
    .sort((a, b) => a - b);
  let seq = 0;
  for (const [index, gen] of gens.entries()) {
    const path = join(root, `journal-${gen}.jsonl`);
    const text = await readFile(path, 'utf8');
    const lines = text.split('\n');
    let good = 0;
    for (let i = 0; i < lines.length; i++) {
      const raw = lines[i];
      const complete = i < lines.length - 1;
      if (raw === '' && complete) {
        good += 1;
        continue;
      }
      if (raw === '') break;
      let line: JournalLine | null = null;
      try {
        line = complete ? (JSON.parse(raw) as JournalLine) : null;
      } catch {
        line = null;
      }
      if (!line || !Array.isArray(line.o)) {
        const rest = lines.slice(i + 1).every((l) => l === '');
        if (index === gens.length - 1 && rest) {
          if (!repair) break;
          await truncate(path, good);
          warn(`${path}: cut off an incomplete last line (${Buffer.byteLength(raw)} bytes), a write that was never acknowledged`);
          break;
        }
        throw new StoreCorruptError(path, `line ${i + 1} is not valid JSON`);
      }
      for (const op of line.o) state.apply(op);
      seq = Math.max(seq, line.s);
      good += Buffer.byteLength(raw) + 1;
    }
  }
  return { gen: gens.length ? gens[gens.length - 1] : fromGen, seq };
}

/** Reads the pending deliveries of a store written before the journal (outbox.jsonl). */
async function loadLegacyOutbox(paths: DataLayout, state: State): Promise<void> {
  let text: string;
  try {
    text = await readFile(paths.outbox, 'utf8');
  } catch {
    return;
  }
  const pending = new Map<string, DeliveryRecord>();
  for (const raw of text.split('\n')) {
    if (!raw) continue;
    let line: { t: string; deliveries?: DeliveryRecord[]; delivery?: DeliveryRecord; id?: string; state?: string; attempts?: number; next_attempt_at?: number };
    try {
      line = JSON.parse(raw);
    } catch {
      continue; // a torn last line: never acknowledged
    }
    if (line.t === 'e') for (const d of line.deliveries ?? []) pending.set(d.id, d);
    else if (line.t === 'd' && line.delivery) pending.set(line.delivery.id, line.delivery);
    else if (line.t === 'u' && line.id) {
      const d = pending.get(line.id);
      if (!d) continue;
      if (line.state !== 'pending') pending.delete(line.id);
      else pending.set(line.id, { ...d, attempts: line.attempts ?? d.attempts, next_attempt_at: line.next_attempt_at ?? d.next_attempt_at });
    }
  }
  for (const d of pending.values()) {
    state.deliveries.put({ ...d, owner_id: d.owner_id ?? state.webhooks.get(d.endpoint_id)?.user_id ?? null });
  }
}

export { SCHEMA_VERSION };

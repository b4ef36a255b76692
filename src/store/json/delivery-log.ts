// Delivery logs, one JSON-lines file per endpoint under deliveries/. Entry ids come from the
// store's counter (increasing integers, short enough to type). Recording an attempt
// appends one line to that endpoint's file only, so its cost does not grow with the number
// of endpoints. Once an endpoint's file holds LOG_RETENTION entries it becomes the endpoint's
// previous segment (<id>.old.jsonl, a rename over the one before) and a new file begins: the
// two hold the newest LOG_RETENTION entries and at most twice that, and keeping them so costs a
// rename, not a rewrite of the kept entries (a read, a write and two fsyncs per LOG_RETENTION
// attempts, which competed with the journal's fsyncs for the disk). The kept entries of recently read logs are held parsed in memory and kept current by
// appends, within a byte budget (least recently read logs are dropped first and read from disk
// again when asked for); every log read or written keeps a small health summary (HealthWindow). At most
// MAX_OPEN_FILES file handles stay open however many endpoints there are.
import { mkdir, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { LOG_RETENTION, type DeliveryLogQuery, type DeliveryLogRepository, type LogHealth } from '../store.js';
import type { DeliveryLogEntry } from '../types.js';
import { AppendLog } from './append-log.js';
import { realFileOps, type FileOps } from './file-ops.js';
import { HealthWindow } from './log-health.js';

const MAX_OPEN_FILES = 1024;
/**
 * A log file not written for this long is closed, as the journal is when idle: an idle daemon
 * holds no file of the data directory open for writing (it can be remounted read-only). Long
 * enough that a steady stream of attempts keeps its files open.
 */
const IDLE_CLOSE_MS = 1_000;
/** Entries kept in memory for reconnecting streams (`since`). */
const RECENT = 1000;
/**
 * Serialized size of the parsed log entries kept in memory, all logs together: a few hundred
 * full logs, so the logs being watched are served without reading a file while 10,000 endpoints
 * with full logs cannot fill the heap (parsed entries take a few times their JSON size).
 */
export const LOG_CACHE_BYTES = 16 * 2 ** 20;
/** Logs read at once when many endpoints' health is asked for that is not in memory yet. */
const LOAD_CONCURRENCY = 8;
/** Reads of a log that appends keep overtaking before one is answered without being kept. */
const MAX_LOAD_TRIES = 3;

/** An endpoint's newest entries (at most the retention), oldest first, with their serialized sizes. */
interface CachedLog {
  entries: DeliveryLogEntry[];
  sizes: number[];
  bytes: number;
}

export interface DeliveryLogOptions {
  retention?: number;
  /** See LOG_CACHE_BYTES. */
  cacheBytes?: number;
}

export interface DeliveryLogHost {
  /**
   * Reserves `count` entry ids; answers the first, and `saved`, which resolves once the ids can
   * no longer be handed out again after a crash (an entry is announced the moment it is written).
   */
  reserveIds(count: number): { first: number; saved: Promise<void> };
  /** Told of the entries of each append, once written (the store's change feed). */
  appended(entries: DeliveryLogEntry[]): void;
}

export class JsonDeliveryLog implements DeliveryLogRepository {
  readonly #logs = new Map<number, AppendLog>();
  /** Lines in each endpoint's current file (not its previous segment). */
  readonly #lineCounts = new Map<number, number>();
  /** The last queued append of each endpoint waiting for its count or a rotation: later ones queue behind it. */
  readonly #waiting = new Map<number, Promise<void>>();
  /** Segment rotations under way: appends and reads of the endpoint wait for them. */
  readonly #rotating = new Map<number, Promise<void>>();
  /** Endpoints whose log file handle may be open, least recently written first. */
  readonly #recent = new Map<number, AppendLog>();
  /** Endpoints removed in this process: a late attempt must not bring their file back. */
  readonly #removed = new Set<number>();
  #latest: DeliveryLogEntry[] = [];
  /** Parsed logs, least recently used first. */
  readonly #cache = new Map<number, CachedLog>();
  #cachedBytes = 0;
  /** Health summaries of the endpoints read or written since the store opened. */
  readonly #health = new Map<number, HealthWindow>();
  /** Appends started per endpoint: a log read from disk meanwhile may miss one, so it is not kept. */
  readonly #versions = new Map<number, number>();
  readonly #loading = new Map<number, Promise<CachedLog>>();
  private readonly retention: number;
  private readonly cacheBytes: number;

  constructor(
    readonly dir: string,
    private readonly host: DeliveryLogHost,
    private readonly ops: FileOps = realFileOps,
    options: DeliveryLogOptions = {},
  ) {
    this.retention = options.retention ?? LOG_RETENTION;
    this.cacheBytes = options.cacheBytes ?? LOG_CACHE_BYTES;
  }

  static async open(dir: string, host: DeliveryLogHost, ops?: FileOps, options?: DeliveryLogOptions): Promise<JsonDeliveryLog> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return new JsonDeliveryLog(dir, host, ops, options);
  }

  /** What the parsed-log cache holds (for tests of its bound). */
  cacheStats(): { logs: number; bytes: number; budget: number } {
    return { logs: this.#cache.size, bytes: this.#cachedBytes, budget: this.cacheBytes };
  }

  async append(entries: Omit<DeliveryLogEntry, 'id'>[]): Promise<DeliveryLogEntry[]> {
    if (entries.length === 0) return [];
    const { first, saved } = this.host.reserveIds(entries.length);
    await saved;
    const full = entries.map((entry, i): DeliveryLogEntry => ({ id: first + i, ...entry }));
    // Lines go to their files at once, in id order per endpoint. An endpoint whose lines are
    // not counted yet (its first append reads its file) or whose file is being rotated takes
    // the rest of the batch's entries along the waiting path, so its lines stay in order. The
    // appends of one turn share a batch (and its promise) per file.
    const writes = new Set<Promise<void>>();
    let waiting: Map<number, DeliveryLogEntry[]> | null = null;
    for (const entry of full) {
      const endpointId = entry.endpoint_id;
      const queued = waiting?.get(endpointId);
      if (queued) queued.push(entry);
      else if (!this.#lineCounts.has(endpointId) || this.#rotating.has(endpointId) || this.#waiting.has(endpointId)) (waiting ??= new Map()).set(endpointId, [entry]);
      else {
        const written = this.#appendNow(entry);
        if (written) writes.add(written);
      }
    }
    if (waiting) for (const [endpointId, queued] of waiting) writes.add(this.#appendAfterWaits(endpointId, queued));
    await Promise.all(writes);
    this.#latest.push(...full);
    this.host.appended(full);
    if (this.#latest.length > RECENT * 2) this.#latest = this.#latest.slice(-RECENT);
    return full;
  }

  async since(entryId: number, limit: number): Promise<DeliveryLogEntry[]> {
    return this.#latest.filter((entry) => entry.id > entryId).slice(0, limit);
  }

  /** From the recent entries only: the feed announces an entry as it is appended, so those asked for are among them. */
  async getMany(ids: readonly number[]): Promise<DeliveryLogEntry[]> {
    const wanted = new Set(ids);
    return this.#latest.filter((entry) => wanted.has(entry.id));
  }

  /**
   * Appends one endpoint's entries in order once its lines are counted and no rotation runs,
   * after the entries queued so before them (later appends to the endpoint queue behind).
   */
  #appendAfterWaits(endpointId: number, entries: DeliveryLogEntry[]): Promise<void> {
    const before = this.#waiting.get(endpointId);
    const queued = (async () => {
      if (before) await before;
      if (!this.#lineCounts.has(endpointId)) await this.#count(endpointId);
      const writes = new Set<Promise<void>>();
      for (const entry of entries) {
        while (this.#rotating.has(endpointId)) await this.#rotating.get(endpointId);
        const write = this.#appendNow(entry);
        if (write) writes.add(write);
      }
      return writes;
    })();
    // The next in line waits for these lines to be appended, not for their write.
    const appended = queued.then(
      () => undefined,
      () => undefined,
    );
    this.#waiting.set(endpointId, appended);
    void appended.then(() => {
      if (this.#waiting.get(endpointId) === appended) this.#waiting.delete(endpointId);
    });
    return queued.then(async (writes) => {
      await Promise.all(writes);
    });
  }

  /**
   * Appends one entry to its endpoint's file (counted, not rotating) and answers its batch's
   * write; null for a removed endpoint. Synchronous, so a rotation cannot start in between.
   */
  #appendNow(full: DeliveryLogEntry): Promise<void> | null {
    const endpointId = full.endpoint_id;
    if (this.#removed.has(endpointId)) return null;
    const count = (this.#lineCounts.get(endpointId) ?? 0) + 1;
    this.#lineCounts.set(endpointId, count);
    const log = this.#log(endpointId);
    this.#touch(endpointId, log);
    const line = JSON.stringify(full);
    const written = log.append(line);
    // A line that could not be written is not in the file (the append log cuts a torn one off):
    // what memory holds of this log is dropped and read again from the file when next asked for,
    // before a read waiting for this write answers (see #written).
    written.catch(() => this.#forget(endpointId));
    this.#versions.set(endpointId, (this.#versions.get(endpointId) ?? 0) + 1);
    this.#health.get(endpointId)?.add(full);
    const cached = this.#cache.get(endpointId);
    if (cached) {
      cached.entries.push(full);
      cached.sizes.push(line.length);
      cached.bytes += line.length;
      this.#cachedBytes += line.length;
      if (cached.entries.length > this.retention) {
        cached.entries.shift();
        const size = cached.sizes.shift()!;
        cached.bytes -= size;
        this.#cachedBytes -= size;
      }
      this.#evict();
    }
    // Not while the log is being read from its files: a rotation between the reads of its two
    // files would hide a segment from that read. The next append rotates instead.
    if (count >= this.retention && !this.#rotating.has(endpointId) && !this.#loading.has(endpointId)) {
      // A failed rotation only leaves the file longer: the next append retries.
      const job = this.#rotate(endpointId)
        .catch(() => undefined)
        .finally(() => this.#rotating.delete(endpointId));
      this.#rotating.set(endpointId, job);
    }
    return written;
  }

  /**
   * Resolves once the entries appended to these endpoints' logs before the call are in their
   * files: an entry is in memory from the moment its line is queued, and a read must not show
   * one that a crash before the write would lose (the delivery would then be attempted and
   * logged again). Null when no write of theirs is pending.
   */
  #written(endpointIds: readonly number[]): Promise<unknown> | null {
    let waits: Promise<void>[] | null = null;
    for (const id of endpointIds) {
      const wait = this.#logs.get(id)?.settled();
      if (wait) (waits ??= []).push(wait);
    }
    return waits && Promise.all(waits);
  }

  async list(endpointId: number, query: DeliveryLogQuery = {}): Promise<DeliveryLogEntry[]> {
    await this.#written([endpointId]);
    const window = (await this.#window(endpointId)).entries;
    let entries: DeliveryLogEntry[] = new Array(window.length);
    for (let i = 0; i < window.length; i++) entries[i] = window[window.length - 1 - i];
    if (query.failed !== undefined) entries = entries.filter((e) => e.success !== query.failed);
    if (query.event !== undefined) entries = entries.filter((e) => e.event === query.event);
    if (query.since !== undefined) entries = entries.filter((e) => Date.parse(e.created_at) >= query.since!);
    return entries.slice(0, Math.min(query.limit ?? this.retention, this.retention));
  }

  async get(endpointId: number, entryId: number): Promise<DeliveryLogEntry | undefined> {
    await this.#written([endpointId]);
    return (await this.#window(endpointId)).entries.find((entry) => entry.id === entryId);
  }

  /** Appends counted in this process (entries are never changed, and a removed log is gone). */
  async revision(endpointId: number): Promise<string> {
    return String(this.#versions.get(endpointId) ?? 0);
  }

  async health(endpointIds: readonly number[]): Promise<Map<number, LogHealth | null>> {
    await this.#written(endpointIds);
    const missing = endpointIds.filter((id) => !this.#health.has(id));
    const read = new Map<number, CachedLog>();
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < missing.length; i = next++) read.set(missing[i], await this.#window(missing[i]));
    };
    await Promise.all(Array.from({ length: Math.min(LOAD_CONCURRENCY, missing.length) }, worker));
    const out = new Map<number, LogHealth | null>();
    for (const id of endpointIds) out.set(id, (this.#health.get(id) ?? this.#summarise(read.get(id)?.entries ?? [])).summary());
    return out;
  }

  #summarise(entries: readonly DeliveryLogEntry[]): HealthWindow {
    const health = new HealthWindow(this.retention);
    for (const entry of entries) health.add(entry);
    return health;
  }

  /** The endpoint's newest entries, oldest first: from memory, else read from its file (and kept). */
  async #window(endpointId: number): Promise<CachedLog> {
    const cached = this.#cache.get(endpointId);
    if (cached) {
      this.#cache.delete(endpointId);
      this.#cache.set(endpointId, cached);
      return cached;
    }
    let loading = this.#loading.get(endpointId);
    if (!loading) {
      loading = this.#load(endpointId).finally(() => this.#loading.delete(endpointId));
      this.#loading.set(endpointId, loading);
    }
    return loading;
  }

  async #load(endpointId: number): Promise<CachedLog> {
    for (let tries = 1; ; tries++) {
      while (this.#rotating.has(endpointId)) await this.#rotating.get(endpointId);
      const version = this.#versions.get(endpointId) ?? 0;
      await this.#logs.get(endpointId)?.idle();
      // The previous segment, then the current file (each split on its own: a torn last line of
      // one must not swallow the other's first).
      const lines = [...(await this.#text(this.#oldPath(endpointId))).split('\n'), ...(await this.#text(this.#path(endpointId))).split('\n')];
      const entries: DeliveryLogEntry[] = [];
      const sizes: number[] = [];
      for (const line of lines) {
        if (!line) continue;
        try {
          entries.push(JSON.parse(line) as DeliveryLogEntry);
          sizes.push(line.length);
        } catch {
          // A torn line from a crash mid-append: skip it, the outbox still has the delivery.
        }
      }
      const from = Math.max(0, entries.length - this.retention);
      const log: CachedLog = { entries: entries.slice(from), sizes: sizes.slice(from), bytes: 0 };
      for (const size of log.sizes) log.bytes += size;
      // An append started while the file was read may or may not be in the text: read it again,
      // or under a steady stream of appends answer what was read, as an uncached read would.
      if ((this.#versions.get(endpointId) ?? 0) !== version) {
        if (tries < MAX_LOAD_TRIES) continue;
        return log;
      }
      if (this.#removed.has(endpointId)) return log;
      if (!this.#health.has(endpointId)) this.#health.set(endpointId, this.#summarise(log.entries));
      this.#cache.set(endpointId, log);
      this.#cachedBytes += log.bytes;
      this.#evict(endpointId);
      return log;
    }
  }

  /** Forgets what memory holds of an endpoint's log (its entries, health and line count): the file is read again. */
  #forget(endpointId: number): void {
    this.#versions.set(endpointId, (this.#versions.get(endpointId) ?? 0) + 1);
    this.#lineCounts.delete(endpointId);
    this.#health.delete(endpointId);
    const cached = this.#cache.get(endpointId);
    if (cached) {
      this.#cache.delete(endpointId);
      this.#cachedBytes -= cached.bytes;
    }
  }

  /** Drops the least recently used logs beyond the budget (but not `keep`, just read). */
  #evict(keep?: number): void {
    for (const [id, log] of this.#cache) {
      if (this.#cachedBytes <= this.cacheBytes) return;
      if (id === keep) continue;
      this.#cache.delete(id);
      this.#cachedBytes -= log.bytes;
    }
  }

  async removeEndpoint(endpointId: number): Promise<void> {
    this.#removed.add(endpointId);
    this.#versions.set(endpointId, (this.#versions.get(endpointId) ?? 0) + 1);
    await this.#rotating.get(endpointId);
    await this.#logs.get(endpointId)?.close();
    this.#logs.delete(endpointId);
    this.#recent.delete(endpointId);
    this.#forget(endpointId);
    await rm(this.#path(endpointId), { force: true });
    await rm(this.#oldPath(endpointId), { force: true });
  }

  async close(): Promise<void> {
    await Promise.all(this.#rotating.values());
    await Promise.all([...this.#logs.values()].map((log) => log.close()));
  }

  #path(endpointId: number): string {
    return join(this.dir, `${endpointId}.jsonl`);
  }

  /** The endpoint's previous segment (see the header). */
  #oldPath(endpointId: number): string {
    return join(this.dir, `${endpointId}.old.jsonl`);
  }

  #log(endpointId: number): AppendLog {
    let log = this.#logs.get(endpointId);
    if (!log) {
      // Logs are observability, not the source of truth (the outbox is): no fsync per line.
      log = new AppendLog(this.#path(endpointId), { durable: false, ops: this.ops, closeAfterIdleMs: IDLE_CLOSE_MS });
      this.#logs.set(endpointId, log);
    }
    return log;
  }

  /** Marks a log as just written and closes the handle of the least recently written beyond the cap. */
  #touch(endpointId: number, log: AppendLog): void {
    this.#recent.delete(endpointId);
    this.#recent.set(endpointId, log);
    if (this.#recent.size <= MAX_OPEN_FILES) return;
    for (const [id, oldest] of this.#recent) {
      this.#recent.delete(id);
      // reopen() waits for pending writes, then closes; the next append opens the file again.
      void oldest.reopen().catch(() => undefined);
      break;
    }
  }

  /** Counts the lines once per endpoint, cutting off a line torn by a crash mid-append. */
  async #count(endpointId: number): Promise<number> {
    const known = this.#lineCounts.get(endpointId);
    if (known !== undefined) return known;
    const text = await this.#text(this.#path(endpointId));
    const complete = text.lastIndexOf('\n') + 1;
    if (complete < text.length && !this.#lineCounts.has(endpointId)) {
      await truncate(this.#path(endpointId), Buffer.byteLength(text.slice(0, complete)));
    }
    const count = text.slice(0, complete).split('\n').filter(Boolean).length;
    // Two first appends may both read; the one that wrote meanwhile keeps its count.
    if (!this.#lineCounts.has(endpointId)) this.#lineCounts.set(endpointId, count);
    return this.#lineCounts.get(endpointId)!;
  }

  async #text(path: string): Promise<string> {
    try {
      return await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw error;
    }
  }

  /**
   * Makes the current file the previous segment and starts a new one. Unsynced, as the appends
   * are: after a power loss the rename or the last lines may be missing, never a kept entry
   * that was on disk before.
   */
  async #rotate(endpointId: number): Promise<void> {
    const log = this.#log(endpointId);
    await log.idle();
    await this.ops.rename(this.#path(endpointId), this.#oldPath(endpointId));
    await log.reopen();
    this.#lineCounts.set(endpointId, 0);
  }

}

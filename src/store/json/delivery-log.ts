// Delivery logs, one JSON-lines file per endpoint under deliveries/. Entry ids come from the
// store's counter (increasing integers, short enough to type). Recording an attempt
// appends one line to that endpoint's file only, so its cost does not grow with the number
// of endpoints. A file is cut back to the newest 100 entries once it holds 200. Logs are
// read from disk on request, so memory does not grow with log size, and at most
// MAX_OPEN_FILES file handles stay open however many endpoints there are.
import { mkdir, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import type { DeliveryLogQuery, DeliveryLogRepository } from '../store.js';
import type { DeliveryLogEntry } from '../types.js';
import { AppendLog } from './append-log.js';
import { realFileOps, replaceFile, type FileOps } from './file-ops.js';

export const LOG_RETENTION = 100;
const MAX_OPEN_FILES = 1024;
/**
 * A log file not written for this long is closed, as the journal is when idle: an idle daemon
 * holds no file of the data directory open for writing (it can be remounted read-only). Long
 * enough that a steady stream of attempts keeps its files open.
 */
const IDLE_CLOSE_MS = 1_000;
/** Entries kept in memory for reconnecting streams (`since`). */
const RECENT = 1000;

export interface DeliveryLogHost {
  /**
   * Reserves `count` entry ids; answers the first, and `saved`, which resolves once the ids can
   * no longer be handed out again after a crash (an entry is announced the moment it is written).
   */
  reserveIds(count: number): { first: number; saved: Promise<void> };
  /** Told of each appended entry (the store's change feed). */
  appended(entry: DeliveryLogEntry): void;
}

export class JsonDeliveryLog implements DeliveryLogRepository {
  readonly #logs = new Map<number, AppendLog>();
  readonly #lineCounts = new Map<number, number>();
  readonly #compacting = new Map<number, Promise<void>>();
  /** Endpoints whose log file handle may be open, least recently written first. */
  readonly #recent = new Map<number, AppendLog>();
  /** Endpoints removed in this process: a late attempt must not bring their file back. */
  readonly #removed = new Set<number>();
  #latest: DeliveryLogEntry[] = [];

  constructor(
    readonly dir: string,
    private readonly host: DeliveryLogHost,
    private readonly ops: FileOps = realFileOps,
    private readonly retention = LOG_RETENTION,
  ) {}

  static async open(dir: string, host: DeliveryLogHost, ops?: FileOps): Promise<JsonDeliveryLog> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    return new JsonDeliveryLog(dir, host, ops);
  }

  async append(entries: Omit<DeliveryLogEntry, 'id'>[]): Promise<DeliveryLogEntry[]> {
    if (entries.length === 0) return [];
    const { first, saved } = this.host.reserveIds(entries.length);
    await saved;
    const full = entries.map((entry, i): DeliveryLogEntry => ({ id: first + i, ...entry }));
    // Per endpoint in id order (each endpoint's first append reads its file first).
    const byEndpoint = new Map<number, DeliveryLogEntry[]>();
    for (const entry of full) {
      const list = byEndpoint.get(entry.endpoint_id);
      if (list) list.push(entry);
      else byEndpoint.set(entry.endpoint_id, [entry]);
    }
    await Promise.all(
      [...byEndpoint].map(async ([endpointId, entries]) => {
        if (!this.#lineCounts.has(endpointId)) await this.#count(endpointId);
        // From here the appends start in order (waits on a compaction resume in call order).
        await Promise.all(entries.map((entry) => this.#appendOne(entry)));
      }),
    );
    for (const entry of full) {
      this.#latest.push(entry);
      this.host.appended(entry);
    }
    if (this.#latest.length > RECENT * 2) this.#latest = this.#latest.slice(-RECENT);
    return full;
  }

  async since(entryId: number, limit: number): Promise<DeliveryLogEntry[]> {
    return this.#latest.filter((entry) => entry.id > entryId).slice(0, limit);
  }

  /** From the recent entries only: nothing asks this store for them (its feed carries whole entries). */
  async getMany(ids: readonly number[]): Promise<DeliveryLogEntry[]> {
    const wanted = new Set(ids);
    return this.#latest.filter((entry) => wanted.has(entry.id));
  }

  async #appendOne(full: DeliveryLogEntry): Promise<void> {
    const endpointId = full.endpoint_id;
    if (!this.#lineCounts.has(endpointId)) await this.#count(endpointId);
    while (this.#compacting.has(endpointId)) await this.#compacting.get(endpointId);
    // From here on synchronous up to the append, so a compaction cannot start in between.
    if (this.#removed.has(endpointId)) return;
    const count = (this.#lineCounts.get(endpointId) ?? 0) + 1;
    this.#lineCounts.set(endpointId, count);
    const log = this.#log(endpointId);
    this.#touch(endpointId, log);
    const written = log.append(JSON.stringify(full));
    if (count >= this.retention * 2 && !this.#compacting.has(endpointId)) {
      // A failed compaction (a full disk) only leaves the file longer: the next one retries.
      const job = this.#compact(endpointId)
        .catch(() => undefined)
        .finally(() => this.#compacting.delete(endpointId));
      this.#compacting.set(endpointId, job);
    }
    await written;
  }

  async list(endpointId: number, query: DeliveryLogQuery = {}): Promise<DeliveryLogEntry[]> {
    await this.#log(endpointId).idle();
    let entries = (await this.#read(endpointId)).slice(-this.retention).reverse();
    if (query.failed !== undefined) entries = entries.filter((e) => e.success !== query.failed);
    if (query.event !== undefined) entries = entries.filter((e) => e.event === query.event);
    if (query.since !== undefined) entries = entries.filter((e) => Date.parse(e.created_at) >= query.since!);
    return entries.slice(0, Math.min(query.limit ?? this.retention, this.retention));
  }

  async get(endpointId: number, entryId: number): Promise<DeliveryLogEntry | undefined> {
    return (await this.list(endpointId)).find((entry) => entry.id === entryId);
  }

  async removeEndpoint(endpointId: number): Promise<void> {
    this.#removed.add(endpointId);
    await this.#compacting.get(endpointId);
    await this.#logs.get(endpointId)?.close();
    this.#logs.delete(endpointId);
    this.#recent.delete(endpointId);
    this.#lineCounts.delete(endpointId);
    await rm(this.#path(endpointId), { force: true });
  }

  async close(): Promise<void> {
    await Promise.all(this.#compacting.values());
    await Promise.all([...this.#logs.values()].map((log) => log.close()));
  }

  #path(endpointId: number): string {
    return join(this.dir, `${endpointId}.jsonl`);
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
    const text = await this.#text(endpointId);
    const complete = text.lastIndexOf('\n') + 1;
    if (complete < text.length && !this.#lineCounts.has(endpointId)) {
      await truncate(this.#path(endpointId), Buffer.byteLength(text.slice(0, complete)));
    }
    const count = text.slice(0, complete).split('\n').filter(Boolean).length;
    // Two first appends may both read; the one that wrote meanwhile keeps its count.
    if (!this.#lineCounts.has(endpointId)) this.#lineCounts.set(endpointId, count);
    return this.#lineCounts.get(endpointId)!;
  }

  async #text(endpointId: number): Promise<string> {
    try {
      return await readFile(this.#path(endpointId), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw error;
    }
  }

  async #read(endpointId: number): Promise<DeliveryLogEntry[]> {
    const entries: DeliveryLogEntry[] = [];
    for (const line of (await this.#text(endpointId)).split('\n')) {
      if (!line) continue;
      try {
        entries.push(JSON.parse(line) as DeliveryLogEntry);
      } catch {
        // A torn line from a crash mid-append: skip it, the outbox still has the delivery.
      }
    }
    return entries;
  }

  /** Cuts the file back to its newest entries, as text: no parsing on the delivery path. */
  async #compact(endpointId: number): Promise<void> {
    const log = this.#log(endpointId);
    await log.idle();
    const keep = (await this.#text(endpointId)).split('\n').filter(Boolean).slice(-this.retention);
    await replaceFile(this.ops, this.#path(endpointId), keep.join('\n') + '\n', 0o600);
    await log.reopen();
    this.#lineCounts.set(endpointId, keep.length);
  }
}

// The JSON store's write-ahead journal: one line per committed transaction in
// journal-<gen>.jsonl, appended with group commit (see AppendLog). Once the journal outgrows
// COMPACT_AFTER_BYTES and the snapshot, it is folded into a new snapshot and the next
// generation begins; older generations are removed only once that snapshot is durable, so a
// failed snapshot (a full disk) loses nothing. At open the journals since the snapshot are
// replayed. The journal also reserves delivery log ids ahead of their use.
import { readdir, readFile, rm, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import type { DataLayout } from '../../shared/paths.js';
import { StoreCorruptError } from '../store.js';
import { AppendLog } from './append-log.js';
import type { FileOps } from './file-ops.js';
import type { SnapshotFile } from './snapshot.js';
import type { Op, State } from './state.js';

/** One journal line: a sequence number and the operations of one commit. */
export interface JournalLine {
  s: number;
  o: Op[];
}

const JOURNAL = /^journal-(\d+)\.jsonl$/;
/** Journal size past which (and past the snapshot's size) a compaction starts. */
export const COMPACT_AFTER_BYTES = 16 * 1024 * 1024;
/** Delivery log ids reserved by one fsynced journal line (see reserveLogIds). */
const LOG_ID_BLOCK = 1_000;
/** After a failed compaction (a full disk), the next is tried this much later, not on every write. */
const COMPACT_RETRY_MS = 5_000;

/** What the journal needs from its store to write a snapshot. */
export interface JournalHost {
  /**
   * Runs `fn` when no transaction runs and every journal line written so far is on disk (or
   * rejects when writes are being rolled back); nothing commits until `fn` returns.
   */
  exclusive<T>(fn: () => T): Promise<T>;
  /** The state's snapshot document, naming `gen` as the first generation it does not contain. */
  snapshot(gen: number): string;
  /** Told of a failed append, before its promise rejects (the store rolls back what is not on disk). */
  onError(error: unknown): void;
}

export interface JournalOptions {
  ops: FileOps;
  /** See COMPACT_AFTER_BYTES. */
  compactAfterBytes?: number;
}

export class Journal {
  readonly #paths: DataLayout;
  readonly #snapshotFile: SnapshotFile;
  readonly #host: JournalHost;
  readonly #ops: FileOps;
  readonly #compactAfter: number;
  #log: AppendLog;
  #gen: number;
  #seq: number;
  #bytes = 0;
  #snapshotBytes: number;
  #compacting: Promise<void> | null = null;
  #compactFailedAt = 0;
  #closed = false;
  /** Delivery log ids up to this one are reserved on disk (in the current generation). */
  #logIdsReserved = 0;
  #logIdsSaved: Promise<void> = Promise.resolve();

  /**
   * Continues the journal at generation `gen` after line `seq` (as `replayJournals` found it).
   * @example
   * const journal = new Journal(paths, snapshotFile, { gen, seq, snapshotBytes }, host, { ops });
   * await journal.append([{ t: 'counter', k: 'users', v: 1 }], true);
   */
  constructor(
    paths: DataLayout,
    snapshotFile: SnapshotFile,
    at: { gen: number; seq: number; snapshotBytes: number },
    host: JournalHost,
    options: JournalOptions,
  ) {
    this.#paths = paths;
    this.#snapshotFile = snapshotFile;
    this.#host = host;
    this.#ops = options.ops;
    this.#compactAfter = options.compactAfterBytes ?? COMPACT_AFTER_BYTES;
    this.#gen = at.gen;
    this.#seq = at.seq;
    this.#snapshotBytes = at.snapshotBytes;
    this.#log = this.#open(at.gen);
  }

  /**
   * Appends one line of `ops`; resolves once it is written, and fsynced when `durable`. Lines
   * are written in the order of the calls; a failed write fails the lines queued behind it.
   */
  append(ops: Op[], durable: boolean): Promise<void> {
    const text = JSON.stringify({ s: ++this.#seq, o: ops } satisfies JournalLine);
    this.#bytes += text.length + 1;
    return this.#log.append(text, durable);
  }

  /** Resolves when every append requested so far has finished (successfully or not). */
  idle(): Promise<void> {
    return this.#log.idle();
  }

  /**
   * Reserves `count` delivery log ids from `counters.delivery_log`. Entries are announced once
   * written, without fsync: their ids are reserved a block ahead in a fsynced line, so after a
   * crash no announced id is used again. `saved` resolves once the ids are reserved on disk.
   * @example
   * const { first, saved } = journal.reserveLogIds(state.counters, entries.length);
   * await saved;
   */
  reserveLogIds(counters: Record<string, number>, count: number): { first: number; saved: Promise<void> } {
    const first = (counters.delivery_log ?? 0) + 1;
    const last = first + count - 1;
    counters.delivery_log = last;
    if (last > this.#logIdsReserved) {
      const mark = last + LOG_ID_BLOCK;
      this.#logIdsReserved = mark;
      this.#logIdsSaved = this.append([{ t: 'counter', k: 'delivery_log', v: mark }], true);
      this.#logIdsSaved.catch(() => {
        // Not reserved: the next append tries again.
        if (this.#logIdsReserved === mark) this.#logIdsReserved = 0;
      });
    }
    return { first, saved: this.#logIdsSaved };
  }

  /** Starts a compaction in the background when the journal has outgrown its bounds. */
  maybeCompact(): void {
    if (this.#compacting || this.#closed) return;
    if (this.#bytes < Math.max(this.#compactAfter, this.#snapshotBytes)) return;
    if (Date.now() - this.#compactFailedAt < COMPACT_RETRY_MS) return;
    this.#compacting = this.compact()
      .catch(() => {
        this.#compactFailedAt = Date.now();
      })
      .finally(() => (this.#compacting = null));
  }

  /**
   * Writes a snapshot of everything on disk so far and moves on to a new generation; the older
   * journals are removed once the snapshot is durable. Until then they are replayed at open.
   */
  async compact(): Promise<void> {
    const gen = this.#gen + 1;
    const { snapshot, previous } = await this.#host.exclusive(() => {
      const snapshot = this.#host.snapshot(gen);
      const previous = this.#log;
      this.#log = this.#open(gen);
      this.#gen = gen;
      this.#bytes = 0;
      // The snapshot holds the ids used so far; the next ones are reserved in the new generation.
      this.#logIdsReserved = 0;
      return { snapshot, previous };
    });
    await previous.close();
    await this.#snapshotFile.write(snapshot);
    this.#snapshotBytes = snapshot.length;
    for (const name of await readdir(this.#paths.root)) {
      const match = JOURNAL.exec(name);
      if (match && Number(match[1]) < gen) await rm(join(this.#paths.root, name), { force: true });
    }
    await rm(this.#paths.outbox, { force: true });
  }

  /** Waits for a running compaction, folds what the journal holds into the snapshot, and closes. */
  async close(): Promise<void> {
    await this.#compacting;
    if (this.#bytes > 0) await this.compact().catch(() => undefined);
    this.#closed = true;
    await this.#log.close();
  }

  #open(gen: number): AppendLog {
    return new AppendLog(join(this.#paths.root, `journal-${gen}.jsonl`), {
      ops: this.#ops,
      failQueuedOnError: true,
      closeWhenIdle: true,
      onError: (error) => this.#host.onError(error),
    });
  }
}

/**
 * Replays the journals of `root` from generation `fromGen` on onto `state`, in order. A torn
 * last line (a write never acknowledged) is cut off when `repair` (and `warn` told), else
 * ignored; any other bad line is a StoreCorruptError. Answers where the journal continues.
 * @example
 * const { gen, seq } = await replayJournals(paths.root, snapshot.gen, snapshot.state, console.warn, true);
 */
export async function replayJournals(
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

// An append-only JSON-lines file with group commit: appends made in the same turn of the event
// loop, or while one batch is being written and fsynced, join one batch, so a burst costs a few
// writes and fsyncs, and each append resolves only once its line is on disk (when durable).
// A batch is acknowledged only when every byte was written (and fsynced); when a write fails
// part-way, the file is cut back to its last good length before anything else is appended, so
// a torn line is never followed by a good one.
import type { FileHandle } from 'node:fs/promises';
import { DiskWriteError, realFileOps, writeFully, type FileOps } from './file-ops.js';

const noop = (): void => undefined;

interface Batch {
  lines: string[];
  /** Whether any line of the batch must be fsynced before it is acknowledged. */
  durable: boolean;
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export interface AppendLogOptions {
  durable?: boolean;
  mode?: number;
  ops?: FileOps;
  /**
   * When a batch fails, also fail the batch queued behind it (its lines may depend on the
   * failed ones: the store's journal). Default false (independent lines: delivery logs).
   */
  failQueuedOnError?: boolean;
  /** Told at once (before any append's promise rejects) that a batch failed. */
  onError?: (error: unknown) => void;
  /**
   * Close the file whenever no batch waits (the store's journal): an idle daemon then holds no
   * file of the data directory open for writing, so its file system can be remounted read-only
   * or unmounted. Costs an open per batch, small beside the batch's fsync.
   */
  closeWhenIdle?: boolean;
  /**
   * Close the file once no batch has been written for this long (delivery logs, written on
   * every attempt without fsync, where an open per batch would cost more than the write):
   * an idle daemon holds none of them open either.
   */
  closeAfterIdleMs?: number;
}

export class AppendLog {
  #handle: FileHandle | null = null;
  /** Bytes known to be complete on disk (null until the file is opened). */
  #goodLength: number | null = null;
  /** A failed write left bytes past #goodLength that must be cut off first. */
  #torn = false;
  #inFlight: Promise<void> | null = null;
  #next: Batch | null = null;
  #scheduled = false;
  readonly #durable: boolean;
  readonly #mode: number;
  readonly #ops: FileOps;
  readonly #failQueued: boolean;
  readonly #onError: ((error: unknown) => void) | undefined;
  readonly #closeWhenIdle: boolean;
  readonly #closeAfterIdleMs: number | undefined;
  #idleTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly path: string,
    options: AppendLogOptions = {},
  ) {
    this.#durable = options.durable ?? true;
    this.#mode = options.mode ?? 0o600;
    this.#ops = options.ops ?? realFileOps;
    this.#failQueued = options.failQueuedOnError ?? false;
    this.#onError = options.onError;
    this.#closeWhenIdle = options.closeWhenIdle ?? false;
    this.#closeAfterIdleMs = options.closeAfterIdleMs;
  }

  /** `durable` (default: the log's own setting) false: acknowledged once written, without fsync. */
  append(line: string, durable = this.#durable): Promise<void> {
    if (!this.#next) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.#next = { lines: [], durable: false, promise, resolve, reject };
    }
    this.#next.lines.push(line);
    this.#next.durable ||= durable;
    const promise = this.#next.promise;
    if (!this.#inFlight && !this.#scheduled) {
      // Wait for the rest of this turn's appends: one write instead of one per line.
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        if (!this.#inFlight && this.#next) this.#start();
      });
    }
    return promise;
  }

  /**
   * Resolves once the appends requested before the call have finished (successfully or not),
   * not waiting for later ones as `idle` does; null when none is pending. Batches are written in
   * order, so the last one requested stands for all.
   */
  settled(): Promise<void> | null {
    const last = this.#next?.promise ?? this.#inFlight;
    return last ? last.then(noop, noop) : null;
  }

  /** Resolves when every append requested so far has finished (successfully or not). */
  async idle(): Promise<void> {
    while (this.#inFlight || this.#next) {
      await (this.#inFlight ?? this.#next?.promise)?.catch(() => undefined);
    }
  }

  /** Closes the file handle; the next append reopens it (used after the file is replaced). */
  async reopen(): Promise<void> {
    // Re-checked after every wait: an append made meanwhile must not find its handle closed.
    do await this.idle();
    while (this.#inFlight || this.#next);
    const handle = this.#handle;
    this.#handle = null;
    this.#goodLength = null;
    await handle?.close();
  }

  get isOpen(): boolean {
    return this.#handle !== null;
  }

  async close(): Promise<void> {
    if (this.#idleTimer) clearTimeout(this.#idleTimer);
    this.#idleTimer = null;
    await this.reopen();
  }

  /** (Re)starts the idle countdown after a batch; the handle is closed if nothing comes before it ends. */
  #armIdleClose(ms: number): void {
    if (this.#idleTimer) {
      this.#idleTimer.refresh();
      return;
    }
    this.#idleTimer = setTimeout(() => {
      this.#idleTimer = null;
      if (this.#inFlight || this.#next || this.#scheduled || !this.#handle) return;
      const handle = this.#handle;
      this.#handle = null;
      void handle.close().catch(() => undefined);
    }, ms);
    this.#idleTimer.unref();
  }

  #start(): void {
    const batch = this.#next!;
    this.#next = null;
    this.#inFlight = this.#write(batch.lines.join('\n') + '\n', batch.durable)
      .then(batch.resolve, (error) => {
        this.#onError?.(error);
        batch.reject(error);
        if (this.#failQueued && this.#next) {
          const queued = this.#next;
          this.#next = null;
          queued.reject(error);
        }
      })
      .finally(() => {
        this.#inFlight = null;
        if (this.#next) this.#start();
      });
  }

  async #write(text: string, durable: boolean): Promise<void> {
    const ops = this.#ops;
    try {
      if (!this.#handle) {
        this.#handle = await ops.open(this.path, 'a', this.#mode);
        // After a failed write the last good length is known; the file's own may include torn bytes.
        if (!this.#torn || this.#goodLength === null) this.#goodLength = (await this.#handle.stat()).size;
      }
      if (this.#torn) {
        await ops.truncate(this.path, this.#goodLength!);
        this.#torn = false;
      }
      const bytes = Buffer.from(text);
      this.#torn = true;
      await writeFully(ops, this.#handle, bytes);
      if (durable) await ops.sync(this.#handle);
      this.#torn = false;
      this.#goodLength! += bytes.length;
    } catch (error) {
      // The next batch first cuts the file back to #goodLength (retried until it succeeds).
      if (this.#goodLength === null) this.#torn = false;
      else await ops.truncate(this.path, this.#goodLength).then(
        () => (this.#torn = false),
        () => undefined,
      );
      throw error instanceof DiskWriteError ? error : new DiskWriteError(this.path, 'appending to', { cause: error });
    } finally {
      if (this.#closeWhenIdle && !this.#next && this.#handle) {
        const handle = this.#handle;
        this.#handle = null;
        await handle.close().catch(() => undefined);
      } else if (this.#closeAfterIdleMs !== undefined && this.#handle) this.#armIdleClose(this.#closeAfterIdleMs);
    }
  }
}

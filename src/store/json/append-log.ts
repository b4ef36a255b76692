// An append-only JSON-lines file with group commit: appends made in the same turn of the event
// loop, or while one batch is being written and fsynced, join one batch, so a burst costs a few
// writes and fsyncs, and each append resolves only once its line is on disk (when `durable`).
import { writeSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

interface Pending {
  lines: string[];
  /** Whether any line of the batch must be fsynced before it is acknowledged. */
  durable: boolean;
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class AppendLog {
  #handle: FileHandle | null = null;
  #inFlight: Promise<void> | null = null;
  #next: Pending | null = null;
  #scheduled = false;

  constructor(
    readonly path: string,
    private readonly durable = true,
    private readonly mode = 0o600,
  ) {}

  /** `durable` (default: the log's own setting) false: acknowledged once written, without fsync. */
  append(line: string, durable = this.durable): Promise<void> {
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
    await handle?.close();
  }

  /** Whether a file handle is open (the delivery log bounds how many are). */
  get isOpen(): boolean {
    return this.#handle !== null;
  }

  async close(): Promise<void> {
    await this.reopen();
  }

  #start(): void {
    const batch = this.#next!;
    this.#next = null;
    this.#inFlight = this.#write(batch.lines.join('\n') + '\n', batch.durable)
      .then(batch.resolve, batch.reject)
      .finally(() => {
        this.#inFlight = null;
        if (this.#next) this.#start();
      });
  }

  async #write(text: string, durable: boolean): Promise<void> {
    if (!this.#handle) this.#handle = await open(this.path, 'a', this.mode);
    if (durable) {
      await this.#handle.write(text);
      await this.#handle.datasync();
      return;
    }
    // Without fsync the write only reaches the page cache: done in place it costs a few
    // microseconds, several times less than handing it to the thread pool (measured).
    let bytes = Buffer.from(text);
    while (bytes.length > 0) bytes = bytes.subarray(writeSync(this.#handle.fd, bytes));
  }
}

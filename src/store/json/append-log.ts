// An append-only JSON-lines file with group commit: appends made while one batch is being
// written and fsynced join the next batch, so a burst costs a few fsyncs, and each append
// resolves only once its line is on disk (when `durable`).
import { open, type FileHandle } from 'node:fs/promises';

interface Pending {
  lines: string[];
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class AppendLog {
  #handle: FileHandle | null = null;
  #inFlight: Promise<void> | null = null;
  #next: Pending | null = null;

  constructor(
    readonly path: string,
    private readonly durable = true,
    private readonly mode = 0o600,
  ) {}

  append(line: string): Promise<void> {
    if (!this.#next) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.#next = { lines: [], promise, resolve, reject };
    }
    this.#next.lines.push(line);
    const promise = this.#next.promise;
    if (!this.#inFlight) this.#start();
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
    this.#inFlight = this.#write(batch.lines.join('\n') + '\n')
      .then(batch.resolve, batch.reject)
      .finally(() => {
        this.#inFlight = null;
        if (this.#next) this.#start();
      });
  }

  async #write(text: string): Promise<void> {
    if (!this.#handle) this.#handle = await open(this.path, 'a', this.mode);
    await this.#handle.write(text);
    if (this.durable) await this.#handle.datasync();
  }
}

// Atomic, durable, coalesced whole-file writes: temp file + fsync + rename + directory fsync
// (write-file-atomic does the first three). While one write is on its way to disk, every
// further request joins the next write, which serialises the latest state once: 100 parallel
// changes cost at most two rewrites, and each caller resolves only after its change is on disk.
import { open } from 'node:fs/promises';
import { dirname } from 'node:path';
import writeFileAtomic from 'write-file-atomic';

interface Batch {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export type WriteFn = (path: string, content: string, mode: number) => Promise<void>;

/** The default write: atomic replace, then fsync of the directory so the rename itself is durable. */
export const atomicWrite: WriteFn = async (path, content, mode) => {
  await writeFileAtomic(path, content, { mode, fsync: true });
  const dir = await open(dirname(path), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
};

/**
 * @example
 * const writer = new CoalescingWriter('/data/store.json', 0o600);
 * await writer.write(() => JSON.stringify(state)); // resolves once on disk
 */
export class CoalescingWriter {
  #inFlight: Promise<void> | null = null;
  #next: Batch | null = null;
  #produce: (() => string) | null = null;

  constructor(
    readonly path: string,
    readonly mode = 0o600,
    private readonly writeFn: WriteFn = atomicWrite,
  ) {}

  /** Schedules a write of what `produce` returns when the write starts. */
  write(produce: () => string): Promise<void> {
    this.#produce = produce;
    if (!this.#next) {
      let resolve!: () => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      this.#next = { promise, resolve, reject };
      if (!this.#inFlight) this.#start();
      return promise;
    }
    return this.#next.promise;
  }

  /** Resolves when every write requested so far has finished (successfully or not). */
  async idle(): Promise<void> {
    while (this.#inFlight || this.#next) {
      await (this.#next?.promise ?? this.#inFlight)?.catch(() => undefined);
    }
  }

  #start(): void {
    const batch = this.#next!;
    this.#next = null;
    let content: string;
    try {
      content = this.#produce!();
    } catch (error) {
      batch.reject(error);
      return;
    }
    this.#inFlight = this.writeFn(this.path, content, this.mode)
      .then(batch.resolve, batch.reject)
      .finally(() => {
        this.#inFlight = null;
        if (this.#next) this.#start();
      });
  }
}

// Writes finished attempts: everything that finishes in one turn of the event loop goes into one
// `outbox.record` (the log entries and outcomes together), one batch at a time. An outcome is
// accepted only from the lease holder; one that is not recorded (the store is down) leaves
// its delivery leased until the lease ends, and it is attempted again then (receivers
// deduplicate by X-Webhook-Delivery).
import type { DeliveryOutcome, Store } from '../../store/store.js';
import type { DeliveryLogEntry } from '../../store/types.js';
import type { NewLogEntry } from './attempt-runner.js';

interface Pending {
  outcome: DeliveryOutcome;
  entry: NewLogEntry | null;
  recorded: () => void;
  failed: (error: Error) => void;
}

export interface RecorderOptions {
  store: Store;
  /** The lease owner the outcomes are recorded under. */
  owner: string;
  /** Told of each batch written: the entries with their ids. */
  written: (entries: DeliveryLogEntry[]) => void;
  /** Told of a batch that could not be written. */
  failedBatch: (error: unknown, size: number) => void;
}

export class Recorder {
  readonly #options: RecorderOptions;
  #queue: Pending[] = [];
  #scheduled = false;
  #writing: Promise<void> | null = null;

  constructor(options: RecorderOptions) {
    this.#options = options;
  }

  /** Queues an outcome (and its log entry) for the next batch; resolves once written, rejects if it was not. */
  record(outcome: DeliveryOutcome, entry: NewLogEntry | null): Promise<void> {
    return new Promise((recorded, failed) => {
      this.#queue.push({ outcome, entry, recorded, failed });
      if (this.#scheduled) return;
      this.#scheduled = true;
      setImmediate(() => {
        this.#scheduled = false;
        void this.flush();
      });
    });
  }

  /** Writes what is queued, after the batch being written; resolves once nothing is queued. */
  async flush(): Promise<void> {
    while (this.#writing) await this.#writing;
    if (this.#queue.length === 0) return;
    const batch = this.#queue;
    this.#queue = [];
    this.#writing = this.#write(batch);
    try {
      await this.#writing;
    } finally {
      this.#writing = null;
    }
    if (this.#queue.length) await this.flush();
  }

  async #write(batch: Pending[]): Promise<void> {
    const { store, owner } = this.#options;
    const entries = batch.flatMap((item) => (item.entry ? [item.entry] : []));
    let logged: DeliveryLogEntry[];
    try {
      logged = await store.outbox.record(
        owner,
        batch.map((item) => item.outcome),
        entries,
      );
    } catch (error) {
      this.#options.failedBatch(error, batch.length);
      for (const item of batch) item.failed(error as Error);
      return;
    }
    for (const item of batch) item.recorded();
    this.#options.written(logged);
  }
}

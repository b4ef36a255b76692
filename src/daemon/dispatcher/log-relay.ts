// Passes delivery log entries (any daemon's) to those in this daemon who wait for them: the
// streams and `watch` (onEntry, with the endpoint's owner for filtering), the CLI's listen
// sessions through them, and the routes waiting for a delivery's first attempt (firstAttempt).
// Entries arrive twice for this daemon's own attempts: from its recorder at once and from the
// change feed (`logged` ids, read with `deliveryLog.getMany` only when someone listens); each is
// passed on once, in the order it first arrived.
import type { Store } from '../../store/store.js';
import type { DeliveryLogEntry } from '../../store/types.js';
import { FIRST_ATTEMPT_WAIT_MS } from '../../shared/webhook-protocol.js';

/** A log entry with its endpoint's owner (null when the endpoint is gone). */
export type EntryListener = (entry: DeliveryLogEntry, ownerId: number | null) => void;

/** Raised to a caller waiting for an attempt that will not be made (or logged). */
export class DeliveryNotAttempted extends Error {
  constructor(
    readonly reason: 'stopping' | 'endpoint gone' | 'not logged' | 'no answer',
    message: string,
  ) {
    super(message);
  }
}

interface Waiter {
  resolve: (entry: DeliveryLogEntry) => void;
  reject: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** Ids remembered as passed on (own entries come twice); older ones are forgotten past this. */
const TOLD_MOST = 5_000;
/** Endpoint owners remembered for stream filtering (dropped on any webhooks change). */
const OWNERS_MOST = 10_000;

export class LogRelay {
  readonly #store: Store;
  readonly #failed: (error: unknown, message: string) => void;
  readonly #listeners = new Set<EntryListener>();
  readonly #waiters = new Map<string, Waiter>();
  readonly #told = new Set<number>();
  readonly #owners = new Map<number, number | null>();
  /** Entries are passed on in the order they arrived. */
  #chain: Promise<void> = Promise.resolve();

  constructor(store: Store, failed: (error: unknown, message: string) => void) {
    this.#store = store;
    this.#failed = failed;
  }

  /** Entries announced by the change feed: read only when someone waits or listens. */
  announced(ids: readonly number[]): void {
    if (this.#waiters.size === 0 && this.#listeners.size === 0) return;
    const fresh = ids.filter((id) => !this.#told.has(id));
    if (fresh.length === 0) return;
    this.#chain = this.#chain
      .then(async () => {
        for (const entry of await this.#store.deliveryLog.getMany(fresh)) this.#pass(entry);
      })
      .catch((error) => this.#failed(error, 'could not read new delivery log entries'));
  }

  /** This daemon's own entries, recorded: passed on at once (a shared database's notification may come later). */
  written(entries: readonly DeliveryLogEntry[]): void {
    for (const entry of entries) this.#pass(entry);
  }

  /** An endpoint changed: its owner is read again. */
  endpointsChanged(): void {
    this.#owners.clear();
  }

  /** Resolves with the first attempt's entry of `deliveryId` (see Dispatcher.firstAttempt). */
  firstAttempt(deliveryId: string): Promise<DeliveryLogEntry> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          this.settle(
            deliveryId,
            new DeliveryNotAttempted('no answer', `the delivery is queued, but its first attempt was not logged within ${FIRST_ATTEMPT_WAIT_MS / 1000} s`),
          ),
        FIRST_ATTEMPT_WAIT_MS,
      );
      timer.unref();
      this.#waiters.set(deliveryId, { resolve, reject, timer });
    });
  }

  /** Stops waiting for `deliveryId` without an answer. */
  forget(deliveryId: string): void {
    const waiter = this.#waiters.get(deliveryId);
    if (waiter) clearTimeout(waiter.timer);
    this.#waiters.delete(deliveryId);
  }

  /** Answers the waiter of `deliveryId` with its entry or an error. */
  settle(deliveryId: string, outcome: DeliveryLogEntry | Error): void {
    const waiter = this.#waiters.get(deliveryId);
    if (!waiter) return;
    this.forget(deliveryId);
    if (outcome instanceof Error) waiter.reject(outcome);
    else waiter.resolve(outcome);
  }

  /** The deliveries someone waits for. */
  waiting(): string[] {
    return [...this.#waiters.keys()];
  }

  onEntry(listener: EntryListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Entries newer than `entryId`, oldest first, with their owners (a reconnecting stream). */
  async entriesSince(entryId: number, limit: number): Promise<Array<{ entry: DeliveryLogEntry; ownerId: number | null }>> {
    const entries = await this.#store.deliveryLog.since(entryId, limit);
    const out = [];
    for (const entry of entries) out.push({ entry, ownerId: await this.#ownerOf(entry.endpoint_id) });
    return out;
  }

  /** Resolves once every entry that arrived so far has been passed on. */
  idle(): Promise<void> {
    return this.#chain;
  }

  #pass(entry: DeliveryLogEntry): void {
    // Nobody to tell: nothing to remember either (an entry that comes again once someone
    // listens is told then, once).
    if (this.#waiters.size === 0 && this.#listeners.size === 0) return;
    if (this.#told.has(entry.id)) return;
    this.#told.add(entry.id);
    if (this.#told.size > TOLD_MOST) for (const id of [...this.#told].slice(0, TOLD_MOST / 2)) this.#told.delete(id);
    if (entry.attempt === 1) this.settle(entry.delivery_id, entry);
    if (this.#listeners.size === 0) return;
    this.#chain = this.#chain
      .then(async () => {
        const ownerId = await this.#ownerOf(entry.endpoint_id);
        for (const listener of this.#listeners) {
          try {
            listener(entry, ownerId);
          } catch (error) {
            this.#failed(error, 'delivery listener failed');
          }
        }
      })
      .catch((error) => this.#failed(error, 'could not look up the owner of a delivery log entry'));
  }

  async #ownerOf(endpointId: number): Promise<number | null> {
    const known = this.#owners.get(endpointId);
    if (known !== undefined) return known;
    const endpoint = await this.#store.webhooks.get(endpointId);
    const ownerId = endpoint?.user_id ?? null;
    if (this.#owners.size >= OWNERS_MOST) this.#owners.clear();
    this.#owners.set(endpointId, ownerId);
    return ownerId;
  }
}

// Coalesces request-window hits of one key: while a statement counting hits of the key is in
// flight, further hits wait, and the next statement counts all of them at once. Every request of
// a user hits that user's one row, so under load this turns many round trips into one while the
// count stays exact and shared (the database still counts every hit, nothing is held back).
import type { LimiterRecord } from '../types.js';

/** Counts `hits` hits of `key` at `now` in one statement and answers the row after them. */
export type CountHits = (key: string, windowMs: number, now: number, hits: number) => Promise<LimiterRecord>;

interface Waiter {
  now: number;
  resolve(record: LimiterRecord): void;
  reject(error: unknown): void;
}

export class HitBatcher {
  /** Per key (and window length) with a statement in flight: the hits waiting for the next one. */
  readonly #waiting = new Map<string, Waiter[]>();

  constructor(private readonly count: CountHits) {}

  /**
   * Counts one hit and answers the state right after it: of N hits counted together, the first
   * to arrive is answered count C-N+1 and the last C, as if they had gone one by one.
   * @example
   * const batcher = new HitBatcher((key, windowMs, now, hits) => upsert(key, windowMs, now, hits));
   * const { count } = await batcher.hit('rl:user:7', 60_000, Date.now());
   */
  hit(key: string, windowMs: number, now: number): Promise<LimiterRecord> {
    return new Promise((resolve, reject) => {
      const waiter = { now, resolve, reject };
      const id = `${windowMs}:${key}`;
      const waiting = this.#waiting.get(id);
      if (waiting) waiting.push(waiter);
      else this.#send(id, key, windowMs, [waiter]);
    });
  }

  #send(id: string, key: string, windowMs: number, batch: Waiter[]): void {
    this.#waiting.set(id, []);
    // The hits are counted when the statement runs: at the latest of their times, so a window
    // that ended while they waited starts afresh with them rather than taking them as its last.
    const now = batch.reduce((latest, w) => Math.max(latest, w.now), -Infinity);
    this.count(key, windowMs, now, batch.length)
      .then(
        (record) => batch.forEach((w, i) => w.resolve({ ...record, count: record.count - batch.length + 1 + i })),
        (error: unknown) => batch.forEach((w) => w.reject(error)),
      )
      .finally(() => {
        const next = this.#waiting.get(id)!;
        if (next.length === 0) this.#waiting.delete(id);
        else this.#send(id, key, windowMs, next);
      });
  }
}

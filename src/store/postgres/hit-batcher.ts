// Coalesces request-window hits of one key: while a statement counting hits of the key is in
// flight, further hits wait, and the next statement counts all of them at once. Every request of
// a user hits that user's one row, so under load this turns many round trips into one while the
// count stays exact and shared (the database still counts every hit, nothing is held back).
import type { LimiterRecord } from '../types.js';
import { KeyedBatcher } from './batcher.js';

/** Counts `hits` hits of `key` at `now` in one statement and answers the row after them. */
export type CountHits = (key: string, windowMs: number, now: number, hits: number) => Promise<LimiterRecord>;

interface Hit {
  key: string;
  windowMs: number;
  now: number;
}

export class HitBatcher {
  /** Keyed by window length and key: hits of one key in windows of different lengths are apart. */
  readonly #batches: KeyedBatcher<Hit, LimiterRecord>;

  constructor(count: CountHits) {
    this.#batches = new KeyedBatcher(async (_id, hits) => {
      const { key, windowMs } = hits[0];
      // The hits are counted when the statement runs: at the latest of their times, so a window
      // that ended while they waited starts afresh with them rather than taking them as its last.
      const now = hits.reduce((latest, hit) => Math.max(latest, hit.now), -Infinity);
      const record = await count(key, windowMs, now, hits.length);
      // Of N hits counted together, the first to arrive is answered count C-N+1 and the last C.
      return hits.map((_, i) => ({ ...record, count: record.count - hits.length + 1 + i }));
    });
  }

  /**
   * Counts one hit and answers the state right after it, as if the hits had gone one by one.
   * @example
   * const batcher = new HitBatcher((key, windowMs, now, hits) => upsert(key, windowMs, now, hits));
   * const { count } = await batcher.hit('rl:user:7', 60_000, Date.now());
   */
  hit(key: string, windowMs: number, now: number): Promise<LimiterRecord> {
    return this.#batches.run(`${windowMs}:${key}`, { key, windowMs, now });
  }
}

// Coalesces request-window hits: while a statement counting hits is in flight, further hits (of
// any key) wait, and the next statement counts all of them at once, several per key and several
// keys per statement. Every request of a user hits that user's one row, and every user's hits go
// together, so under load this turns many round trips into one while the counts stay exact and
// shared (the database still counts every hit, nothing is held back).
// Statements may also be spaced (`spacingMs`): a statement goes out no sooner than that after the
// previous one went out. Under a steady stream of requests the database then counts them in at
// most one statement per spacing rather than one per round trip (each statement a commit and a
// wake-up of the server, whose CPU the requests share); a hit after a quiet spell goes at once.
import type { LimiterRecord } from '../types.js';

/** Hits of one key counted together: `hits` of them, at `now`. */
export interface KeyHits {
  key: string;
  now: number;
  hits: number;
}

/** Counts the hits of several keys (each once in `batch`) in windows of `windowMs` in one statement; answers each key's row after them. */
export type CountHits = (windowMs: number, batch: KeyHits[]) => Promise<Map<string, LimiterRecord>>;

interface Hit {
  key: string;
  windowMs: number;
  now: number;
  resolve(record: LimiterRecord): void;
  reject(error: unknown): void;
}

export class HitBatcher {
  #waiting: Hit[] = [];
  #inFlight = false;
  /** When the last statement went out (performance.now()), and the timer of the next one held back. */
  #sentAt = -Infinity;
  #held: NodeJS.Timeout | null = null;
  /** The statement out now, settled (never rejected) once its hits are answered. */
  #current: Promise<void> | null = null;

  /** `spacingMs`: the least time between two statements going out (0: each goes as the previous is answered). */
  constructor(
    private readonly count: CountHits,
    private readonly spacingMs = 0,
  ) {}

  /**
   * Counts one hit and answers the state right after it, as if the hits had gone one by one.
   * @example
   * const batcher = new HitBatcher((windowMs, batch) => upsert(windowMs, batch));
   * const { count } = await batcher.hit('rl:user:7', 60_000, Date.now());
   */
  hit(key: string, windowMs: number, now: number): Promise<LimiterRecord> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ key, windowMs, now, resolve, reject });
      this.#send();
    });
  }

  /** Sends the hits held back now, and resolves once every hit made so far is answered. */
  async flush(): Promise<void> {
    for (;;) {
      if (this.#held) {
        clearTimeout(this.#held);
        this.#held = null;
      }
      if (this.#current) {
        await this.#current;
        continue;
      }
      if (this.#waiting.length === 0) return;
      this.#sentAt = -Infinity;
      this.#send();
    }
  }

  #send(): void {
    if (this.#inFlight || this.#held || this.#waiting.length === 0) return;
    const early = this.#sentAt + this.spacingMs - performance.now();
    if (early > 0) {
      this.#held = setTimeout(() => {
        this.#held = null;
        this.#send();
      }, early);
      return;
    }
    this.#sentAt = performance.now();
    // One window length per statement (the request limits use one); hits of another wait for the next.
    const windowMs = this.#waiting[0].windowMs;
    const batch = this.#waiting.filter((hit) => hit.windowMs === windowMs);
    this.#waiting = this.#waiting.filter((hit) => hit.windowMs !== windowMs);
    const byKey = new Map<string, Hit[]>();
    for (const hit of batch) {
      const hits = byKey.get(hit.key);
      if (hits) hits.push(hit);
      else byKey.set(hit.key, [hit]);
    }
    // A key's hits are counted when the statement runs: at the latest of their times, so a window
    // that ended while they waited starts afresh with them rather than taking them as its last.
    const keys = [...byKey].map(([key, hits]) => ({ key, now: hits.reduce((latest, hit) => Math.max(latest, hit.now), -Infinity), hits: hits.length }));
    this.#inFlight = true;
    this.#current = this.count(windowMs, keys)
      .then(
        (records) => {
          for (const [key, hits] of byKey) {
            const record = records.get(key);
            if (!record) {
              for (const hit of hits) hit.reject(new Error(`the hits of ${key} were not counted`));
              continue;
            }
            // Of N hits counted together, the first to arrive is answered count C-N+1 and the last C.
            hits.forEach((hit, i) => hit.resolve({ ...record, count: record.count - hits.length + 1 + i }));
          }
        },
        (error: unknown) => {
          for (const hit of batch) hit.reject(error);
        },
      )
      .finally(() => {
        this.#inFlight = false;
        this.#current = null;
        this.#send();
      });
  }
}

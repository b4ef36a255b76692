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

/** The hits of one key waiting for the next statement: their latest time, and each one's settling functions. */
interface KeyWaiting {
  key: string;
  now: number;
  /** resolve and reject of each hit in arrival order, flat (two entries a hit): no object per hit. */
  settle: Array<((record: LimiterRecord) => void) | ((error: unknown) => void)>;
}

// A hit's promise takes its settling functions through these rather than through a closure of its
// own: every API request makes a hit, and each allocation on that path is collected under load.
let capturedResolve: (record: LimiterRecord) => void = () => undefined;
let capturedReject: (error: unknown) => void = () => undefined;
function capture(resolve: (record: LimiterRecord) => void, reject: (error: unknown) => void): void {
  capturedResolve = resolve;
  capturedReject = reject;
}

export class HitBatcher {
  /** Waiting hits by window length (one statement each), then by key, both in order of first arrival. */
  #waiting = new Map<number, Map<string, KeyWaiting>>();
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
    const promise = new Promise<LimiterRecord>(capture);
    let keys = this.#waiting.get(windowMs);
    if (keys === undefined) this.#waiting.set(windowMs, (keys = new Map()));
    const waiting = keys.get(key);
    if (waiting === undefined) keys.set(key, { key, now, settle: [capturedResolve, capturedReject] });
    else {
      // A key's hits are counted when the statement runs: at the latest of their times, so a window
      // that ended while they waited starts afresh with them rather than taking them as its last.
      if (now > waiting.now) waiting.now = now;
      waiting.settle.push(capturedResolve, capturedReject);
    }
    if (!this.#inFlight && this.#held === null) this.#send();
    return promise;
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
      if (this.#waiting.size === 0) return;
      this.#sentAt = -Infinity;
      this.#send();
    }
  }

  #send(): void {
    if (this.#inFlight || this.#held || this.#waiting.size === 0) return;
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
    const [windowMs, byKey] = this.#waiting.entries().next().value!;
    this.#waiting.delete(windowMs);
    const keys: KeyHits[] = [];
    for (const { key, now, settle } of byKey.values()) keys.push({ key, now, hits: settle.length / 2 });
    this.#inFlight = true;
    this.#current = this.count(windowMs, keys)
      .then(
        (records) => {
          for (const { key, settle } of byKey.values()) {
            const record = records.get(key);
            if (!record) {
              const error = new Error(`the hits of ${key} were not counted`);
              for (let i = 1; i < settle.length; i += 2) (settle[i] as (error: unknown) => void)(error);
              continue;
            }
            // Of N hits counted together, the first to arrive is answered count C-N+1 and the last C.
            const first = record.count - settle.length / 2 + 1;
            for (let i = 0; i < settle.length; i += 2) {
              (settle[i] as (record: LimiterRecord) => void)({ key: record.key, count: first + i / 2, window_start: record.window_start, locked_until: record.locked_until });
            }
          }
        },
        (error: unknown) => {
          for (const { settle } of byKey.values()) for (let i = 1; i < settle.length; i += 2) (settle[i] as (error: unknown) => void)(error);
        },
      )
      .finally(() => {
        this.#inFlight = false;
        this.#current = null;
        this.#send();
      });
  }
}

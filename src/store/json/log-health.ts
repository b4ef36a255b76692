// An endpoint's health summary (LogHealth), kept current as its attempts are appended: counts
// over the log's window (its last `retention` attempts), the newest success and failure, and the
// failed attempts since the newest success. Small whatever the log holds, so it is kept for every
// endpoint read or written since the store opened, while the logs themselves are cached only in part.
import type { HealthAttempt, LogHealth } from '../store.js';
import type { DeliveryLogEntry } from '../types.js';

interface Numbered<T> {
  seq: number;
  value: T;
}

export class HealthWindow {
  /** Attempts seen (the window holds sequence numbers `seen - retention` … `seen - 1`). */
  #seen = 0;
  /** Whether each attempt in the window succeeded, by sequence number modulo the retention. */
  readonly #ok: Uint8Array;
  #successes = 0;
  #lastSuccess: Numbered<Pick<DeliveryLogEntry, 'delivery_id' | 'created_at'>> | null = null;
  #lastFailure: Numbered<NonNullable<LogHealth['last_failure']>> | null = null;
  /** Failed attempts newer than the newest success, oldest first. */
  #failures: Array<Numbered<HealthAttempt>> = [];
  /** The newest attempt that broke the summary's assumptions; while it is in the window, the summary is not given. */
  #irregular = -1;

  constructor(private readonly retention: number) {
    this.#ok = new Uint8Array(retention);
  }

  add(entry: DeliveryLogEntry): void {
    const seq = this.#seen++;
    const slot = seq % this.retention;
    if (seq >= this.retention && this.#ok[slot]) this.#successes--;
    this.#ok[slot] = entry.success ? 1 : 0;
    const { delivery_id, attempt, created_at } = entry;
    // Health reads each delivery by its newest attempt: an older attempt of it with a higher
    // number, or a success followed by another attempt, makes that reading differ from the summary.
    if (this.#failures.some((f) => f.value.delivery_id === delivery_id && f.value.attempt > attempt)) this.#irregular = seq;
    if (entry.success) {
      this.#successes++;
      this.#lastSuccess = { seq, value: { delivery_id, created_at } };
      this.#failures = [];
    } else {
      if (this.#lastSuccess?.value.delivery_id === delivery_id && this.#inWindow(this.#lastSuccess.seq)) this.#irregular = seq;
      this.#failures.push({ seq, value: { delivery_id, attempt, created_at } });
      const { success, reason, status_code, response } = entry;
      this.#lastFailure = { seq, value: { success, created_at, reason: reason ?? null, status_code, response } };
    }
    while (this.#failures.length && !this.#inWindow(this.#failures[0].seq)) this.#failures.shift();
  }

  /** The summary, or null while an irregular attempt is in the window. */
  summary(): LogHealth | null {
    if (this.#irregular >= 0 && this.#inWindow(this.#irregular)) return null;
    const success = this.#lastSuccess && this.#inWindow(this.#lastSuccess.seq) ? this.#lastSuccess.value : null;
    const failure = this.#lastFailure && this.#inWindow(this.#lastFailure.seq) ? this.#lastFailure.value : null;
    const failures: HealthAttempt[] = new Array(this.#failures.length);
    for (let i = 0; i < failures.length; i++) failures[i] = this.#failures[failures.length - 1 - i].value;
    return {
      attempts: Math.min(this.#seen, this.retention),
      successes: this.#successes,
      last_success_at: success?.created_at ?? null,
      last_failure: failure,
      failures,
    };
  }

  #inWindow(seq: number): boolean {
    return seq >= this.#seen - this.retention;
  }
}

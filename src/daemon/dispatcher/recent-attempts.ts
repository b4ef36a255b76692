// This daemon's attempts and failures over the last minute, for `panelctl daemon status` (through
// GET /health's admin detail): sixty one-second buckets, so counting costs an index and an
// addition, metrics on or off.

const SECONDS = 60;

export class RecentAttempts {
  readonly #attempts = new Uint32Array(SECONDS);
  readonly #failures = new Uint32Array(SECONDS);
  /** The second (epoch s) each bucket holds. */
  readonly #second = new Float64Array(SECONDS).fill(-1);

  add(nowMs: number, success: boolean): void {
    const second = Math.floor(nowMs / 1000);
    const i = second % SECONDS;
    if (this.#second[i] !== second) {
      this.#second[i] = second;
      this.#attempts[i] = 0;
      this.#failures[i] = 0;
    }
    this.#attempts[i]++;
    if (!success) this.#failures[i]++;
  }

  /**
   * Attempts and failures in the 60 s up to `nowMs`.
   * @example
   * recent.lastMinute(Date.now()); // { attempts: 12, failures: 1 }
   */
  lastMinute(nowMs: number): { attempts: number; failures: number } {
    const now = Math.floor(nowMs / 1000);
    let attempts = 0;
    let failures = 0;
    for (let i = 0; i < SECONDS; i++) {
      if (this.#second[i] > now - SECONDS && this.#second[i] <= now) {
        attempts += this.#attempts[i];
        failures += this.#failures[i];
      }
    }
    return { attempts, failures };
  }
}

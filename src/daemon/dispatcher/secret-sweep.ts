// Previous signing secrets whose rotation overlap has ended leave the store even when their
// endpoint gets no delivery (a delivery's read of its endpoint drops them too). The claim loop
// turns at least every poll; the sweep runs on its turns once per SWEEP_EVERY_MS of the
// dispatcher's clock, so a secret is gone within that of its expiry (it stops signing at the
// expiry itself: see previousSecret in headers.ts).
import type { Store } from '../../store/store.js';

/** How often (ms of the dispatcher's clock) expired previous secrets are swept from the store. */
export const SWEEP_EVERY_MS = 60_000;

export class SecretSweep {
  readonly #store: Store;
  readonly #failed: (error: unknown) => void;
  #nextAt = 0;
  #running = false;

  constructor(store: Store, failed: (error: unknown) => void) {
    this.#store = store;
    this.#failed = failed;
  }

  /** Sweeps when one is due (one at a time; a failed one is tried again at the next due time). */
  tick(now: number): void {
    if (this.#running || now < this.#nextAt) return;
    this.#nextAt = now + SWEEP_EVERY_MS;
    this.#running = true;
    this.#store.webhooks
      .forgetExpiredSecrets(new Date(now).toISOString())
      .catch(this.#failed)
      .finally(() => {
        this.#running = false;
      });
  }
}

// A store that is down fails every request and every dispatcher turn; the log says so once per
// interval, with how many more failures it kept quiet about, instead of a stack per failure.
import { StoreUnavailableError } from '../store/store.js';

/** How often at most the same failure is logged again while it lasts. */
export const UNAVAILABLE_LOG_INTERVAL_MS = 10_000;

export type Warn = (details: object, message: string) => void;

/**
 * Passes one failure per interval to `warn`, as one line: the driver's reason (no stack) and
 * the number of failures since the last line.
 * @example
 * const unavailable = new UnavailableLog();
 * unavailable.note(error, 'the store is unavailable: requests are answered 503', (details, msg) => request.log.warn(details, msg));
 */
export class UnavailableLog {
  #last = Number.NEGATIVE_INFINITY;
  #suppressed = 0;

  constructor(
    private readonly intervalMs = UNAVAILABLE_LOG_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  note(error: unknown, message: string, warn: Warn): void {
    const now = this.now();
    if (now - this.#last < this.intervalMs) {
      this.#suppressed++;
      return;
    }
    this.#last = now;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    warn({ reason: reasonOf(error), suppressed }, message);
  }
}

/** The innermost message (the driver's: "connect ECONNREFUSED …", "canceling statement due to lock timeout"), with its code. */
export function reasonOf(error: unknown): string {
  let inner = error as { cause?: unknown; message?: unknown; code?: unknown } | undefined;
  while (inner && typeof inner === 'object' && inner.cause && typeof inner.cause === 'object') inner = inner.cause as typeof inner;
  const message = typeof inner?.message === 'string' && inner.message ? inner.message : String(error);
  return typeof inner?.code === 'string' ? `${message} (${inner.code})` : message;
}

export function isUnavailable(error: unknown): error is StoreUnavailableError {
  return error instanceof StoreUnavailableError;
}

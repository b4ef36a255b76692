// Vacuums the queue tables (the outbox and the delivery log) after every few thousand rows they
// turn over. Every delivery is a row inserted and deleted, and every attempt a log row inserted
// and, a hundred attempts later, deleted; autovacuum visits a database at most once a minute (the
// server's naptime, which a daemon cannot set), and until it comes each claim walks the index
// entries of every delivery made since, which lie at the head of each endpoint's due order. Under
// a steady load that made the server's CPU per delivery grow threefold within a minute; a vacuum
// of the two tables while they are small costs a few tens of milliseconds.

/**
 * Rows of the queue tables turned over (deliveries settled, log entries kept) before a vacuum,
 * and the time from the end of one vacuum to the start of the next at least. Against 4,000 rows
 * and 1 s, these cost the server no more CPU per delivery and dispatched a little faster.
 */
export const QUEUE_VACUUM_ROWS = 10_000;
export const QUEUE_VACUUM_GAP_MS = 2000;

export interface QueueVacuumOptions {
  rows?: number;
  gapMs?: number;
  now?: () => number;
}

/**
 * Counts the rows the queue tables turn over in this process and runs `vacuum` once enough have,
 * one at a time, at most once per gap. A failed vacuum is dropped (autovacuum still comes); the
 * rows it should have covered count toward the next.
 * @example
 * const vacuum = new QueueVacuum(() => pool.query('VACUUM (SKIP_LOCKED) deliveries, delivery_log'));
 * vacuum.turnedOver(settled.length + logged.length);
 */
export class QueueVacuum {
  readonly #rows: number;
  readonly #gapMs: number;
  readonly #now: () => number;
  #turnedOver = 0;
  #lastEnded = Number.NEGATIVE_INFINITY;
  #running: Promise<void> | null = null;
  #stopped = false;

  constructor(
    private readonly vacuum: () => Promise<unknown>,
    options: QueueVacuumOptions = {},
  ) {
    this.#rows = options.rows ?? QUEUE_VACUUM_ROWS;
    this.#gapMs = options.gapMs ?? QUEUE_VACUUM_GAP_MS;
    this.#now = options.now ?? Date.now;
  }

  /** Notes `rows` rows turned over; starts a vacuum when they reach the threshold. */
  turnedOver(rows: number): void {
    this.#turnedOver += rows;
    if (this.#stopped || this.#running || this.#turnedOver < this.#rows) return;
    if (this.#now() - this.#lastEnded < this.#gapMs) return;
    const covered = this.#turnedOver;
    this.#turnedOver = 0;
    this.#running = Promise.resolve()
      .then(() => this.vacuum())
      .then(
        () => undefined,
        () => {
          this.#turnedOver += covered;
        },
      )
      .finally(() => {
        this.#lastEnded = this.#now();
        this.#running = null;
      });
  }

  /** Starts no further vacuum and waits for one in flight. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }
}

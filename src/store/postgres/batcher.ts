// Runs requests of one kind together when they come faster than the database answers them:
// up to `lanes` statements are in flight, a request arriving while all lanes are busy waits,
// and the next statement to go takes every request waiting. A request alone is sent at once,
// so an idle daemon pays no delay; a busy one makes one round trip and one commit for many.

/** Runs `items` as one statement; answers one result per item, in order. */
export type RunBatch<I, O> = (items: I[]) => Promise<O[]>;

interface Waiter<I, O> {
  item: I;
  resolve(result: O): void;
  reject(error: unknown): void;
}

export class Batcher<I, O> {
  readonly #waiting: Waiter<I, O>[] = [];
  #inFlight = 0;

  /**
   * @param runBatch the statement for a batch; a failure fails every request of that batch.
   * @param lanes statements in flight at most.
   * @param most requests in one statement at most.
   * @example
   * const publishes = new Batcher((events) => insertAll(events), 2, 64);
   * const queued = await publishes.run(event);
   */
  constructor(
    private readonly runBatch: RunBatch<I, O>,
    private readonly lanes: number,
    private readonly most: number,
  ) {}

  run(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
      this.#send();
    });
  }

  #send(): void {
    while (this.#inFlight < this.lanes && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.most);
      this.#inFlight++;
      this.runBatch(batch.map((w) => w.item))
        .then(
          (results) => batch.forEach((w, i) => w.resolve(results[i])),
          (error: unknown) => batch.forEach((w) => w.reject(error)),
        )
        .finally(() => {
          this.#inFlight--;
          this.#send();
        });
    }
  }
}

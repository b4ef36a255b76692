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

/** Runs the requests of one key as one statement; answers one result per request, in order. */
export type RunKeyBatch<I, O> = (key: string, items: I[]) => Promise<O[]>;

/**
 * Requests of one key, one statement per key in flight: a request arriving while its key's
 * statement is in flight waits for the next one, which starts after it arrived and takes every
 * request waiting. So an answer never comes from a statement that began before its request
 * (a read sees every write committed before the request came), and a burst of one key costs
 * two statements, not one each.
 */
export class KeyedBatcher<I, O> {
  /** Per key with a statement in flight: the requests waiting for the next one. */
  readonly #waiting = new Map<string, Waiter<I, O>[]>();

  /**
   * @example
   * const callers = new KeyedBatcher((hash, requests) => readCaller(hash).then((row) => requests.map(() => row)));
   * const row = await callers.run(hash, null);
   */
  constructor(private readonly runBatch: RunKeyBatch<I, O>) {}

  run(key: string, item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      const waiter = { item, resolve, reject };
      const waiting = this.#waiting.get(key);
      if (waiting) waiting.push(waiter);
      else this.#send(key, [waiter]);
    });
  }

  #send(key: string, batch: Waiter<I, O>[]): void {
    this.#waiting.set(key, []);
    this.runBatch(key, batch.map((w) => w.item))
      .then(
        (results) => batch.forEach((w, i) => w.resolve(results[i])),
        (error: unknown) => batch.forEach((w) => w.reject(error)),
      )
      .finally(() => {
        const next = this.#waiting.get(key)!;
        if (next.length === 0) this.#waiting.delete(key);
        else this.#send(key, next);
      });
  }
}

// Runs async work one at a time per key, so read-modify-write of a counter is never interleaved
// (two concurrent requests would otherwise both read 3 and both write 4).
export class KeyedLock {
  readonly #tails = new Map<string, Promise<unknown>>();

  /**
   * @example
   * await lock.run(`lock:${ip}`, async () => { const r = await get(); await put({ ...r, count: r.count + 1 }); });
   */
  run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    const result = previous.then(work, work);
    const tail = result.catch(() => undefined);
    this.#tails.set(key, tail);
    void tail.then(() => {
      if (this.#tails.get(key) === tail) this.#tails.delete(key);
    });
    return result;
  }
}

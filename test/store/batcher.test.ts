// The PostgreSQL store's batching of publishes (Batcher), against a statement that stands for
// the database: how many statements a burst costs, and that each request gets its own answer.
import { describe, expect, it } from 'vitest';
import { Batcher, KeyedBatcher } from '../../src/store/postgres/batcher.js';

/** A statement answering each item doubled after a few milliseconds; records each batch. */
function fakeStatement() {
  const batches: number[][] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  let fail: Error | null = null;
  const run = async (items: number[]): Promise<number[]> => {
    batches.push(items);
    mostInFlight = Math.max(mostInFlight, ++inFlight);
    await new Promise((resolve) => setTimeout(resolve, 5));
    inFlight--;
    if (fail) throw fail;
    return items.map((n) => n * 2);
  };
  return { batches, run, mostInFlight: () => mostInFlight, failWith: (error: Error | null) => (fail = error) };
}

describe('Batcher', () => {
  it('sends a request alone at once while a lane is free', async () => {
    const db = fakeStatement();
    const batcher = new Batcher(db.run, 2, 64);
    expect(await batcher.run(1)).toBe(2);
    expect(await batcher.run(2)).toBe(4);
    expect(db.batches).toEqual([[1], [2]]);
  });

  it('runs 100 concurrent requests in few statements, at most `lanes` at once, each answered its own result', async () => {
    const db = fakeStatement();
    const batcher = new Batcher(db.run, 2, 64);
    const items = Array.from({ length: 100 }, (_, i) => i);
    expect(await Promise.all(items.map((i) => batcher.run(i)))).toEqual(items.map((i) => i * 2));
    // The first two go alone (both lanes free); the rest wait and go together, 64 at most.
    expect(db.batches.map((b) => b.length)).toEqual([1, 1, 64, 34]);
    expect(db.batches.flat()).toEqual(items);
    expect(db.mostInFlight()).toBe(2);
  });

  it('fails every request of a failed statement, and sends later ones afresh', async () => {
    const db = fakeStatement();
    const batcher = new Batcher(db.run, 1, 64);
    db.failWith(new Error('connection lost'));
    const results = await Promise.allSettled([batcher.run(1), batcher.run(2), batcher.run(3)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    db.failWith(null);
    expect(await batcher.run(4)).toBe(8);
  });
});

describe('KeyedBatcher', () => {
  it('answers a request that came while its key was being read from a read begun after it came', async () => {
    let value = 'before';
    const reads: Array<{ key: string; finish(): void }> = [];
    const batcher = new KeyedBatcher<null, string>(async (key, requests) => {
      const seen = value;
      await new Promise<void>((resolve) => reads.push({ key, finish: resolve }));
      return requests.map(() => seen);
    });
    const first = batcher.run('k', null);
    // The write lands while the first read is in flight; the requests after it must see it.
    value = 'after';
    const later = [batcher.run('k', null), batcher.run('k', null)];
    const other = batcher.run('other', null);
    expect(reads.map((r) => r.key)).toEqual(['k', 'other']);
    reads[0].finish();
    reads[1].finish();
    expect(await first).toBe('before');
    expect(await other).toBe('after');
    // The two later requests of 'k' share one read, begun once the first ended.
    await new Promise((resolve) => setImmediate(resolve));
    expect(reads.map((r) => r.key)).toEqual(['k', 'other', 'k']);
    reads[2].finish();
    expect(await Promise.all(later)).toEqual(['after', 'after']);
  });
});

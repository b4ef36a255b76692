// The PostgreSQL store's coalescing of request-window hits, against a counter in memory that
// stands for the database: how many statements a burst costs, and what each hit is answered.
import { describe, expect, it, vi } from 'vitest';
import { HitBatcher, type KeyHits } from '../../src/store/postgres/hit-batcher.js';
import type { LimiterRecord } from '../../src/store/types.js';

/** One row per key, counted the way the SQL does (new window when the old one ended); records each statement. */
function fakeDatabase() {
  const rows = new Map<string, LimiterRecord>();
  /** Per statement, each key's hits counted in it. */
  const batches: KeyHits[][] = [];
  let fail: Error | null = null;
  const count = async (windowMs: number, batch: KeyHits[]): Promise<Map<string, LimiterRecord>> => {
    batches.push(batch);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (fail) throw fail;
    const answer = new Map<string, LimiterRecord>();
    for (const { key, now, hits } of batch) {
      const row = rows.get(key);
      const next = !row || row.window_start + windowMs <= now ? { key, count: hits, window_start: now, locked_until: 0 } : { ...row, count: row.count + hits };
      rows.set(key, next);
      answer.set(key, next);
    }
    return answer;
  };
  return { rows, batches, statements: () => batches.flat(), count, failWith: (error: Error | null) => (fail = error) };
}

describe('HitBatcher', () => {
  it('counts 100 concurrent hits of one key in two statements, answering 1..100 in arrival order', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    const records = await Promise.all(Array.from({ length: 100 }, () => batcher.hit('k', 60_000, 1_000)));
    expect(records.map((r) => r.count)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(db.statements().map((s) => s.hits)).toEqual([1, 99]);
    expect(db.rows.get('k')?.count).toBe(100);
  });

  it("counts several keys' waiting hits in one statement, each key's apart", async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    const first = batcher.hit('a', 60_000, 1_000);
    const waiting = [batcher.hit('a', 60_000, 1_000), batcher.hit('b', 60_000, 1_000), batcher.hit('a', 60_000, 1_000), batcher.hit('c', 60_000, 1_000)];
    expect((await first).count).toBe(1);
    expect((await Promise.all(waiting)).map((r) => [r.key, r.count])).toEqual([
      ['a', 2],
      ['b', 1],
      ['a', 3],
      ['c', 1],
    ]);
    expect(db.batches.map((batch) => batch.map((s) => `${s.key}×${s.hits}`))).toEqual([['a×1'], ['a×2', 'b×1', 'c×1']]);
  });

  it('counts hits in windows of another length in a statement of their own', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    const records = await Promise.all([batcher.hit('a', 60_000, 1_000), batcher.hit('b', 60_000, 1_000), batcher.hit('c', 1_000, 1_000), batcher.hit('d', 60_000, 1_000)]);
    expect(records.map((r) => r.count)).toEqual([1, 1, 1, 1]);
    expect(db.batches.map((batch) => batch.map((s) => s.key))).toEqual([['a'], ['b', 'd'], ['c']]);
  });

  it('counts waiting hits at the latest of their times: a window that ended meanwhile restarts with them', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    const first = batcher.hit('k', 1_000, 1_000);
    const waiting = [batcher.hit('k', 1_000, 1_500), batcher.hit('k', 1_000, 2_100), batcher.hit('k', 1_000, 1_900)];
    expect((await first).count).toBe(1);
    const records = await Promise.all(waiting);
    expect(db.statements()[1]).toEqual({ key: 'k', now: 2_100, hits: 3 });
    expect(records.map((r) => [r.count, r.window_start])).toEqual([
      [1, 2_100],
      [2, 2_100],
      [3, 2_100],
    ]);
  });

  it('rejects every hit of a failed statement, and counts the next ones afresh', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    db.failWith(new Error('connection lost'));
    const failed = await Promise.allSettled(Array.from({ length: 5 }, () => batcher.hit('k', 60_000, 1_000)));
    expect(failed.map((r) => r.status)).toEqual(Array(5).fill('rejected'));
    expect(db.statements()).toHaveLength(2);
    db.failWith(null);
    expect((await batcher.hit('k', 60_000, 1_000)).count).toBe(1);
  });

  it('spaces statements: hits within spacingMs of the last statement going out wait and go together; after a quiet spell one goes at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const db = fakeDatabase();
      const batcher = new HitBatcher(db.count, 100);
      const first = batcher.hit('k', 60_000, 1_000);
      expect(db.batches).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(5);
      expect((await first).count).toBe(1);
      // Answered at 5 ms: the next statement is held until 100 ms after the first went out.
      const held = [batcher.hit('k', 60_000, 1_000), batcher.hit('j', 60_000, 1_000), batcher.hit('k', 60_000, 1_000)];
      await vi.advanceTimersByTimeAsync(90);
      expect(db.batches).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(10);
      expect(db.batches).toHaveLength(2);
      await vi.advanceTimersByTimeAsync(5);
      expect((await Promise.all(held)).map((r) => [r.key, r.count])).toEqual([
        ['k', 2],
        ['j', 1],
        ['k', 3],
      ]);
      expect(db.batches.map((batch) => batch.map((s) => `${s.key}×${s.hits}`))).toEqual([['k×1'], ['k×2', 'j×1']]);
      // Past the spacing since the last statement went out: a hit goes at once.
      await vi.advanceTimersByTimeAsync(100);
      const late = batcher.hit('k', 60_000, 1_000);
      expect(db.batches).toHaveLength(3);
      await vi.advanceTimersByTimeAsync(5);
      expect((await late).count).toBe(4);
    } finally {
      vi.useRealTimers();
    }
  });

  it('sends held hits at once on flush, which resolves once every hit is answered', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count, 60_000);
    expect((await batcher.hit('k', 60_000, 1_000)).count).toBe(1);
    const held = batcher.hit('k', 60_000, 1_000);
    let answered = false;
    void held.then(() => (answered = true));
    expect(db.batches).toHaveLength(1);
    await batcher.flush();
    expect(answered).toBe(true);
    expect((await held).count).toBe(2);
    expect(db.batches).toHaveLength(2);
  });
});

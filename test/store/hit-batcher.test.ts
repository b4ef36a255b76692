// The PostgreSQL store's coalescing of request-window hits, against a counter in memory that
// stands for the database: how many statements a burst costs, and what each hit is answered.
import { describe, expect, it } from 'vitest';
import { HitBatcher } from '../../src/store/postgres/hit-batcher.js';
import type { LimiterRecord } from '../../src/store/types.js';

/** One row per key, counted the way the SQL does (new window when the old one ended); records each statement. */
function fakeDatabase() {
  const rows = new Map<string, LimiterRecord>();
  const statements: { key: string; now: number; hits: number }[] = [];
  let fail: Error | null = null;
  const count = async (key: string, windowMs: number, now: number, hits: number): Promise<LimiterRecord> => {
    statements.push({ key, now, hits });
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (fail) throw fail;
    const row = rows.get(key);
    const next = !row || row.window_start + windowMs <= now ? { key, count: hits, window_start: now, locked_until: 0 } : { ...row, count: row.count + hits };
    rows.set(key, next);
    return next;
  };
  return { rows, statements, count, failWith: (error: Error | null) => (fail = error) };
}

describe('HitBatcher', () => {
  it('counts 100 concurrent hits of one key in two statements, answering 1..100 in arrival order', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    const records = await Promise.all(Array.from({ length: 100 }, () => batcher.hit('k', 60_000, 1_000)));
    expect(records.map((r) => r.count)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(db.statements.map((s) => s.hits)).toEqual([1, 99]);
    expect(db.rows.get('k')?.count).toBe(100);
  });

  it('keeps keys apart: each has its own statement in flight', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    const [a, b] = await Promise.all([batcher.hit('a', 60_000, 1_000), batcher.hit('b', 60_000, 1_000)]);
    expect([a.count, b.count]).toEqual([1, 1]);
    expect(db.statements.map((s) => s.key)).toEqual(['a', 'b']);
  });

  it('counts waiting hits at the latest of their times: a window that ended meanwhile restarts with them', async () => {
    const db = fakeDatabase();
    const batcher = new HitBatcher(db.count);
    const first = batcher.hit('k', 1_000, 1_000);
    const waiting = [batcher.hit('k', 1_000, 1_500), batcher.hit('k', 1_000, 2_100), batcher.hit('k', 1_000, 1_900)];
    expect((await first).count).toBe(1);
    const records = await Promise.all(waiting);
    expect(db.statements[1]).toEqual({ key: 'k', now: 2_100, hits: 3 });
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
    expect(db.statements).toHaveLength(2);
    db.failWith(null);
    expect((await batcher.hit('k', 60_000, 1_000)).count).toBe(1);
  });
});

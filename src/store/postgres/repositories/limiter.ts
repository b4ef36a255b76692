// The limiter's counters (login lockouts and request windows), shared by every daemon.
import type { LimiterRepository } from '../../store.js';
import { HitBatcher, type KeyHits } from '../hit-batcher.js';
import type { RepositoryFactory } from './context.js';
import { toLimiter } from '../rows.js';

/**
 * The least time between two statements counting request-window hits (see HitBatcher): however
 * many requests come, at most a hundred such statements a second. A request that must wait for
 * its count (it reaches the limit, or the daemon has no fresh count) may wait this much longer,
 * and the counts of other daemons' requests reach this one's view this much later.
 */
const SOFT_HIT_SPACING_MS = 10;

export const limiterRepository: RepositoryFactory<LimiterRepository> = (db, ctx) => {
  /**
   * Counts `hits` hits of `key` in one statement, so concurrent hits from any number of daemons
   * each count exactly once. A new window starts when the key is not locked and its window ended
   * or its lock did. Request windows are counted by countSoftHits below, with the same rules.
   */
  const countHits = async (key: string, windowMs: number, now: number, hits: number) => {
    const { rows } = await db.query(
      `INSERT INTO limiter AS l (key, count, window_start, locked_until)
       SELECT $1, $4::int, $3, 0
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN l.locked_until <= $3 AND (l.window_start + $2 <= $3 OR l.locked_until > 0) THEN $4::int ELSE l.count + $4::int END,
         window_start = CASE WHEN l.locked_until <= $3 AND (l.window_start + $2 <= $3 OR l.locked_until > 0) THEN $3 ELSE l.window_start END,
         locked_until = CASE WHEN l.locked_until <= $3 AND (l.window_start + $2 <= $3 OR l.locked_until > 0) THEN 0 ELSE l.locked_until END
       RETURNING *`,
      [key, windowMs, now, hits],
    );
    return toLimiter(rows[0]);
  };
  // Request-window hits (countRequest) outside a transaction are coalesced, every key's in one
  // statement (see HitBatcher), with the rules of countHits per row (`excluded` holds a row's
  // hits and time).
  // In key order, so two daemons' statements lock shared rows in one order. The statement
  // commits without waiting for its WAL flush: a durable commit keeps the rows locked through an
  // fsync, so a user's requests (on every daemon) would go one fsync at a time; a crash forgets
  // at most the last fraction of a second of such hits (the contract allows a second). Inside a
  // transaction a hit commits with it, durably; lockout hits (`hit`) are one durable statement each.
  const countSoftHits = async (windowMs: number, batch: KeyHits[]) => {
    const sorted = [...batch].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const { rows } = await db.query(
      `INSERT INTO limiter AS l (key, count, window_start, locked_until)
       SELECT h.key, h.hits, h.now, 0
       FROM unnest($2::text[], $3::bigint[], $4::int[]) WITH ORDINALITY AS h (key, now, hits, n)
       CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS soft
       ORDER BY h.n
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN l.locked_until <= excluded.window_start AND (l.window_start + $1 <= excluded.window_start OR l.locked_until > 0) THEN excluded.count ELSE l.count + excluded.count END,
         window_start = CASE WHEN l.locked_until <= excluded.window_start AND (l.window_start + $1 <= excluded.window_start OR l.locked_until > 0) THEN excluded.window_start ELSE l.window_start END,
         locked_until = CASE WHEN l.locked_until <= excluded.window_start AND (l.window_start + $1 <= excluded.window_start OR l.locked_until > 0) THEN 0 ELSE l.locked_until END
       RETURNING *`,
      [windowMs, sorted.map((h) => h.key), sorted.map((h) => h.now), sorted.map((h) => h.hits)],
    );
    return new Map(rows.map((row) => [String(row.key), toLimiter(row)]));
  };
  const softHits = db.inTransaction ? null : new HitBatcher(countSoftHits, SOFT_HIT_SPACING_MS);
  if (softHits) ctx.heldHits.add(softHits);
  const limiter: LimiterRepository = {
    async hit(key, windowMs, now) {
      return countHits(key, windowMs, now, 1);
    },
    // Not async: every API request makes one, and an async wrapper adds a promise and two turns.
    countRequest: softHits ? (key, windowMs, now) => softHits.hit(key, windowMs, now) : (key, windowMs, now) => countHits(key, windowMs, now, 1),
    async release(key) {
      await db.query('UPDATE limiter SET count = greatest(count - 1, 0) WHERE key = $1', [key]);
    },
    async lock(key, until) {
      const { rows } = await db.query(
        `INSERT INTO limiter AS l (key, count, window_start, locked_until)
         VALUES ($1, 0, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, $2)
         ON CONFLICT (key) DO UPDATE SET locked_until = greatest(l.locked_until, excluded.locked_until)
         RETURNING *`,
        [key, until],
      );
      return toLimiter(rows[0]);
    },
    async get(key) {
      const { rows } = await db.query('SELECT * FROM limiter WHERE key = $1', [key]);
      return rows[0] && toLimiter(rows[0]);
    },
    async prune(now, windowMs) {
      await db.query('DELETE FROM limiter WHERE locked_until <= $1 AND window_start + $2 <= $1', [now, windowMs]);
    },
    async remove(key) {
      const { rowCount } = await db.query('DELETE FROM limiter WHERE key = $1', [key]);
      return rowCount === 1;
    },
    async removePrefix(prefix) {
      // starts_with, not LIKE: an address or a key never needs escaping.
      const { rowCount } = await db.query('DELETE FROM limiter WHERE starts_with(key, $1)', [prefix]);
      return rowCount ?? 0;
    },
  };
  return limiter;
};

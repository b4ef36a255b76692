// The store-unavailable log line: one per interval, with the driver's reason and a count of the
// failures kept quiet since, never a stack.
import { describe, expect, it } from 'vitest';
import { reasonOf, UnavailableLog } from '../../src/daemon/unavailable-log.js';
import { StoreUnavailableError } from '../../src/store/store.js';

describe('UnavailableLog', () => {
  it('says a failure once per interval, then how many it kept quiet', () => {
    let now = 0;
    const lines: Array<{ details: object; message: string }> = [];
    const log = new UnavailableLog(10_000, () => now);
    const warn = (details: object, message: string) => lines.push({ details, message });
    const error = new StoreUnavailableError('the PostgreSQL store is unavailable', { cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }) });
    for (let i = 0; i < 500; i++) {
      log.note(error, 'the store is unavailable', warn);
      now += 40;
    }
    // 500 failures over 20 s: a line at 0, 10 s (and none at 20 s: the last came at 19.96 s).
    expect(lines).toEqual([
      { details: { reason: 'connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)', suppressed: 0 }, message: 'the store is unavailable' },
      { details: { reason: 'connect ECONNREFUSED 127.0.0.1:5432 (ECONNREFUSED)', suppressed: 249 }, message: 'the store is unavailable' },
    ]);
    expect(JSON.stringify(lines)).not.toMatch(/\bat /);
  });

  it('names the innermost reason', () => {
    expect(reasonOf(new Error('outer', { cause: Object.assign(new Error('canceling statement due to lock timeout'), { code: '55P03' }) }))).toBe(
      'canceling statement due to lock timeout (55P03)',
    );
    expect(reasonOf('plain')).toBe('plain');
  });
});

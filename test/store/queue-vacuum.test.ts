// When the PostgreSQL store vacuums its queue tables (QueueVacuum), against a vacuum that stands
// for the database's: after how many rows, one at a time, how far apart, and after a failure.
import { describe, expect, it } from 'vitest';
import { QueueVacuum } from '../../src/store/postgres/queue-vacuum.js';

/** A vacuum that stays in flight until `finish` (or `fail`) is called; records each start. */
function heldVacuum() {
  let starts = 0;
  let settle: { finish(): void; fail(): void } | null = null;
  const run = () =>
    new Promise<void>((resolve, reject) => {
      starts++;
      settle = { finish: () => resolve(), fail: () => reject(new Error('permission denied')) };
    });
  return {
    run,
    starts: () => starts,
    /** Ends the vacuum in flight and lets its `finally` run. */
    async end(how: 'finish' | 'fail' = 'finish') {
      settle![how]();
      settle = null;
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe('QueueVacuum', () => {
  it('vacuums once the rows turned over reach the threshold, and counts again from zero', async () => {
    const db = heldVacuum();
    const vacuum = new QueueVacuum(db.run, { rows: 100, gapMs: 0 });
    vacuum.turnedOver(60);
    vacuum.turnedOver(39);
    await Promise.resolve();
    expect(db.starts()).toBe(0);
    vacuum.turnedOver(1);
    await Promise.resolve();
    expect(db.starts()).toBe(1);
    await db.end();
    vacuum.turnedOver(99);
    await Promise.resolve();
    expect(db.starts()).toBe(1);
    vacuum.turnedOver(1);
    await Promise.resolve();
    expect(db.starts()).toBe(2);
    await db.end();
  });

  it('runs one vacuum at a time: rows turned over meanwhile wait for the next', async () => {
    const db = heldVacuum();
    const vacuum = new QueueVacuum(db.run, { rows: 100, gapMs: 0 });
    vacuum.turnedOver(100);
    await Promise.resolve();
    vacuum.turnedOver(500);
    await Promise.resolve();
    expect(db.starts()).toBe(1);
    await db.end();
    vacuum.turnedOver(0);
    await Promise.resolve();
    expect(db.starts()).toBe(2);
    await db.end();
  });

  it('starts the next vacuum no sooner than the gap after the last one ended', async () => {
    const db = heldVacuum();
    let clock = 1_000;
    const vacuum = new QueueVacuum(db.run, { rows: 10, gapMs: 500, now: () => clock });
    vacuum.turnedOver(10);
    await Promise.resolve();
    clock = 1_200;
    await db.end();
    clock = 1_699;
    vacuum.turnedOver(10);
    await Promise.resolve();
    expect(db.starts()).toBe(1);
    clock = 1_700;
    vacuum.turnedOver(0);
    await Promise.resolve();
    expect(db.starts()).toBe(2);
    await db.end();
  });

  it('counts the rows of a failed vacuum toward the next one', async () => {
    const db = heldVacuum();
    const vacuum = new QueueVacuum(db.run, { rows: 100, gapMs: 0 });
    vacuum.turnedOver(100);
    await Promise.resolve();
    await db.end('fail');
    vacuum.turnedOver(0);
    await Promise.resolve();
    expect(db.starts()).toBe(2);
    await db.end();
  });

  it('waits for a vacuum in flight on stop and starts none after', async () => {
    const db = heldVacuum();
    const vacuum = new QueueVacuum(db.run, { rows: 10, gapMs: 0 });
    vacuum.turnedOver(10);
    await Promise.resolve();
    let stopped = false;
    const stopping = vacuum.stop().then(() => (stopped = true));
    await Promise.resolve();
    expect(stopped).toBe(false);
    await db.end();
    await stopping;
    vacuum.turnedOver(1_000);
    await Promise.resolve();
    expect(db.starts()).toBe(1);
  });
});

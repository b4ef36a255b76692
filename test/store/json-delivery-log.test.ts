// The JSON store's delivery logs in memory: a log served after a restart is the one served
// before it, and the parsed logs kept in memory stay within their byte budget while every log
// is still served whole (from disk when it was dropped).
import { randomUUID } from 'node:crypto';
import { appendFile, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { computeHealth, healthFromSummary } from '../../src/daemon/dispatcher/health.js';
import { layout } from '../../src/shared/paths.js';
import { JsonDeliveryLog } from '../../src/store/json/delivery-log.js';
import { realFileOps, type FileOps } from '../../src/store/json/file-ops.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import type { DeliveryLogEntry, WebhookRecord } from '../../src/store/types.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-logs-'));
  dirs.push(dir);
  return dir;
}

function entry(endpointId: number, i: number, extra: Partial<DeliveryLogEntry> = {}): Omit<DeliveryLogEntry, 'id'> {
  const failed = i % 3 === 0;
  return {
    delivery_id: randomUUID(),
    endpoint_id: endpointId,
    event: 'site.created',
    payload: { event: 'site.created', data: { site_id: i, domain: `s${i}.example.test` } },
    attempt: 1 + (i % 2),
    status_code: failed ? 500 : 200,
    response: failed ? 'boom' : 'ok',
    success: !failed,
    reason: failed ? 'HTTP 500' : null,
    duration_ms: 3,
    created_at: new Date(T0 + i * 1000).toISOString(),
    request_headers: { 'Content-Type': 'application/json' },
    ...extra,
  };
}

/** A log's host that hands out ids from 1, saved at once, and ignores appends. */
function idHost() {
  let next = 1;
  return { reserveIds: (count: number) => ({ first: (next += count) - count, saved: Promise.resolve() }), appended: () => undefined };
}

describe('JSON delivery logs in memory', () => {
  it('serves the same log and health after a restart as before it', async () => {
    const paths = layout(await tempDir());
    let store = await JsonStore.open(paths, { create: true });
    const now = new Date(T0).toISOString();
    const hooks: WebhookRecord[] = [];
    for (let h = 0; h < 3; h++) hooks.push(await store.webhooks.insert({ user_id: 1, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: now, updated_at: now }));
    // 230 attempts on the first (past a compaction of its file), a few on the second, none on the third.
    for (let i = 0; i < 23; i++) await store.outbox.record('w', [], Array.from({ length: 10 }, (_, j) => entry(hooks[0].id, i * 10 + j)));
    await store.deliveryLog.append([entry(hooks[1].id, 1), entry(hooks[1].id, 3)]);
    const ids = hooks.map((hook) => hook.id);
    const before = await Promise.all(ids.map((id) => store.deliveryLog.list(id)));
    const healthBefore = await store.deliveryLog.health(ids);
    expect(before.map((log) => log.length)).toEqual([100, 2, 0]);
    await store.close();

    store = await JsonStore.open(paths);
    try {
      // Health first (read from the files), then the logs.
      expect(await store.deliveryLog.health(ids)).toEqual(healthBefore);
      expect(await Promise.all(ids.map((id) => store.deliveryLog.list(id)))).toEqual(before);
      for (const id of ids) {
        const at = T0 + 400_000;
        expect(healthFromSummary(healthBefore.get(id)!, null, at)).toEqual(computeHealth(await store.deliveryLog.list(id), null, at));
      }
      // And kept current afterwards, as before.
      const [added] = await store.deliveryLog.append([entry(hooks[0].id, 999)]);
      expect((await store.deliveryLog.list(hooks[0].id))[0]).toEqual(added);
      expect((await store.deliveryLog.list(hooks[0].id)).slice(1)).toEqual(before[0].slice(0, 99));
    } finally {
      await store.close();
    }
  });

  it('shows an entry, in the log and its health, only once its line is written to the file', async () => {
    let hold = false;
    let release: (() => void) | null = null;
    const ops: FileOps = {
      ...realFileOps,
      write: async (handle, data, position) => {
        if (hold) await new Promise<void>((resolve) => (release = resolve));
        return realFileOps.write(handle, data, position);
      },
    };
    const log = await JsonDeliveryLog.open(await tempDir(), idHost(), ops);
    await log.append([entry(1, 1)]);
    expect(await log.list(1)).toHaveLength(1); // read once: the log is in memory from here on
    hold = true;
    const appending = log.append([entry(1, 2)]);
    await vi.waitFor(() => expect(release).not.toBeNull());
    const answers: string[] = [];
    const listed = log.list(1).then((list) => (answers.push('list'), list));
    const health = log.health([1]).then((map) => (answers.push('health'), map));
    // The write is held: however many turns pass, neither read answers before it is released.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(answers).toEqual([]);
    release!();
    await appending;
    expect((await listed).map((e) => e.id)).toEqual([2, 1]);
    expect((await health).get(1)).toBeTruthy();
    expect(answers.sort()).toEqual(['health', 'list']);
  });

  it('does not show an entry whose line could not be written (a full disk), in the log or its health', async () => {
    let full = false;
    const ops: FileOps = {
      ...realFileOps,
      write: async (handle, data, position) => {
        if (full) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        return realFileOps.write(handle, data, position);
      },
    };
    const log = await JsonDeliveryLog.open(await tempDir(), idHost(), ops);
    await log.append([entry(1, 1)]);
    expect(await log.list(1)).toHaveLength(1); // read once: the log is in memory from here on
    const before = (await log.health([1])).get(1);
    full = true;
    await expect(log.append([entry(1, 3)])).rejects.toThrow();
    expect((await log.list(1)).map((e) => e.id)).toEqual([1]);
    expect((await log.health([1])).get(1)).toEqual(before);
    // Room again: the next entry is kept after the first, in the file and in memory.
    full = false;
    await log.append([entry(1, 4)]);
    expect((await log.list(1)).map((e) => e.id)).toEqual([3, 1]);
  });

  it('keeps the parsed logs within the byte budget, and serves every log whole', async () => {
    const dir = await tempDir();
    const host = idHost();
    const budget = 64 * 1024;
    const log = await JsonDeliveryLog.open(dir, host, undefined, { cacheBytes: budget });
    try {
      const expected = new Map<number, DeliveryLogEntry[]>();
      for (let endpointId = 1; endpointId <= 40; endpointId++) {
        // 120 entries of about 400 bytes each: one full log is most of the budget.
        const appended = await log.append(Array.from({ length: 120 }, (_, i) => entry(endpointId, i, { response: 'x'.repeat(200) })));
        expected.set(endpointId, appended.slice(-100).reverse());
      }
      for (let round = 0; round < 2; round++) {
        for (const [endpointId, entries] of expected) {
          expect(await log.list(endpointId)).toEqual(entries);
          const stats = log.cacheStats();
          expect(stats.bytes).toBeLessThanOrEqual(budget);
          expect(stats.logs).toBeGreaterThanOrEqual(1);
        }
      }
      expect(log.cacheStats().logs).toBeLessThan(expected.size);
      // Appends to a log that is kept keep it current and still within the budget.
      const [added] = await log.append([entry(40, 500)]);
      expect((await log.list(40))[0]).toEqual(added);
      expect(log.cacheStats().bytes).toBeLessThanOrEqual(budget);
      // Health stays known for every endpoint, kept in memory or not.
      const health = await log.health([...expected.keys()]);
      expect([...health.values()].every((h) => h !== null && h.attempts === 100)).toBe(true);
    } finally {
      await log.close();
    }
  });

  it('keeps each endpoint\'s lines in id order when a batch and the batches beside it cross rotations', async () => {
    const dir = await tempDir();
    const host = idHost();
    const options = { retention: 10 };
    let log = await JsonDeliveryLog.open(dir, host, undefined, options);
    const appended: DeliveryLogEntry[] = [];
    try {
      // Endpoints 1 and 2 interleaved, 3 new halfway (its first append counts its file): the
      // batches rotate the files again and again, and start while others wait for a count or
      // a rotation, or just after one ended.
      const batch = (from: number, size: number) => Array.from({ length: size }, (_, i) => entry(i >= size / 2 && i % 3 === 0 ? 3 : 1 + (i % 2), from + i));
      const calls: Array<Promise<DeliveryLogEntry[]>> = [];
      for (let k = 0; k < 60; k++) {
        calls.push(log.append(batch(k * 100, 1 + (k % 23))));
        if (k % 4 === 0) await new Promise((resolve) => setImmediate(resolve));
        else if (k % 4 === 1) await Promise.resolve();
      }
      for (const result of await Promise.all(calls)) appended.push(...result);
    } finally {
      await log.close();
    }
    log = await JsonDeliveryLog.open(dir, host, undefined, options);
    try {
      for (const endpointId of [1, 2, 3]) {
        const expected = appended.filter((e) => e.endpoint_id === endpointId).slice(-10).reverse();
        expect(expected.length).toBeGreaterThan(0);
        expect(await log.list(endpointId)).toEqual(expected);
      }
    } finally {
      await log.close();
    }
  });

  it('keeps the newest entries in two segments on disk, at most twice the retention, and reads them back after a restart', async () => {
    const dir = await tempDir();
    const host = idHost();
    const lineCount = async (name: string) => (await readFile(join(dir, name), 'utf8')).split('\n').filter(Boolean).length;
    let log = await JsonDeliveryLog.open(dir, host);
    const appended: DeliveryLogEntry[] = [];
    try {
      // One at a time and in batches, past two rotations.
      for (let i = 0; i < 130; i++) appended.push(...(await log.append([entry(1, i)])));
      for (let i = 0; i < 12; i++) appended.push(...(await log.append(Array.from({ length: 10 }, (_, j) => entry(1, 130 + i * 10 + j)))));
    } finally {
      await log.close();
    }
    expect((await readdir(dir)).sort()).toEqual(['1.jsonl', '1.old.jsonl']);
    const onDisk = (await lineCount('1.old.jsonl')) + (await lineCount('1.jsonl'));
    expect(onDisk).toBeGreaterThanOrEqual(100);
    expect(onDisk).toBeLessThanOrEqual(200);
    // A torn last line in the previous segment (a crash mid-append before its rotation) costs that line only.
    await appendFile(join(dir, '1.old.jsonl'), '{"id":99999,"torn');
    log = await JsonDeliveryLog.open(dir, host);
    try {
      expect(await log.list(1)).toEqual(appended.slice(-100).reverse());
      // And appends go on into the current segment, the log served whole.
      const [added] = await log.append([entry(1, 999)]);
      expect(await log.list(1)).toEqual([added, ...appended.slice(-99).reverse()]);
      // A removed endpoint leaves neither segment behind.
      await log.removeEndpoint(1);
      expect(await readdir(dir)).toEqual([]);
    } finally {
      await log.close();
    }
  });
});

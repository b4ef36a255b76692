// The outbox's claim order on real files: due retries before newer deliveries, claimed ones not
// offered twice, progress and retry times kept across a reopen, and claims not persisted.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonOutbox } from '../../src/store/json/outbox.js';
import type { DeliveryRecord } from '../../src/store/types.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function openOutbox(path?: string) {
  if (!path) {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-outbox-'));
    dirs.push(dir);
    path = join(dir, 'outbox.jsonl');
  }
  return { outbox: await JsonOutbox.open(path), path };
}

const event = { id: 'e', event: 'site.created', owner_id: 1, data: {}, timestamp: '2030-01-01T00:00:00.000Z' };
function delivery(id: string, endpointId: number, at: number): DeliveryRecord {
  return { id, endpoint_id: endpointId, event: 'site.created', body: '{}', state: 'pending', attempts: 0, next_attempt_at: at, created_at: event.timestamp };
}

describe('outbox claims', () => {
  it('hands out an endpoint’s deliveries oldest first, each once, and says when the next retry is due', async () => {
    const { outbox } = await openOutbox();
    await outbox.enqueue(event, [delivery('a1', 1, 100), delivery('b1', 2, 100)]);
    await outbox.enqueue(event, [delivery('a2', 1, 200)]);
    expect((await outbox.pendingEndpoints()).sort()).toEqual([1, 2]);

    const first = await outbox.claim(1, 1_000);
    expect(first.delivery?.id).toBe('a1');
    // a1 fails its first attempt: a retry at 3000.
    await outbox.updateDelivery({ ...first.delivery!, attempts: 1, next_attempt_at: 3_000 });
    expect((await outbox.claim(1, 1_000)).delivery?.id).toBe('a2');
    expect(await outbox.claim(1, 1_000)).toEqual({ delivery: null, next_due_at: 3_000 });
    const retry = await outbox.claim(1, 3_000);
    expect(retry.delivery).toMatchObject({ id: 'a1', attempts: 1 });
    expect(await outbox.claim(1, 9_000)).toEqual({ delivery: null, next_due_at: null });
    expect(await outbox.pendingEndpoints()).toEqual([2]);
    await outbox.close();
  });

  it('keeps pending deliveries and retry times across a reopen; claims are not persisted', async () => {
    const { outbox, path } = await openOutbox();
    await outbox.enqueue(event, [delivery('x', 5, 10), delivery('y', 5, 10), delivery('z', 5, 10)]);
    const x = (await outbox.claim(5, 50)).delivery!;
    await outbox.updateDelivery({ ...x, attempts: 1, next_attempt_at: 5_000 });
    const y = (await outbox.claim(5, 50)).delivery!;
    await outbox.updateDelivery({ ...y, attempts: 1, state: 'succeeded' });
    await outbox.claim(5, 50); // z claimed, then the process dies
    await outbox.close();

    const { outbox: reopened } = await openOutbox(path);
    expect((await reopened.pending()).map((d) => d.id).sort()).toEqual(['x', 'z']);
    expect((await reopened.claim(5, 100)).delivery?.id).toBe('z');
    expect(await reopened.claim(5, 100)).toEqual({ delivery: null, next_due_at: 5_000 });
    expect((await reopened.claim(5, 5_000)).delivery).toMatchObject({ id: 'x', attempts: 1 });
    await reopened.compact();
    await reopened.close();
    const { outbox: compacted } = await openOutbox(path);
    expect((await compacted.pending()).map((d) => d.id).sort()).toEqual(['x', 'z']);
    await compacted.close();
  });
});

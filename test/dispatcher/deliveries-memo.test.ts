// GET /webhooks/:id/deliveries answers from a memo kept while the store's revision of the log is
// unchanged: the next request after any change to the log shows it, whoever wrote it. On
// PostgreSQL, also an entry written through another store handle (another daemon) and one that
// commits after a newer id. Targets use the .invalid TLD: nothing is ever delivered.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import type { DeliveryLogEntry } from '../../src/store/types.js';
import { customer, startAppWorld, type AppWorld } from './fixtures.js';

function entry(endpointId: number, attempt: number): Omit<DeliveryLogEntry, 'id'> {
  return {
    delivery_id: randomUUID(),
    endpoint_id: endpointId,
    event: 'site.created',
    payload: { event: 'site.created', data: { attempt } },
    attempt,
    status_code: 200,
    response: 'ok',
    success: true,
    duration_ms: 3,
    created_at: new Date().toISOString(),
    request_headers: { 'Content-Type': 'application/json' },
  };
}

describe('delivery log answers kept between changes', () => {
  let world: AppWorld;

  beforeAll(async () => {
    world = await startAppWorld(null, { allowPrivate: false });
  });
  afterAll(async () => {
    await world?.app.close();
  });

  async function endpointOf(token: string): Promise<number> {
    const created = await world.daemon.request('POST', '/webhooks', { token, body: { url: 'https://hooks.example.invalid/memo', secret: 'memo-secret-value', events: 'site.created' } });
    expect(created.status, created.text).toBe(201);
    return created.body.data.id;
  }

  async function ids(token: string, id: number, query = ''): Promise<number[]> {
    const answer = await world.daemon.request('GET', `/webhooks/${id}/deliveries${query}`, { token });
    expect(answer.status, answer.text).toBe(200);
    return answer.body.data.map((e: DeliveryLogEntry) => e.id);
  }

  it('shows each append on the next request, and the newest 100 once older ones are pruned', async () => {
    const { token } = await customer(world);
    const id = await endpointOf(token);
    const store = world.app.store;
    expect(await ids(token, id)).toEqual([]);
    const first = await store.deliveryLog.append([entry(id, 1), entry(id, 2)]);
    const shown = await ids(token, id);
    expect(shown).toEqual(first.map((e) => e.id).reverse());
    // Asked again with nothing new: the same answer (from the memo).
    expect(await ids(token, id)).toEqual(shown);
    expect(await ids(token, id, '?limit=1')).toEqual([first[1].id]);
    const [third] = await store.deliveryLog.append([entry(id, 3)]);
    expect(await ids(token, id)).toEqual([third.id, ...shown]);
    expect(await ids(token, id, '?limit=1')).toEqual([third.id]);
    // 100 more: the first three leave the answer (PostgreSQL prunes them on a later append).
    const more = await store.deliveryLog.append(Array.from({ length: 100 }, (_, i) => entry(id, 4 + i)));
    const [last] = await store.deliveryLog.append([entry(id, 104)]);
    const full = await ids(token, id);
    expect(full).toHaveLength(100);
    expect(full[0]).toBe(last.id);
    expect(full.at(-1)).toBe(more[1].id);
  });

  it('shows an entry written by another daemon, and one that committed after a newer id, on the next request', async (ctx) => {
    if (!world.app.databaseUrl) return ctx.skip();
    const { token } = await customer(world);
    const id = await endpointOf(token);
    const other = await PostgresStore.open(world.app.databaseUrl);
    try {
      const [seen] = await world.app.store.deliveryLog.append([entry(id, 1)]);
      expect(await ids(token, id)).toEqual([seen.id]);
      let newer: DeliveryLogEntry | undefined;
      const [older] = await other.transaction(async (tx) => {
        const held = await tx.deliveryLog.append([entry(id, 2)]);
        // A newer id commits first, through the app's own store, while the older one is held.
        [newer] = await world.app.store.deliveryLog.append([entry(id, 3)]);
        expect(await ids(token, id)).toEqual([newer.id, seen.id]);
        return held;
      });
      expect(older.id).toBeLessThan(newer!.id);
      expect(await ids(token, id)).toEqual([newer!.id, older.id, seen.id]);
      // Another daemon's append.
      const [fromOther] = await other.deliveryLog.append([entry(id, 4)]);
      expect(await ids(token, id)).toEqual([fromOther.id, newer!.id, older.id, seen.id]);
    } finally {
      await other.close();
    }
  });
});

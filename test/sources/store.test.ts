// The store side of subscriptions, on real files: the default mark moves in one durable
// write, a failed write leaves the old default in place, and a customer's deletion takes
// their subscriptions and sites with it.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { layout } from '../../src/shared/paths.js';
import { atomicWrite } from '../../src/store/json/durable-writer.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import { StoreWriteError } from '../../src/store/store.js';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function openStore() {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-sources-store-'));
  dirs.push(dir);
  const paths = layout(dir);
  const control = { writes: [] as string[], fail: false };
  const store = await JsonStore.open(paths, {
    create: true,
    writeFn: async (path, content, mode) => {
      if (control.fail) throw new Error('EIO: i/o error');
      control.writes.push(content);
      await atomicWrite(path, content, mode);
    },
  });
  return { store, paths, control };
}

const now = '2030-01-01T00:00:00.000Z';
const sub = (customer_id: number, main_domain: string, is_default: boolean) =>
  ({ customer_id, main_domain, is_default, status: 'active' as const, created_at: now, updated_at: now });

describe('subscriptions in the JSON store', () => {
  it('moves the default mark in the same durable write as the insert', async () => {
    const { store, paths, control } = await openStore();
    const first = await store.subscriptions.create(sub(7, 'one.example', true));
    const other = await store.subscriptions.create(sub(8, 'other.example', true));
    control.writes.length = 0;
    const second = await store.subscriptions.create(sub(7, 'two.example', true));

    expect(control.writes).toHaveLength(1);
    const onDisk = JSON.parse(await readFile(paths.store, 'utf8'));
    expect(onDisk.subscriptions.map((s: any) => [s.id, s.is_default])).toEqual([
      [first.id, false],
      [other.id, true],
      [second.id, true],
    ]);
    await store.close();
  });

  it('keeps the previous default when the write fails', async () => {
    const { store, paths, control } = await openStore();
    const first = await store.subscriptions.create(sub(7, 'one.example', true));
    control.fail = true;
    await expect(store.subscriptions.create(sub(7, 'two.example', true))).rejects.toBeInstanceOf(StoreWriteError);
    control.fail = false;
    expect((await store.subscriptions.list()).map((s) => [s.id, s.is_default, s.updated_at])).toEqual([[first.id, true, now]]);
    const onDisk = JSON.parse(await readFile(paths.store, 'utf8'));
    expect(onDisk.subscriptions.map((s: any) => [s.id, s.is_default])).toEqual([[first.id, true]]);
    await store.close();
  });

  it('removes a customer\'s subscriptions and their sites with the customer, and puts them back if that write fails', async () => {
    const { store, control } = await openStore();
    const user = await store.users.insert({
      email: 'c@example.com', name: 'c', role: 'customer', password_hash: 'x', totp_secret: null, totp_pending_secret: null,
      two_factor_enabled: false, totp_last_step: null, created_at: now, updated_at: now,
    });
    const mine = await store.subscriptions.create(sub(user.id, 'mine.example', true));
    const theirs = await store.subscriptions.create(sub(user.id + 1, 'theirs.example', true));
    await store.sites.insert({ subscription_id: mine.id, domain: 'a.mine.example', created_at: now });
    const kept = await store.sites.insert({ subscription_id: theirs.id, domain: 'a.theirs.example', created_at: now });

    control.fail = true;
    await expect(store.users.removeCascade(user.id)).rejects.toBeInstanceOf(StoreWriteError);
    control.fail = false;
    expect(await store.subscriptions.count()).toBe(2);
    expect(await store.sites.count()).toBe(2);

    await store.users.removeCascade(user.id);
    expect((await store.subscriptions.list()).map((s) => s.id)).toEqual([theirs.id]);
    expect((await store.sites.list()).map((s) => s.id)).toEqual([kept.id]);
    await store.close();
  });
});

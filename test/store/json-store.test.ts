// The JSON store on real files: durable coalesced writes, rollback on failed writes, migrations.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { layout } from '../../src/shared/paths.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import { atomicWrite } from '../../src/store/json/durable-writer.js';
import { migrate, SCHEMA_VERSION } from '../../src/store/migrations.js';
import { StoreCorruptError, StoreWriteError } from '../../src/store/store.js';

const dirs: string[] = [];
async function tempLayout() {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-store-'));
  dirs.push(dir);
  return layout(dir);
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const site = (i: number) => ({ subscription_id: 1, domain: `s${i}.example.com`, created_at: new Date().toISOString() });

describe('JsonStore', () => {
  it('coalesces 100 parallel writes into a few rewrites, each acknowledged only when on disk', async () => {
    const paths = await tempLayout();
    let writes = 0;
    const store = await JsonStore.open(paths, {
      create: true,
      writeFn: async (path, content, mode) => {
        writes++;
        await atomicWrite(path, content, mode);
      },
    });
    writes = 0;
    const inserted = await Promise.all(Array.from({ length: 100 }, (_, i) => store.sites.insert(site(i))));
    expect(new Set(inserted.map((s) => s.id)).size).toBe(100);
    expect(writes).toBeLessThanOrEqual(3);
    const onDisk = JSON.parse(await readFile(paths.store, 'utf8'));
    expect(onDisk.sites).toHaveLength(100);
    await store.close();
  });

  it('records API key uses to the second, and changes a collection\'s revision with each change', async () => {
    const store = await JsonStore.open(await tempLayout(), { create: true });
    const key = await store.apiKeys.insert({ user_id: 1, name: 'k', key_hash: 'h'.repeat(64), key_prefix: 'ncp_x', last_used_at: null, expires_at: null, created_at: new Date().toISOString() });
    const t = Date.parse('2026-11-21T10:00:00.250Z');
    store.apiKeys.touch(key.id, t);
    expect((await store.apiKeys.get(key.id))!.last_used_at).toBe('2026-11-21T10:00:00.000Z');
    store.apiKeys.touch(key.id, t + 700); // same second: unchanged
    expect((await store.apiKeys.get(key.id))!.last_used_at).toBe('2026-11-21T10:00:00.000Z');
    store.apiKeys.touch(key.id, t + 1_800);
    expect((await store.apiKeys.get(key.id))!.last_used_at).toBe('2026-11-21T10:00:02.000Z');

    const seen = [store.sites.revision()];
    const row = await store.sites.insert(site(1));
    seen.push(store.sites.revision());
    await store.sites.update(row.id, { domain: 's1b.example.com' });
    seen.push(store.sites.revision());
    await store.sites.remove(row.id);
    seen.push(store.sites.revision());
    expect(new Set(seen).size).toBe(4);
    await store.close();
  });

  it('writes recorded key uses on their own only after usageFlushMs, and sooner with any other change', async () => {
    const paths = await tempLayout();
    let writes = 0;
    const store = await JsonStore.open(paths, {
      create: true,
      lazyFlushMs: 30,
      usageFlushMs: 400,
      writeFn: async (path, content, mode) => {
        writes++;
        await atomicWrite(path, content, mode);
      },
    });
    const key = await store.apiKeys.insert({ user_id: 1, name: 'k', key_hash: 'u'.repeat(64), key_prefix: 'ncp_u', last_used_at: null, expires_at: null, created_at: new Date().toISOString() });
    const onDisk = async () => JSON.parse(await readFile(paths.store, 'utf8')).api_keys[0].last_used_at as string | null;
    // The store's delays run on a fake clock, so a slow machine cannot move a write across a
    // boundary; the file I/O stays real (flush() waits for a write in progress).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    try {
      writes = 0;
      store.apiKeys.touch(key.id, Date.parse('2026-11-21T10:00:00Z'));
      await vi.advanceTimersByTimeAsync(399);
      expect([writes, await onDisk()]).toEqual([0, null]);
      await vi.advanceTimersByTimeAsync(1);
      await store.flush();
      expect([writes, await onDisk()]).toEqual([1, '2026-11-21T10:00:00.000Z']);

      // A request window (lazyFlushMs) brings a pending key use along at its own, shorter delay.
      store.apiKeys.touch(key.id, Date.parse('2026-11-21T10:00:05Z'));
      await store.limiter.put({ key: 'rl:user:1', count: 1, window_start: Date.now(), locked_until: 0 }, false);
      await vi.advanceTimersByTimeAsync(29);
      expect(writes).toBe(1);
      await vi.advanceTimersByTimeAsync(1);
      await store.flush();
      expect([writes, await onDisk()]).toEqual([2, '2026-11-21T10:00:05.000Z']);
    } finally {
      vi.useRealTimers();
    }
    await store.close();
  });

  it('rolls a change back when it cannot be written, and reports it', async () => {
    const paths = await tempLayout();
    let fail = false;
    const store = await JsonStore.open(paths, {
      create: true,
      writeFn: async (path, content, mode) => {
        if (fail) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
        await atomicWrite(path, content, mode);
      },
    });
    const kept = await store.sites.insert(site(1));
    fail = true;
    await expect(store.sites.insert(site(2))).rejects.toBeInstanceOf(StoreWriteError);
    await expect(store.sites.update(kept.id, { domain: 'changed.example.com' })).rejects.toBeInstanceOf(StoreWriteError);
    await expect(store.sites.remove(kept.id)).rejects.toBeInstanceOf(StoreWriteError);
    expect((await store.sites.list()).map((s) => s.domain)).toEqual(['s1.example.com']);
    fail = false;
    await store.sites.insert(site(3));
    expect((await store.sites.list()).map((s) => s.domain)).toEqual(['s1.example.com', 's3.example.com']);
    await store.close();
  });

  it('refuses a corrupt file with a message naming it', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    await store.close();
    const { writeFile } = await import('node:fs/promises');
    await writeFile(paths.store, 'not json');
    await expect(JsonStore.open(paths)).rejects.toThrow(StoreCorruptError);
    await expect(JsonStore.open(paths)).rejects.toThrow(paths.store);
    expect(await readFile(paths.store, 'utf8')).toBe('not json');
  });

  it('runs migrations up to the current schema version and refuses newer documents', () => {
    const doc: Record<string, unknown> = { schema_version: 0, users: [{ id: 1 }] };
    const changed = migrate(doc, [{ to: 1, up: (d) => void ((d.users as Array<Record<string, unknown>>)[0].migrated = true) }], 1);
    expect(changed).toBe(true);
    expect(doc).toMatchObject({ schema_version: 1, users: [{ id: 1, migrated: true }], webhooks: [] });
    expect(() => migrate({ schema_version: SCHEMA_VERSION + 1 })).toThrow(/newer/);
  });

  it('keeps pending outbox deliveries across reopen and drops finished ones', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    const now = new Date().toISOString();
    const delivery = (id: string) => ({ id, endpoint_id: 1, event: 'site.created', body: '{}', state: 'pending' as const, attempts: 0, next_attempt_at: 0, created_at: now });
    await store.outbox.enqueue({ id: 'e1', event: 'site.created', owner_id: 2, data: {}, timestamp: now }, [delivery('d1'), delivery('d2')]);
    await store.outbox.updateDelivery({ ...delivery('d1'), state: 'succeeded', attempts: 1 });
    await store.outbox.updateDelivery({ ...delivery('d2'), attempts: 1, next_attempt_at: 123 });
    await store.close();
    const reopened = await JsonStore.open(paths);
    expect(await reopened.outbox.pending()).toEqual([{ ...delivery('d2'), attempts: 1, next_attempt_at: 123 }]);
    await reopened.close();
  });

  it('keeps the newest 100 delivery log entries per endpoint, newest first', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    for (let i = 1; i <= 205; i++) {
      await store.deliveryLog.append({ delivery_id: `d${i}`, endpoint_id: 7, event: 'site.created', payload: { i }, attempt: 1, status_code: 200, response: '', success: true, duration_ms: 1, created_at: new Date().toISOString(), request_headers: {} });
    }
    const entries = await store.deliveryLog.list(7);
    expect(entries).toHaveLength(100);
    expect(entries[0].delivery_id).toBe('d205');
    expect(entries[99].delivery_id).toBe('d106');
    expect(entries[0].id).toBeGreaterThan(entries[1].id);
    expect(await store.deliveryLog.list(8)).toEqual([]);
    await store.close();
  });
});

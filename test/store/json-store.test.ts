// What only the embedded JSON store has: its files. Replay after a crash, a torn journal tail,
// short writes, ENOSPC and fsync failures on the real write path (injected through its file
// layer), snapshots, group commit, and stores written before the journal.
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { layout, type DataLayout } from '../../src/shared/paths.js';
import { realFileOps, type FileOps } from '../../src/store/json/file-ops.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import { SCHEMA_VERSION, migrate } from '../../src/store/migrations.js';
import { StoreCorruptError, StoreUnavailableError } from '../../src/store/store.js';
import { delivery, eventRecord, userRecord } from './contract/suite.js';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempLayout(): Promise<DataLayout> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-json-'));
  dirs.push(dir);
  return layout(dir);
}

const T0 = '2026-01-01T00:00:00.000Z';

/** File operations whose writes can be told to fail: short, ENOSPC, or at fsync. */
function faultyOps() {
  const state = { mode: 'ok' as 'ok' | 'short-then-enospc' | 'enospc' | 'fsync', syncs: 0 };
  const ops: Partial<FileOps> = {
    async write(handle, data, position) {
      if (state.mode === 'enospc') throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      if (state.mode === 'short-then-enospc') {
        // Half the bytes make it, then the disk is full: the classic torn line.
        if (data.length > 1) return realFileOps.write(handle, data.subarray(0, Math.floor(data.length / 2)), position);
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      }
      return realFileOps.write(handle, data, position);
    },
    async sync(handle) {
      state.syncs++;
      if (state.mode === 'fsync') throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
      return realFileOps.sync(handle);
    },
  };
  return { state, ops };
}

async function journalText(paths: DataLayout): Promise<string> {
  const names = (await readdir(paths.root)).filter((n) => n.startsWith('journal-')).sort();
  let text = '';
  for (const name of names) text += await readFile(join(paths.root, name), 'utf8');
  return text;
}

describe('JSON store files', () => {
  it('replays the journal after a crash (no close): every acknowledged write is there', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    const user = await store.users.insert(userRecord('crash@example.test'));
    const sub = await store.subscriptions.insert({ customer_id: user.id, main_domain: 'crash.example', is_default: true, status: 'active', created_at: T0, updated_at: T0 });
    const sites = await Promise.all(Array.from({ length: 30 }, (_, i) => store.sites.insert({ subscription_id: sub.id, domain: `s${i}.crash.example`, created_at: T0 })));
    await store.sites.remove(sites[0].id);
    await store.settings.update({ login_max_attempts: 3 });
    // No close: as after kill -9, only what reached the journal exists.
    const reopened = await JsonStore.open(paths);
    expect((await reopened.sites.listBySubscription(sub.id)).map((s) => s.id)).toEqual(sites.slice(1).map((s) => s.id));
    expect((await reopened.settings.get()).login_max_attempts).toBe(3);
    // Ids are not reused after a restart.
    const next = await reopened.sites.insert({ subscription_id: sub.id, domain: 'next.crash.example', created_at: T0 });
    expect(next.id).toBeGreaterThan(sites[29].id);
    await reopened.close();
  });

  it('replays request windows hit and pruned within one soft line as they were last (a prune and a new window of one key in order)', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    for (let i = 0; i < 3; i++) await store.limiter.countRequest('rl:user:1', 60_000, 1_000);
    await store.limiter.countRequest('rl:user:2', 60_000, 1_000);
    // Both windows ended: pruned (a soft delete), then user 1 starts a new window, all before the line is written.
    await store.limiter.prune(70_000, 60_000);
    expect(await store.limiter.countRequest('rl:user:1', 60_000, 70_000)).toMatchObject({ count: 1, window_start: 70_000 });
    // A durable write takes the soft changes along in the line before its own.
    await store.settings.update({ login_max_attempts: 3 });
    // No close (which would write a snapshot of memory): the journal's lines are what is replayed.
    const reopened = await JsonStore.open(paths);
    expect(await reopened.limiter.get('rl:user:1')).toMatchObject({ count: 1, window_start: 70_000 });
    expect(await reopened.limiter.get('rl:user:2')).toBeUndefined();
    await reopened.close();
  });

  it('cuts off a torn last journal line with a warning and keeps everything before it', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    const user = await store.users.insert(userRecord('torn@example.test'));
    const name = (await readdir(paths.root)).find((n) => n.startsWith('journal-'))!;
    await appendFile(join(paths.root, name), '{"s":99,"o":[{"t":"users","k":5,"v":{"id":5,"em');
    const warnings: string[] = [];
    const reopened = await JsonStore.open(paths, { warn: (m) => warnings.push(m) });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/incomplete last line/);
    expect((await reopened.users.list()).map((u) => u.id)).toEqual([user.id]);
    // Writes go on after the cut, on a clean line.
    await reopened.users.insert(userRecord('after@example.test'));
    await reopened.close();
    const again = await JsonStore.open(paths);
    expect((await again.users.list()).map((u) => u.email)).toEqual(['torn@example.test', 'after@example.test']);
    await again.close();
  });

  it('refuses a damaged snapshot and a bad line in the middle of a journal, naming the file, touching nothing', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    await store.users.insert(userRecord('a@example.test'));
    await store.users.insert(userRecord('b@example.test'));
    const name = (await readdir(paths.root)).find((n) => n.startsWith('journal-'))!;
    const journal = join(paths.root, name);
    const lines = (await readFile(journal, 'utf8')).split('\n');
    await writeFile(journal, ['garbage', ...lines.slice(1)].join('\n'));
    await expect(JsonStore.open(paths)).rejects.toThrow(StoreCorruptError);
    await expect(JsonStore.open(paths)).rejects.toThrow(journal);
    await writeFile(paths.store, 'not json');
    await expect(JsonStore.open(paths)).rejects.toThrow(paths.store);
    expect(await readFile(paths.store, 'utf8')).toBe('not json');
  });

  for (const mode of ['short-then-enospc', 'enospc', 'fsync'] as const) {
    it(`a ${mode} failure fails the write with StoreUnavailableError, keeps the previous state, and writes resume`, async () => {
      const paths = await tempLayout();
      const faults = faultyOps();
      const store = await JsonStore.open(paths, { create: true, fileOps: faults.ops });
      const user = await store.users.insert(userRecord('disk@example.test'));
      const sub = await store.subscriptions.insert({ customer_id: user.id, main_domain: 'disk.example', is_default: true, status: 'active', created_at: T0, updated_at: T0 });
      const kept = await store.sites.insert({ subscription_id: sub.id, domain: 'kept.disk.example', created_at: T0 });

      faults.state.mode = mode;
      const failed = await Promise.allSettled([
        store.sites.insert({ subscription_id: sub.id, domain: 'lost1.disk.example', created_at: T0 }),
        store.sites.remove(kept.id),
        store.transaction(async (tx) => {
          await tx.sites.insert({ subscription_id: sub.id, domain: 'lost2.disk.example', created_at: T0 });
          await tx.outbox.enqueue(eventRecord(), [delivery(1, user.id, 0)]);
        }),
      ]);
      for (const result of failed) {
        expect(result.status).toBe('rejected');
        expect((result as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
        // Backend-neutral: no file path in what an API client could be shown.
        expect((result as PromiseRejectedResult).reason.message).not.toContain(paths.root);
      }
      expect((await store.sites.listBySubscription(sub.id)).map((s) => s.domain)).toEqual(['kept.disk.example']);
      expect(await store.outbox.pendingCount()).toBe(0);

      faults.state.mode = 'ok';
      const resumed = await store.sites.insert({ subscription_id: sub.id, domain: 'lost1.disk.example', created_at: T0 });
      // The journal holds only whole lines: the torn bytes were cut off before the next append.
      for (const line of (await journalText(paths)).split('\n').filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
      const reopened = await JsonStore.open(paths);
      expect((await reopened.sites.listBySubscription(sub.id)).map((s) => [s.id, s.domain])).toEqual([
        [kept.id, 'kept.disk.example'],
        [resumed.id, 'lost1.disk.example'],
      ]);
      await reopened.close();
      await store.close();
    });
  }

  it('a write committed behind a failing one, and built on it, fails and is rolled back with it', async () => {
    const paths = await tempLayout();
    let release!: (error?: Error) => void;
    let blocked: Promise<void> | null = null;
    let syncing!: () => void;
    const started = new Promise<void>((resolve) => (syncing = resolve));
    const store = await JsonStore.open(paths, {
      create: true,
      fileOps: {
        async sync(handle) {
          if (blocked) {
            syncing();
            await blocked;
          }
          return realFileOps.sync(handle);
        },
      },
    });
    const user = await store.users.insert(userRecord('dep@example.test'));
    blocked = new Promise<void>((resolve, reject) => (release = (error) => (error ? reject(error) : resolve())));
    const subscription = store.subscriptions.insert({ customer_id: user.id, main_domain: 'dep.example', is_default: true, status: 'active', created_at: T0, updated_at: T0 });
    await started; // its batch is on its way to disk, the subscription already visible in memory
    const [sub] = await store.subscriptions.listByCustomer(user.id);
    const site = store.sites.insert({ subscription_id: sub.id, domain: 'dep-site.example', created_at: T0 });
    const dependent = store.transaction(async (tx) => tx.sites.insert({ subscription_id: sub.id, domain: 'dep-site2.example', created_at: T0 }));
    blocked = null;
    release(Object.assign(new Error('EIO'), { code: 'EIO' }));
    await expect(subscription).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(site).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(dependent).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.subscriptions.listByCustomer(user.id)).toEqual([]);
    expect(await store.sites.list()).toEqual([]);
    // The next write works, and disk and memory agree.
    await store.subscriptions.insert({ customer_id: user.id, main_domain: 'dep.example', is_default: true, status: 'active', created_at: T0, updated_at: T0 });
    const reopened = await JsonStore.open(paths);
    expect((await reopened.subscriptions.listByCustomer(user.id)).map((s) => s.main_domain)).toEqual(['dep.example']);
    expect(await reopened.sites.list()).toEqual([]);
    await reopened.close();
    await store.close();
  });

  it('group commit: 200 concurrent writes share far fewer fsyncs', async () => {
    const paths = await tempLayout();
    const faults = faultyOps();
    const store = await JsonStore.open(paths, { create: true, fileOps: faults.ops });
    const before = faults.state.syncs;
    await Promise.all(Array.from({ length: 200 }, (_, i) => store.users.insert(userRecord(`u${i}@example.test`))));
    const syncs = faults.state.syncs - before;
    expect(syncs).toBeGreaterThan(0);
    expect(syncs).toBeLessThan(20);
    await store.close();
  });

  it('snapshots the journal once it grows, removes the older journals, and reopens to the same state', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true, compactAfterBytes: 4096 });
    for (let i = 0; i < 100; i++) await store.users.insert(userRecord(`snap${i}@example.test`));
    await store.flush();
    const journals = (await readdir(paths.root)).filter((n) => n.startsWith('journal-'));
    expect(journals.length).toBeLessThanOrEqual(2);
    const snapshot = JSON.parse(await readFile(paths.store, 'utf8'));
    expect(snapshot.schema_version).toBe(SCHEMA_VERSION);
    expect(snapshot.users.length).toBeGreaterThan(10);
    const reopened = await JsonStore.open(paths);
    expect(await reopened.users.count()).toBe(100);
    await reopened.close();
    await store.close();
  });

  it('matches events to the endpoints it reopens with, from the journal and from a snapshot', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true, compactAfterBytes: 4096 });
    const user = await store.users.insert(userRecord('index@example.test'));
    const hook = (events: string) =>
      store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events, active: true, created_at: T0, updated_at: T0 });
    const hooks = [];
    for (let i = 0; i < 40; i++) hooks.push(await hook(i % 4 === 0 ? 'site.created' : 'backup.completed'));
    await store.webhooks.update(hooks[0].id, { active: false, updated_at: T0 });
    await store.webhooks.update(hooks[1].id, { events: 'site.created,site.deleted', updated_at: T0 });
    await store.webhooks.remove(hooks[4].id);
    const expected = [hooks[1].id, ...hooks.filter((_, i) => i % 4 === 0 && i > 4).map((h) => h.id)];
    const matchedBy = async (s: JsonStore) => (await s.outbox.publish({ ...eventRecord(), owner_id: user.id }, { body: '{}', next_attempt_at: 1, created_at: T0 })).map((q) => q.endpoint_id);
    expect(await matchedBy(store)).toEqual(expected);
    // No close: the journal replays (over the snapshot it has grown into by now).
    const replayed = await JsonStore.open(paths);
    expect(await matchedBy(replayed)).toEqual(expected);
    await replayed.close();
    await store.close();
    const reopened = await JsonStore.open(paths);
    expect(await matchedBy(reopened)).toEqual(expected);
    await reopened.close();
  });

  it('a snapshot that cannot be written loses nothing: the journals still replay', async () => {
    const paths = await tempLayout();
    let failRename = false;
    const store = await JsonStore.open(paths, {
      create: true,
      compactAfterBytes: 2048,
      fileOps: {
        rename: async (from, to) => {
          if (failRename) throw Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' });
          return realFileOps.rename(from, to);
        },
      },
    });
    failRename = true;
    for (let i = 0; i < 60; i++) await store.users.insert(userRecord(`keep${i}@example.test`));
    const reopened = await JsonStore.open(paths);
    expect(await reopened.users.count()).toBe(60);
    await reopened.close();
    failRename = false;
    await store.close();
  });

  it('opens a store written before the journal: records kept, pending outbox deliveries carried over', async () => {
    const paths = await tempLayout();
    const legacy = {
      schema_version: 1,
      counters: { users: 1, webhooks: 1 },
      users: [{ id: 1, ...userRecord('old@example.test') }],
      api_keys: [],
      subscriptions: [],
      sites: [],
      webhooks: [{ id: 1, user_id: 1, url: 'https://old.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 }],
      reset_tokens: [],
      limiter: [],
      settings: { login_max_attempts: 4 },
    };
    await writeFile(paths.store, JSON.stringify(legacy));
    const old = (id: string) => ({ id, endpoint_id: 1, event: 'site.created', body: '{}', state: 'pending', attempts: 0, next_attempt_at: 0, created_at: T0 });
    await writeFile(
      paths.outbox,
      [
        JSON.stringify({ t: 'e', event: { id: 'e1' }, deliveries: [old('d1'), old('d2')] }),
        JSON.stringify({ t: 'u', id: 'd1', state: 'succeeded', attempts: 1, next_attempt_at: 0 }),
        JSON.stringify({ t: 'u', id: 'd2', state: 'pending', attempts: 1, next_attempt_at: 5 }),
      ].join('\n') + '\n',
    );
    const store = await JsonStore.open(paths);
    expect((await store.users.byEmail('old@example.test'))?.id).toBe(1);
    expect((await store.settings.get()).login_max_attempts).toBe(4);
    expect(await store.outbox.get('d1')).toBeUndefined();
    expect(await store.outbox.get('d2')).toMatchObject({ attempts: 1, next_attempt_at: 5, owner_id: 1 });
    expect((await store.users.insert(userRecord('new@example.test'))).id).toBe(2);
    await store.close();
    const snapshot = JSON.parse(await readFile(paths.store, 'utf8'));
    expect(snapshot.schema_version).toBe(SCHEMA_VERSION);
    expect(typeof snapshot.journal_gen).toBe('number');
    await expect(readFile(paths.outbox)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('opens a schema 2 store (whole delivery records): pending deliveries carried over, rewritten per event with the body once', async () => {
    const paths = await tempLayout();
    const body = '{"event":"site.created","data":{"site_id":7}}';
    const testBody = '{"event":"webhook.test"}';
    const old = (id: string, endpoint: number, extra: object = {}) => ({ id, endpoint_id: endpoint, owner_id: 1, event: 'site.created', state: 'pending', attempts: 0, next_attempt_at: 0, created_at: T0, ...extra });
    const schema2 = {
      schema_version: 2,
      journal_gen: 1,
      counters: { users: 1, webhooks: 3 },
      users: [{ id: 1, ...userRecord('two@example.test') }],
      webhooks: [1, 2, 3].map((id) => ({ id, user_id: 1, url: `https://h${id}.test/`, secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 })),
      settings: {},
      outbox: [
        { body, d: [old('d1', 1), old('d2', 2, { attempts: 1, next_attempt_at: 5 })] },
        { body: testBody, d: [old('d3', 3, { event: 'webhook.test', manual: true })] },
      ],
    };
    const text = JSON.stringify(schema2);
    await writeFile(paths.store, text);
    const expected = (id: string, endpoint: number, extra: object = {}) => ({ ...old(id, endpoint, extra), body });
    const d3 = { ...old('d3', 3, { event: 'webhook.test', manual: true }), body: testBody };

    // A look without writing leaves the older file as it is.
    const look = await JsonStore.open(paths, { readOnly: true });
    expect(await look.outbox.get('d2')).toEqual(expected('d2', 2, { attempts: 1, next_attempt_at: 5 }));
    await look.close();
    expect(await readFile(paths.store, 'utf8')).toBe(text);

    const store = await JsonStore.open(paths);
    expect(await store.outbox.pendingCount()).toBe(3);
    expect(await store.outbox.get('d1')).toEqual(expected('d1', 1));
    expect(await store.outbox.get('d3')).toEqual(d3);
    const claimed = await store.outbox.claim({ owner: 'a', now: 10, leaseMs: 1000, limit: 10, perEndpoint: 10 });
    expect(claimed.map((d) => d.id).sort()).toEqual(['d1', 'd2', 'd3']);
    expect(claimed.find((d) => d.id === 'd2')).toEqual(expected('d2', 2, { attempts: 1, next_attempt_at: 5 }));
    await store.close();

    const rewritten = await readFile(paths.store, 'utf8');
    const snapshot = JSON.parse(rewritten);
    expect(snapshot.schema_version).toBe(SCHEMA_VERSION);
    expect(snapshot.outbox).toBeUndefined();
    expect(rewritten.split('site_id').length - 1).toBe(1);
    const reopened = await JsonStore.open(paths);
    expect(await reopened.outbox.get('d1')).toEqual(expected('d1', 1));
    expect(await reopened.outbox.get('d2')).toEqual(expected('d2', 2, { attempts: 1, next_attempt_at: 5 }));
    expect(await reopened.outbox.get('d3')).toEqual(d3);
    await reopened.close();
  });

  it('writes an event queued to many endpoints with its body once, in the journal and the snapshot', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    const user = await store.users.insert(userRecord('many@example.test'));
    const hooks = [];
    for (let i = 0; i < 20; i++) {
      hooks.push(await store.webhooks.insert({ user_id: user.id, url: `https://m${i}.test/`, secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 }));
    }
    const body = JSON.stringify({ event: 'site.created', data: { marker: 'once-only' } });
    const deliveries = hooks.map((hook, i) => ({ ...delivery(hook.id, user.id, 0), id: `many-${i}`, body }));
    await store.outbox.enqueue(eventRecord(), deliveries);
    expect((await journalText(paths)).split('once-only').length - 1).toBe(1);
    await store.close();
    expect((await readFile(paths.store, 'utf8')).split('once-only').length - 1).toBe(1);
    const reopened = await JsonStore.open(paths);
    for (const d of deliveries) expect(await reopened.outbox.get(d.id)).toEqual(d);
    await reopened.close();
  });

  it('runs migrations up to the current schema version and refuses newer documents', () => {
    const doc: Record<string, unknown> = { schema_version: 0, users: [{ id: 1 }] };
    const changed = migrate(doc, [{ to: 1, up: (d) => void ((d.users as Array<Record<string, unknown>>)[0].migrated = true) }], 1);
    expect(changed).toBe(true);
    expect(doc).toMatchObject({ schema_version: 1, users: [{ id: 1, migrated: true }], webhooks: [] });
    expect(() => migrate({ schema_version: SCHEMA_VERSION + 1 })).toThrow(/newer/);
  });

  it('under PANELCTL_STORE_CHECKS (set for the suite), a write through the store inside its own transaction fails at once instead of waiting for itself', async () => {
    expect(process.env.PANELCTL_STORE_CHECKS).toBe('1');
    const store = await JsonStore.open(await tempLayout(), { create: true });
    await expect(store.transaction(async () => store.users.insert(userRecord('nested@example.test')))).rejects.toThrow(/inside a transaction/);
    await expect(store.transaction(async () => store.transaction(async () => 1))).rejects.toThrow(/inside a transaction/);
    expect(await store.users.byEmail('nested@example.test')).toBeUndefined();
    await store.close();
  });

  it('files are 0600', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    await store.users.insert(userRecord('mode@example.test'));
    await store.close();
    const { stat } = await import('node:fs/promises');
    expect((await stat(paths.store)).mode & 0o777).toBe(0o600);
    for (const name of (await readdir(paths.root)).filter((n) => n.startsWith('journal-'))) {
      expect((await stat(join(paths.root, name))).mode & 0o777).toBe(0o600);
    }
  });
});

describe('JSON delivery logs', () => {
  it('one append of many entries to a new endpoint lists them newest first by id', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    const entries = Array.from({ length: 20 }, (_, i) => ({
      delivery_id: `d${i}`,
      endpoint_id: 4,
      event: 'site.created',
      payload: {},
      attempt: 1,
      status_code: 200,
      response: '',
      success: true,
      duration_ms: 1,
      created_at: T0,
      request_headers: {},
    }));
    const appended = await store.deliveryLog.append(entries);
    const listed = await store.deliveryLog.list(4);
    expect(listed.map((e) => e.id)).toEqual(appended.map((e) => e.id).reverse());
    await store.close();
  });
});

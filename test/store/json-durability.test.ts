// Nothing leaves the JSON store before the change that made it is durable: deliveries queued by a
// transaction whose journal line is still on its way to disk cannot be claimed or taken at
// publish (nor sent by a real dispatcher), a failed commit hands nothing out and lends its ids to
// no other record, a delivery log entry is announced only once its id is safe from reuse, and
// delivery log files are closed once idle (an idle daemon holds nothing of the data directory open).
import { mkdtemp, readdir, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { layout, type DataLayout } from '../../src/shared/paths.js';
import { realFileOps } from '../../src/store/json/file-ops.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import { StoreUnavailableError, type ClaimOptions } from '../../src/store/store.js';
import { Dispatcher } from '../../src/daemon/dispatcher/dispatcher.js';
import type { WebhookSender } from '../../src/daemon/dispatcher/sender.js';
import { delivery, eventRecord, userRecord } from './contract/suite.js';

const T0 = '2026-01-01T00:00:00.000Z';
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

async function tempLayout(): Promise<DataLayout> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-durable-'));
  dirs.push(dir);
  return layout(dir);
}

/**
 * A store whose fsyncs can be held (the commit is on its way to disk) and then let through or
 * failed, as a disk filling up would fail them.
 */
async function heldStore() {
  const paths = await tempLayout();
  let gate: { promise: Promise<void>; release: (error?: Error) => void } | null = null;
  let reached: (() => void) | null = null;
  const store = await JsonStore.open(paths, {
    create: true,
    fileOps: {
      async sync(handle) {
        const held = gate;
        if (held) {
          reached?.();
          await held.promise;
        }
        return realFileOps.sync(handle);
      },
    },
  });
  return {
    paths,
    store,
    /** Holds the next fsyncs; resolves the returned promise once one is waiting. */
    hold(): Promise<void> {
      let release!: (error?: Error) => void;
      const promise = new Promise<void>((resolve, reject) => (release = (error) => (error ? reject(error) : resolve())));
      promise.catch(() => undefined);
      gate = { promise, release };
      return new Promise<void>((resolve) => (reached = resolve));
    },
    letThrough(): void {
      const held = gate;
      gate = null;
      held?.release();
    },
    fail(): void {
      const held = gate;
      gate = null;
      held?.release(Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' }));
    },
  };
}

const claimAll = (now = Date.now()): ClaimOptions => ({ owner: 'test', now, leaseMs: 60_000, limit: 100, perEndpoint: 100 });

async function customerWithEndpoint(store: JsonStore) {
  const user = await store.users.insert(userRecord('owner@example.test'));
  const subscription = await store.subscriptions.insert({ customer_id: user.id, main_domain: 'owner.example', is_default: true, status: 'active', created_at: T0, updated_at: T0 });
  const endpoint = await store.webhooks.insert({
    user_id: user.id,
    url: 'https://receiver.example/hook',
    secret: 's',
    events: '*',
    active: true,
    created_at: T0,
    updated_at: T0,
  });
  return { user, subscription, endpoint };
}

describe('JSON store: nothing leaves before it is durable', () => {
  it('a delivery queued in a transaction is not claimable until its journal line is fsynced', async () => {
    const { store, hold, letThrough } = await heldStore();
    const { user, endpoint } = await customerWithEndpoint(store);
    const waiting = hold();
    const queued = delivery(endpoint.id, user.id, 0);
    const committed = store.transaction(async (tx) => tx.outbox.enqueue(eventRecord(), [queued]));
    await waiting; // in memory, on its way to disk
    expect(await store.outbox.get(queued.id)).toBeDefined();
    expect(await store.outbox.claim(claimAll())).toEqual([]);
    expect(await store.outbox.claim({ ...claimAll(), ids: [queued.id] })).toEqual([]);
    letThrough();
    await committed;
    expect((await store.outbox.claim(claimAll())).map((d) => d.id)).toEqual([queued.id]);
    await store.close();
  });

  it('a failed commit hands nothing out: its deliveries are never claimable, its site id goes to no other site, even after a restart', async () => {
    const { paths, store, hold, fail } = await heldStore();
    const { user, subscription } = await customerWithEndpoint(store);
    const waiting = hold();
    const failed = store.transaction(async (tx) => {
      const site = await tx.sites.insert({ subscription_id: subscription.id, domain: 'never.example', created_at: T0 });
      await tx.outbox.publish({ ...eventRecord(), owner_id: user.id }, { body: JSON.stringify({ site_id: site.id }), next_attempt_at: 0, created_at: T0 });
      return site;
    });
    await waiting;
    const [visible] = await store.sites.list();
    expect(visible.domain).toBe('never.example');
    expect(await store.outbox.claim(claimAll())).toEqual([]);
    fail();
    await expect(failed).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.outbox.claim(claimAll())).toEqual([]);
    expect(await store.outbox.pendingCount()).toBe(0);
    expect(await store.sites.list()).toEqual([]);

    // Another record's write carries the used id along; the next site, now and after a restart, gets a new one.
    await store.users.insert(userRecord('later@example.test'));
    const next = await store.sites.insert({ subscription_id: subscription.id, domain: 'next.example', created_at: T0 });
    expect(next.id).toBeGreaterThan(visible.id);
    await store.users.insert(userRecord('carrier@example.test'));
    await store.close();
    const reopened = await JsonStore.open(paths);
    expect((await reopened.sites.list()).map((s) => s.domain)).toEqual(['next.example']);
    await reopened.close();
  });

  it('a failed commit that is the last write before a restart still lends its id to no later site', async () => {
    const { paths, store, hold, fail } = await heldStore();
    const { subscription } = await customerWithEndpoint(store);
    const waiting = hold();
    const failed = store.sites.insert({ subscription_id: subscription.id, domain: 'lost.example', created_at: T0 });
    await waiting;
    const [visible] = await store.sites.list();
    fail();
    await expect(failed).rejects.toBeInstanceOf(StoreUnavailableError);
    await store.close();
    const reopened = await JsonStore.open(paths);
    const next = await reopened.sites.insert({ subscription_id: subscription.id, domain: 'after.example', created_at: T0 });
    expect(next.id).toBeGreaterThan(visible.id);
    await reopened.close();
  });

  it('a publish outside a transaction makes its deliveries claimable only once durable, and never when the commit fails', async () => {
    const { store, hold, letThrough, fail } = await heldStore();
    const { user } = await customerWithEndpoint(store);
    const event = () => ({ ...eventRecord(), owner_id: user.id });
    const template = { body: '{"event":"site.created"}', next_attempt_at: 0, created_at: T0 };

    let waiting = hold();
    const published = store.outbox.publish(event(), template);
    await waiting;
    expect(await store.outbox.claim(claimAll())).toEqual([]);
    letThrough();
    const queued = await published;
    expect((await store.outbox.claim(claimAll())).map((d) => d.id)).toEqual(queued.map((d) => d.id));

    waiting = hold();
    const refused = store.outbox.publish(event(), template);
    await waiting;
    expect(await store.outbox.claim(claimAll())).toEqual([]);
    fail();
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(await store.outbox.claim(claimAll())).toEqual([]);
    await store.close();
  });
});

describe('the dispatcher on a JSON store whose fsyncs are held', () => {
  it('sends nothing of a transaction before its fsync, and nothing ever of one that failed', async () => {
    const { store, hold, letThrough, fail } = await heldStore();
    const { user, subscription } = await customerWithEndpoint(store);
    const sent: string[] = [];
    const sender = {
      async send(_url: string, _headers: Record<string, string>, body: string) {
        sent.push((JSON.parse(body) as { domain: string }).domain);
        return { status_code: 200, response: 'ok', success: true, duration_ms: 1, reason: null };
      },
      async close() {},
    } as unknown as WebhookSender;
    // The claims the dispatcher makes: a window is judged by how often it looked, not by a sleep.
    let claims = 0;
    const claim = store.outbox.claim;
    store.outbox.claim = (options) => {
      claims++;
      return claim(options);
    };
    const dispatcher = new Dispatcher({ store, clock: Date.now, sender, allowPrivate: async () => true, pollMs: 20 });
    dispatcher.start();
    const createSite = (domain: string) =>
      store.transaction(async (tx) => {
        const site = await tx.sites.insert({ subscription_id: subscription.id, domain, created_at: T0 });
        await tx.outbox.publish({ ...eventRecord(), owner_id: user.id }, { body: JSON.stringify({ domain }), next_attempt_at: 0, created_at: T0 });
        return site;
      });
    const lookedAgain = async () => {
      const from = claims;
      await vi.waitFor(() => expect(claims).toBeGreaterThanOrEqual(from + 3), { timeout: 10_000, interval: 5 });
    };
    try {
      await createSite('first.example');
      await vi.waitFor(() => expect(sent).toEqual(['first.example']), { timeout: 10_000, interval: 5 });

      let waiting = hold();
      const slow = createSite('slow.example');
      await waiting;
      await lookedAgain();
      expect(sent).toEqual(['first.example']);
      letThrough();
      await slow;
      await vi.waitFor(() => expect(sent).toContain('slow.example'), { timeout: 10_000, interval: 5 });

      waiting = hold();
      const refused = createSite('refused.example');
      await waiting;
      await lookedAgain();
      fail();
      await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
      await createSite('after.example');
      await vi.waitFor(() => expect(sent).toContain('after.example'), { timeout: 10_000, interval: 5 });
      expect(sent).not.toContain('refused.example');
    } finally {
      letThrough(); // a failed expectation must not leave the stop waiting for a held fsync
      await dispatcher.stop();
      await store.close();
    }
  });
});

const logEntry = (endpointId: number, deliveryId = `d-${endpointId}`) => ({
  delivery_id: deliveryId,
  endpoint_id: endpointId,
  event: 'site.created',
  payload: {},
  attempt: 1,
  status_code: 200,
  response: '',
  success: true,
  duration_ms: 1,
  created_at: T0,
  request_headers: {},
});

describe('JSON delivery log ids', () => {
  it('an entry is announced only once its id cannot be given out again after a crash', async () => {
    const paths = await tempLayout();
    let journalFails = false;
    const store = await JsonStore.open(paths, {
      create: true,
      fileOps: {
        async open(path, flags, mode) {
          if (journalFails && basename(path).startsWith('journal-')) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
          return realFileOps.open(path, flags, mode);
        },
      },
    });
    const announced: number[] = [];
    store.changes.subscribe((change) => {
      if (change.kind === 'logged') announced.push(...change.ids);
    });
    journalFails = true;
    await store.deliveryLog.append([logEntry(1, 'refused')]).catch(() => undefined);
    journalFails = false;
    const kept = await store.deliveryLog.append([logEntry(1, 'kept-1'), logEntry(2, 'kept-2')]);
    expect(announced).toEqual(kept.map((e) => e.id));
    // No close: as after kill -9. Every id announced before is taken.
    const reopened = await JsonStore.open(paths);
    const after = await reopened.deliveryLog.append([logEntry(1, 'after'), logEntry(3, 'after-3')]);
    for (const entry of after) expect(announced).not.toContain(entry.id);
    expect(Math.min(...after.map((e) => e.id))).toBeGreaterThan(Math.max(...announced));
    await reopened.close();
  });
});

/** The delivery log files this process holds open (Linux: /proc/self/fd). */
async function openLogFiles(dir: string): Promise<string[]> {
  const open: string[] = [];
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target.startsWith(dir)) open.push(target);
  }
  return open;
}

describe.skipIf(process.platform !== 'linux')('JSON delivery logs when idle', () => {
  it('closes a delivery log file once nothing has been appended for a while, and reopens it for the next entry', async () => {
    const paths = await tempLayout();
    const store = await JsonStore.open(paths, { create: true });
    const entry = (endpointId: number) => ({
      delivery_id: `d-${endpointId}`,
      endpoint_id: endpointId,
      event: 'site.created',
      payload: {},
      attempt: 1,
      status_code: 200,
      response: '',
      success: true,
      duration_ms: 1,
      created_at: T0,
      request_headers: {},
    });
    await store.deliveryLog.append([entry(1), entry(2)]);
    expect(await openLogFiles(paths.deliveriesDir)).toHaveLength(2);
    await vi.waitFor(async () => expect(await openLogFiles(paths.deliveriesDir)).toEqual([]), { timeout: 10_000, interval: 50 });
    await store.deliveryLog.append([entry(1)]);
    expect((await store.deliveryLog.list(1)).map((e) => e.delivery_id)).toEqual(['d-1', 'd-1']);
    await vi.waitFor(async () => expect(await openLogFiles(paths.deliveriesDir)).toEqual([]), { timeout: 10_000, interval: 50 });
    await store.close();
  });
});

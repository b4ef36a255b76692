// The store contract, written against the Store interface only: every backend runs it (JSON
// here, PostgreSQL in contract-postgres.test.ts) and the backend that passes it is done.
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { computeHealth, healthFromSummary } from '../../../src/daemon/dispatcher/health.js';
import { DEFAULT_SETTINGS } from '../../../src/shared/settings.js';
import { payloadBody } from '../../../src/shared/events.js';
import { StoreConflictError, type Change, type ClaimOptions, type RecordEvent, type Repositories, type Store } from '../../../src/store/store.js';
import type { DeliveryLogEntry, DeliveryRecord, EventRecord, SubscriptionRecord, UserRecord } from '../../../src/store/types.js';

export interface ContractBackend {
  /** A fresh, empty store. */
  open(): Promise<Store>;
  /** A second handle on the same data, when the backend allows several (PostgreSQL); else null. */
  openAnother?(): Promise<Store>;
  /**
   * The store as the next start finds it after `store`'s daemon (or machine) crashed now: what
   * reached disk, the crashed process's memory gone. A lease the crashed daemon held may live
   * on until it ends.
   */
  crash(store: Store): Promise<Store>;
}

const T0 = '2026-01-01T00:00:00.000Z';

export function userRecord(email: string, role: UserRecord['role'] = 'customer'): Omit<UserRecord, 'id'> {
  return {
    email,
    name: email.split('@')[0],
    role,
    password_hash: 'scrypt$x',
    totp_secret: null,
    totp_pending_secret: null,
    two_factor_enabled: false,
    totp_last_step: null,
    created_at: T0,
    updated_at: T0,
  };
}

export function delivery(endpointId: number, ownerId: number | null, dueAt: number, extra: Partial<DeliveryRecord> = {}): DeliveryRecord {
  return {
    id: randomUUID(),
    endpoint_id: endpointId,
    owner_id: ownerId,
    event: 'site.created',
    body: '{"event":"site.created"}',
    state: 'pending',
    attempts: 0,
    next_attempt_at: dueAt,
    created_at: T0,
    ...extra,
  };
}

export function eventRecord(): EventRecord {
  return { id: randomUUID(), event: 'site.created', owner_id: null, data: {}, timestamp: T0 };
}

function logEntry(endpointId: number, extra: Partial<DeliveryLogEntry> = {}): Omit<DeliveryLogEntry, 'id'> {
  return {
    delivery_id: randomUUID(),
    endpoint_id: endpointId,
    event: 'site.created',
    payload: { event: 'site.created', data: { site_id: 1 } },
    attempt: 1,
    status_code: 200,
    response: 'ok',
    success: true,
    duration_ms: 5,
    created_at: T0,
    request_headers: { 'Content-Type': 'application/json' },
    ...extra,
  };
}

async function conflictOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(StoreConflictError);
    return (error as StoreConflictError).constraint;
  }
  throw new Error('expected a conflict');
}

export function describeStoreContract(name: string, backend: ContractBackend): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;
    const opened: Store[] = [];
    const open = async () => {
      const s = await backend.open();
      opened.push(s);
      return s;
    };
    beforeEach(async () => {
      store = await open();
    });
    afterEach(async () => {
      for (const s of opened.splice(0)) await s.close();
    });

    /** The store after a crash of `store` (see ContractBackend.crash). */
    const crash = async () => {
      const s = await backend.crash(store);
      opened.push(s);
      return s;
    };

    async function customerWithSubscription(email: string, domain: string) {
      const user = await store.users.insert(userRecord(email));
      const subscription = await store.subscriptions.insert({
        customer_id: user.id,
        main_domain: domain,
        is_default: false,
        status: 'active',
        created_at: T0,
        updated_at: T0,
      });
      return { user, subscription };
    }

    describe('users', () => {
      it('insert, get, byEmail (case-insensitive), list by id, count, update', async () => {
        const a = await store.users.insert(userRecord('a@example.test', 'admin'));
        const b = await store.users.insert(userRecord('b@example.test'));
        expect(b.id).toBeGreaterThan(a.id);
        expect(await store.users.get(a.id)).toEqual(a);
        expect((await store.users.byEmail('B@EXAMPLE.test'))?.id).toBe(b.id);
        expect(await store.users.byEmail('nobody@example.test')).toBeUndefined();
        expect((await store.users.list()).map((u) => u.id)).toEqual([a.id, b.id]);
        expect(await store.users.count()).toBe(2);
        const updated = await store.users.update(b.id, { name: 'Bee', token_generation: 3 });
        expect(updated).toMatchObject({ id: b.id, name: 'Bee', token_generation: 3, email: 'b@example.test' });
        expect(await store.users.get(b.id)).toEqual(updated);
        expect(await store.users.update(9999, { name: 'x' })).toBeUndefined();
      });

      it('refuses a second user with the same email, in any case, on insert and update', async () => {
        const a = await store.users.insert(userRecord('same@example.test'));
        expect(await conflictOf(store.users.insert(userRecord('SAME@example.test')))).toBe('users.email');
        const b = await store.users.insert(userRecord('other@example.test'));
        expect(await conflictOf(store.users.update(b.id, { email: 'same@example.test' }))).toBe('users.email');
        expect(await store.users.count()).toBe(2);
        expect((await store.users.get(a.id))?.email).toBe('same@example.test');
      });

      it('50 concurrent inserts with one email: exactly one succeeds, 49 conflict', async () => {
        const results = await Promise.allSettled(Array.from({ length: 50 }, () => store.users.insert(userRecord('race@example.test'))));
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const failures = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(failures).toHaveLength(49);
        for (const failure of failures) expect(failure.reason).toBeInstanceOf(StoreConflictError);
        expect((await store.users.list()).filter((u) => u.email === 'race@example.test')).toHaveLength(1);
      });

      it('remove cascades to keys, endpoints (with pending deliveries and logs), reset tokens, subscriptions and sites', async () => {
        const { user, subscription } = await customerWithSubscription('gone@example.test', 'gone.example');
        const { user: other, subscription: kept } = await customerWithSubscription('stay@example.test', 'stay.example');
        const site = await store.sites.insert({ subscription_id: subscription.id, domain: 'a.gone.example', created_at: T0 });
        const keptSite = await store.sites.insert({ subscription_id: kept.id, domain: 'a.stay.example', created_at: T0 });
        const key = await store.apiKeys.insert({ user_id: user.id, name: 'k', key_hash: 'h1', key_prefix: 'ncp_1', last_used_at: null, expires_at: null, created_at: T0 });
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://x.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const token = await store.resetTokens.insert({ user_id: user.id, token_hash: 't1', expires_at: '2099-01-01T00:00:00.000Z', used_at: null, created_at: T0 });
        const pending = delivery(hook.id, user.id, 0);
        await store.outbox.enqueue(eventRecord(), [pending]);
        await store.deliveryLog.append([logEntry(hook.id)]);

        expect((await store.users.remove(user.id))?.id).toBe(user.id);
        expect(await store.users.get(user.id)).toBeUndefined();
        expect(await store.apiKeys.get(key.id)).toBeUndefined();
        expect(await store.apiKeys.byHash('h1')).toBeUndefined();
        expect(await store.webhooks.get(hook.id)).toBeUndefined();
        expect(await store.resetTokens.byHash(token.token_hash)).toBeUndefined();
        expect(await store.subscriptions.get(subscription.id)).toBeUndefined();
        expect(await store.sites.get(site.id)).toBeUndefined();
        expect(await store.outbox.get(pending.id)).toBeUndefined();
        expect(await store.deliveryLog.list(hook.id)).toEqual([]);
        // The other customer's records stay.
        expect(await store.users.get(other.id)).toBeDefined();
        expect(await store.sites.get(keptSite.id)).toBeDefined();
        expect(await store.users.remove(user.id)).toBeUndefined();
      });
    });

    describe('api keys', () => {
      it('insert, get, byHash, listByUser, remove, touch to the second', async () => {
        const user = await store.users.insert(userRecord('keys@example.test'));
        const other = await store.users.insert(userRecord('other@example.test'));
        const base = { name: 'k', key_prefix: 'ncp_0123456789abcdef', last_used_at: null, expires_at: null, created_at: T0 };
        const k1 = await store.apiKeys.insert({ ...base, user_id: user.id, key_hash: 'a'.repeat(64) });
        const k2 = await store.apiKeys.insert({ ...base, user_id: user.id, key_hash: 'b'.repeat(64) });
        await store.apiKeys.insert({ ...base, user_id: other.id, key_hash: 'c'.repeat(64) });
        expect(await store.apiKeys.get(k1.id)).toEqual(k1);
        expect((await store.apiKeys.byHash('b'.repeat(64)))?.id).toBe(k2.id);
        expect((await store.apiKeys.listByUser(user.id)).map((k) => k.id)).toEqual([k1.id, k2.id]);
        await store.apiKeys.touch(k1.id, Date.parse('2026-03-01T10:00:00.750Z'));
        await store.flush();
        expect((await store.apiKeys.get(k1.id))?.last_used_at).toBe('2026-03-01T10:00:00.000Z');
        expect((await store.apiKeys.remove(k1.id))?.id).toBe(k1.id);
        expect(await store.apiKeys.byHash('a'.repeat(64))).toBeUndefined();
        expect(await store.apiKeys.remove(k1.id)).toBeUndefined();
      });

      it('callerByHash answers the key with its user, and nothing once either is removed (on any handle)', async () => {
        const user = await store.users.insert({ ...userRecord('caller@example.test', 'admin'), totp_last_step: 42, token_generation: 3 });
        const base = { name: 'k', key_prefix: 'ncp_0123456789abcdef', last_used_at: null, expires_at: '2099-01-01T00:00:00.000Z', created_at: T0 };
        const k1 = await store.apiKeys.insert({ ...base, user_id: user.id, key_hash: 'd'.repeat(64) });
        const k2 = await store.apiKeys.insert({ ...base, user_id: user.id, key_hash: 'e'.repeat(64) });
        expect(await store.apiKeys.callerByHash('d'.repeat(64))).toEqual({ key: k1, user });
        expect(await store.apiKeys.callerByHash('f'.repeat(64))).toBeUndefined();
        const another = backend.openAnother ? await backend.openAnother() : store;
        if (another !== store) opened.push(another);
        expect(await another.apiKeys.callerByHash('d'.repeat(64))).toEqual({ key: k1, user });
        await store.apiKeys.remove(k1.id);
        expect(await another.apiKeys.callerByHash('d'.repeat(64))).toBeUndefined();
        expect((await another.apiKeys.callerByHash('e'.repeat(64)))?.key.id).toBe(k2.id);
        await store.users.remove(user.id);
        expect(await another.apiKeys.callerByHash('e'.repeat(64))).toBeUndefined();
      });
    });

    describe('subscriptions and sites', () => {
      it('the first subscription is the default; a new default takes the mark from the old one', async () => {
        const user = await store.users.insert(userRecord('subs@example.test'));
        const sub = (domain: string, isDefault: boolean) =>
          store.subscriptions.insert({ customer_id: user.id, main_domain: domain, is_default: isDefault, status: 'active', created_at: T0, updated_at: T0 });
        const first = await sub('one.example', false);
        expect(first.is_default).toBe(true);
        const second = await sub('two.example', false);
        expect(second.is_default).toBe(false);
        expect((await store.subscriptions.defaultFor(user.id))?.id).toBe(first.id);
        const third = await sub('three.example', true);
        const mine = await store.subscriptions.listByCustomer(user.id);
        expect(mine.map((s) => [s.id, s.is_default])).toEqual([
          [first.id, false],
          [second.id, false],
          [third.id, true],
        ]);
        expect((await store.subscriptions.defaultFor(user.id))?.id).toBe(third.id);
        expect((await store.subscriptions.list()).map((s) => s.id)).toEqual([first.id, second.id, third.id]);
        const suspended = await store.subscriptions.update(second.id, { status: 'suspended', updated_at: T0 });
        expect(suspended?.status).toBe('suspended');
        expect(await store.subscriptions.defaultFor(9999)).toBeUndefined();
      });

      it('refuses a duplicate main domain, a customer that is not one, and another customer\'s site domain', async () => {
        const { user } = await customerWithSubscription('c1@example.test', 'taken.example');
        const admin = await store.users.insert(userRecord('admin@example.test', 'admin'));
        const sub = (customerId: number, domain: string) =>
          store.subscriptions.insert({ customer_id: customerId, main_domain: domain, is_default: false, status: 'active', created_at: T0, updated_at: T0 });
        expect(await conflictOf(sub(user.id, 'taken.example'))).toBe('subscriptions.main_domain');
        expect(await conflictOf(sub(admin.id, 'admin.example'))).toBe('users.customer');
        expect(await conflictOf(sub(9999, 'nobody.example'))).toBe('users.customer');
        const { subscription: s2 } = await customerWithSubscription('c2@example.test', 'c2.example');
        await store.sites.insert({ subscription_id: s2.id, domain: 'shop.example', created_at: T0 });
        expect(await conflictOf(sub(user.id, 'shop.example'))).toBe('domains.owner');
      });

      it('sites: insert, list by subscription, count, remove; unique domain and foreign main domains refused', async () => {
        const { subscription: s1 } = await customerWithSubscription('s1@example.test', 's1.example');
        const { subscription: s2 } = await customerWithSubscription('s2@example.test', 's2.example');
        const a = await store.sites.insert({ subscription_id: s1.id, domain: 'a.example', created_at: T0 });
        const b = await store.sites.insert({ subscription_id: s2.id, domain: 'b.example', created_at: T0 });
        // A customer's own main domain may be a site of theirs.
        const own = await store.sites.insert({ subscription_id: s1.id, domain: 's1.example', created_at: T0 });
        expect((await store.sites.listBySubscription(s1.id)).map((s) => s.id)).toEqual([a.id, own.id]);
        expect((await store.sites.list()).map((s) => s.id)).toEqual([a.id, b.id, own.id]);
        expect(await store.sites.count()).toBe(3);
        expect(await conflictOf(store.sites.insert({ subscription_id: s2.id, domain: 'a.example', created_at: T0 }))).toBe('sites.domain');
        expect(await conflictOf(store.sites.insert({ subscription_id: s2.id, domain: 's1.example', created_at: T0 }))).toBe('sites.domain');
        expect(await conflictOf(store.sites.insert({ subscription_id: s1.id, domain: 's2.example', created_at: T0 }))).toBe('domains.owner');
        expect(await conflictOf(store.sites.insert({ subscription_id: 9999, domain: 'z.example', created_at: T0 }))).toBe('subscriptions.missing');
        expect((await store.sites.remove(a.id))?.id).toBe(a.id);
        expect(await store.sites.get(a.id)).toBeUndefined();
        // The domain is free again.
        await store.sites.insert({ subscription_id: s2.id, domain: 'a.example', created_at: T0 });
      });

      it('50 concurrent site inserts with one domain: one success, 49 conflicts; the same for main domains', async () => {
        const { subscription } = await customerWithSubscription('race@example.test', 'race.example');
        const sites = await Promise.allSettled(
          Array.from({ length: 50 }, () => store.sites.insert({ subscription_id: subscription.id, domain: 'dup.example', created_at: T0 })),
        );
        expect(sites.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        expect(sites.filter((r) => r.status === 'rejected' && r.reason instanceof StoreConflictError)).toHaveLength(49);
        const customer = await store.users.insert(userRecord('race2@example.test'));
        const subs = await Promise.allSettled(
          Array.from({ length: 50 }, () =>
            store.subscriptions.insert({ customer_id: customer.id, main_domain: 'main.example', is_default: false, status: 'active', created_at: T0, updated_at: T0 }),
          ),
        );
        expect(subs.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        expect(subs.filter((r) => r.status === 'rejected' && r.reason instanceof StoreConflictError)).toHaveLength(49);
        expect((await store.subscriptions.listByCustomer(customer.id)).filter((s) => s.is_default)).toHaveLength(1);
      });

      describe('a write with its event in one step (create, delete, setStatus)', () => {
        const created = (event: string, idKey: string, data: Record<string, unknown>, at = 5_000, fields: string[] = []): RecordEvent => ({
          id: randomUUID(),
          event,
          timestamp: T0,
          next_attempt_at: at,
          idKey,
          data,
          fields,
        });
        /** Every pending delivery, claimed (each endpoint's first few, by endpoint then due order). */
        const pendingDeliveries = async () => {
          const owner = `peek-${randomUUID()}`;
          const claimed = await store.outbox.claim({ owner, now: 1e13, leaseMs: 1_000, limit: 1_000, perEndpoint: 100 });
          // The next peek is another claimer: hand the endpoints over (a shared store holds them).
          await store.outbox.leave(owner);
          return claimed.sort((a, b) => a.endpoint_id - b.endpoint_id);
        };
        const hook = (userId: number, events = '*') =>
          store.webhooks.insert({ user_id: userId, url: 'https://h.test/', secret: 's', events, active: true, created_at: T0, updated_at: T0 });

        it('sites.create: the named subscription or the default, the site, and its event to the customer\'s and admins\' endpoints with the exact payload', async () => {
          const admin = await store.users.insert(userRecord('cadmin@example.test', 'admin'));
          const { user, subscription: first } = await customerWithSubscription('cs1@example.test', 'cs1.example');
          const other = await store.users.insert(userRecord('cs2@example.test'));
          const second = await store.subscriptions.insert({ customer_id: user.id, main_domain: 'cs1b.example', is_default: false, status: 'active', created_at: T0, updated_at: T0 });
          const adminHook = await hook(admin.id);
          const mine = await hook(user.id, 'site.created');
          await hook(user.id, 'site.deleted');
          await hook(other.id);

          const event = created('site.created', 'site_id', { domain: 'a.cs1.example' });
          const site = await store.sites.create({ customer_id: user.id, domain: 'a.cs1.example', created_at: T0 }, event);
          expect(site).toStrictEqual({ id: site.id, subscription_id: first.id, domain: 'a.cs1.example', created_at: T0 });
          expect(await store.sites.get(site.id)).toStrictEqual(site);
          const body = payloadBody('site.created', T0, { site_id: site.id, domain: 'a.cs1.example' });
          const deliveries = await pendingDeliveries();
          expect(deliveries.map((d) => [d.endpoint_id, d.owner_id])).toEqual([
            [adminHook.id, admin.id],
            [mine.id, user.id],
          ]);
          for (const d of deliveries) {
            expect(d).toMatchObject({ event: 'site.created', body, state: 'pending', attempts: 0, next_attempt_at: 5_000, created_at: T0 });
          }

          // Named: that subscription, the customer's own; an admin names any.
          const named = await store.sites.create({ subscription_id: second.id, customer_id: user.id, domain: 'b.cs1.example', created_at: T0 }, created('site.created', 'site_id', { domain: 'b.cs1.example' }));
          expect(named.subscription_id).toBe(second.id);
          const byAdmin = await store.sites.create({ subscription_id: first.id, customer_id: null, domain: 'c.cs1.example', created_at: T0 }, created('site.created', 'site_id', { domain: 'c.cs1.example' }));
          expect(byAdmin.subscription_id).toBe(first.id);
          expect((await store.sites.listBySubscription(first.id)).map((s) => s.domain)).toEqual(['a.cs1.example', 'c.cs1.example']);
          // The admin's site's event is still the customer's: their endpoint gets it.
          const owners = (await pendingDeliveries()).filter((d) => d.body.includes(`"site_id":${byAdmin.id},`)).map((d) => d.endpoint_id);
          expect(owners).toEqual([adminHook.id, mine.id]);
        });

        it('sites.create refuses with nothing written: missing, another customer\'s, none, suspended subscriptions, taken and foreign domains', async () => {
          const { user, subscription } = await customerWithSubscription('cr1@example.test', 'cr1.example');
          const { subscription: foreign } = await customerWithSubscription('cr2@example.test', 'cr2.example');
          const loner = await store.users.insert(userRecord('cr3@example.test'));
          await hook(user.id);
          await store.sites.insert({ subscription_id: subscription.id, domain: 'taken.cr.example', created_at: T0 });
          const attempt = (site: { subscription_id?: number; customer_id: number | null; domain: string }) =>
            store.sites.create({ ...site, created_at: T0 }, created('site.created', 'site_id', { domain: site.domain }));

          expect(await conflictOf(attempt({ subscription_id: 99_999, customer_id: user.id, domain: 'x1.example' }))).toBe('subscriptions.missing');
          expect(await conflictOf(attempt({ subscription_id: foreign.id, customer_id: user.id, domain: 'x2.example' }))).toBe('subscriptions.forbidden');
          expect(await conflictOf(attempt({ customer_id: loner.id, domain: 'x3.example' }))).toBe('subscriptions.none');
          expect(await conflictOf(attempt({ customer_id: user.id, domain: 'taken.cr.example' }))).toBe('sites.domain');
          expect(await conflictOf(attempt({ customer_id: user.id, domain: 'cr2.example' }))).toBe('domains.owner');
          await store.subscriptions.update(subscription.id, { status: 'suspended', updated_at: T0 });
          const suspended = await attempt({ customer_id: user.id, domain: 'x4.example' }).catch((e: unknown) => e);
          expect(suspended).toBeInstanceOf(StoreConflictError);
          expect(suspended).toMatchObject({ constraint: 'subscriptions.inactive', message: `subscription ${subscription.id} is suspended and accepts no new sites` });

          expect((await store.sites.list()).map((s) => s.domain)).toEqual(['taken.cr.example']);
          expect(await store.outbox.pendingCount()).toBe(0);
        });

        it('subscriptions.create: the subscription (the first one the default) and its event, or a conflict with nothing written', async () => {
          const admin = await store.users.insert(userRecord('csadmin@example.test', 'admin'));
          const user = await store.users.insert(userRecord('csub@example.test'));
          const adminHook = await hook(admin.id);
          const mine = await hook(user.id, 'subscription.created');
          const make = (customerId: number, domain: string, isDefault = false) =>
            store.subscriptions.create(
              { customer_id: customerId, main_domain: domain, is_default: isDefault, status: 'active', created_at: T0, updated_at: T0 },
              created('subscription.created', 'subscription_id', { main_domain: domain }),
            );
          const first = await make(user.id, 'csub1.example');
          expect(first).toStrictEqual({ id: first.id, customer_id: user.id, main_domain: 'csub1.example', is_default: true, status: 'active', created_at: T0, updated_at: T0 });
          const deliveries = await pendingDeliveries();
          expect(deliveries.map((d) => [d.endpoint_id, d.owner_id])).toEqual([
            [adminHook.id, admin.id],
            [mine.id, user.id],
          ]);
          const body = payloadBody('subscription.created', T0, { subscription_id: first.id, main_domain: 'csub1.example' });
          for (const d of deliveries) expect(d).toMatchObject({ event: 'subscription.created', body });
          const second = await make(user.id, 'csub2.example', true);
          expect(second.is_default).toBe(true);
          expect((await store.subscriptions.get(first.id))!.is_default).toBe(false);

          expect(await conflictOf(make(user.id, 'csub1.example'))).toBe('subscriptions.main_domain');
          expect(await conflictOf(make(admin.id, 'csub3.example'))).toBe('users.customer');
          expect(await conflictOf(make(99_999, 'csub4.example'))).toBe('users.customer');
          expect((await store.subscriptions.list()).map((s) => s.id)).toEqual([first.id, second.id]);
          expect(await store.outbox.pendingCount()).toBe(4);
        });

        it('sites.delete: the customer\'s own site (an admin any) with its event carrying the removed domain; refusals write nothing', async () => {
          const admin = await store.users.insert(userRecord('dladmin@example.test', 'admin'));
          const { user, subscription } = await customerWithSubscription('dl1@example.test', 'dl1.example');
          const { user: other } = await customerWithSubscription('dl2@example.test', 'dl2.example');
          const adminHook = await hook(admin.id);
          const mine = await hook(user.id, 'site.deleted');
          const a = await store.sites.insert({ subscription_id: subscription.id, domain: 'a.dl1.example', created_at: T0 });
          const b = await store.sites.insert({ subscription_id: subscription.id, domain: 'b.dl1.example', created_at: T0 });
          const removing = () => created('site.deleted', 'site_id', {}, 7_000, ['domain']);

          expect(await conflictOf(store.sites.delete(a.id, other.id, removing()))).toBe('sites.forbidden');
          expect(await conflictOf(store.sites.delete(99_999, user.id, removing()))).toBe('sites.missing');
          expect(await store.sites.get(a.id)).toStrictEqual(a);
          expect(await store.outbox.pendingCount()).toBe(0);

          expect(await store.sites.delete(a.id, user.id, removing())).toStrictEqual(a);
          expect(await store.sites.get(a.id)).toBeUndefined();
          const body = payloadBody('site.deleted', T0, { site_id: a.id, domain: 'a.dl1.example' });
          const deliveries = await pendingDeliveries();
          expect(deliveries.map((d) => [d.endpoint_id, d.owner_id])).toEqual([
            [adminHook.id, admin.id],
            [mine.id, user.id],
          ]);
          for (const d of deliveries) expect(d).toMatchObject({ event: 'site.deleted', body, next_attempt_at: 7_000 });
          expect(await conflictOf(store.sites.delete(a.id, user.id, removing()))).toBe('sites.missing');
          // An admin removes any site; its event is still the customer's.
          expect((await store.sites.delete(b.id, null, removing())).id).toBe(b.id);
          expect((await pendingDeliveries()).filter((d) => d.body.includes(`"site_id":${b.id},`)).map((d) => d.endpoint_id)).toEqual([adminHook.id, mine.id]);
        });

        it('subscriptions.setStatus: the status with its event, once however many ask at once; missing and unchanged refused', async () => {
          const admin = await store.users.insert(userRecord('ssadmin@example.test', 'admin'));
          const { user, subscription } = await customerWithSubscription('ss@example.test', 'ss.example');
          const adminHook = await hook(admin.id);
          const suspending = () => created('subscription.suspended', 'subscription_id', {}, 8_000, ['main_domain']);
          const at = '2026-02-01T00:00:00.000Z';
          expect(await conflictOf(store.subscriptions.setStatus(99_999, 'suspended', at, suspending()))).toBe('subscriptions.missing');
          const results = await Promise.allSettled(Array.from({ length: 10 }, () => store.subscriptions.setStatus(subscription.id, 'suspended', at, suspending())));
          const done = results.filter((r) => r.status === 'fulfilled') as PromiseFulfilledResult<SubscriptionRecord>[];
          expect(done).toHaveLength(1);
          expect(done[0].value).toStrictEqual({ ...subscription, status: 'suspended', updated_at: at });
          expect(results.filter((r) => r.status === 'rejected' && (r.reason as StoreConflictError).constraint === 'subscriptions.status')).toHaveLength(9);
          expect(await store.subscriptions.get(subscription.id)).toStrictEqual(done[0].value);
          const deliveries = await pendingDeliveries();
          expect(deliveries.map((d) => [d.endpoint_id, d.owner_id])).toEqual([[adminHook.id, admin.id]]);
          expect(deliveries[0]).toMatchObject({
            event: 'subscription.suspended',
            body: payloadBody('subscription.suspended', T0, { subscription_id: subscription.id, main_domain: 'ss.example' }),
          });
          expect(user.id).toBe(subscription.customer_id);
        });

        it('50 concurrent site creates with one domain: one site with one event, 49 conflicts', async () => {
          const { user } = await customerWithSubscription('crace@example.test', 'crace.example');
          await hook(user.id);
          const results = await Promise.allSettled(
            Array.from({ length: 50 }, () =>
              store.sites.create({ customer_id: user.id, domain: 'once.crace.example', created_at: T0 }, created('site.created', 'site_id', { domain: 'once.crace.example' })),
            ),
          );
          expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
          expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof StoreConflictError)).toHaveLength(49);
          expect(await store.outbox.pendingCount()).toBe(1);
        });

        it('concurrent site creates are each answered as if alone: new domains made with their events, the rule and uniqueness kept', async () => {
          const { user } = await customerWithSubscription('cmix@example.test', 'cmix.example');
          const { user: other } = await customerWithSubscription('cmix-other@example.test', 'foreign.cmix.example');
          await hook(user.id);
          await store.sites.create({ customer_id: user.id, domain: 'taken.cmix.example', created_at: T0 }, created('site.created', 'site_id', { domain: 'taken.cmix.example' }));
          const fresh = Array.from({ length: 20 }, (_, i) => `n${i}.cmix.example`);
          // Each fresh domain asked twice, the taken one, another customer's main domain, all at once.
          const domains = [...fresh, ...fresh, 'taken.cmix.example', 'foreign.cmix.example'];
          const results = await Promise.allSettled(
            domains.map((domain) => store.sites.create({ customer_id: user.id, domain, created_at: T0 }, created('site.created', 'site_id', { domain }))),
          );
          const made = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
          expect(made.map((site) => site.domain).sort()).toEqual([...fresh].sort());
          const refused = results.flatMap((r, i) => (r.status === 'rejected' ? [[domains[i], (r.reason as StoreConflictError).constraint]] : []));
          expect(refused.filter(([, constraint]) => constraint === 'sites.domain').map(([domain]) => domain).sort()).toEqual([...fresh, 'taken.cmix.example'].sort());
          expect(refused.filter(([, constraint]) => constraint !== 'sites.domain')).toEqual([['foreign.cmix.example', 'domains.owner']]);
          for (const site of made) expect(await store.sites.get(site.id)).toStrictEqual(site);
          expect(new Set(made.map((site) => site.id)).size).toBe(fresh.length);
          // One event (and delivery) per site made: the one taken before and the twenty.
          expect(await store.outbox.pendingCount()).toBe(fresh.length + 1);
          expect(other.id).not.toBe(user.id);
        });

        it('inside a transaction it commits with it, or leaves nothing when the transaction throws', async () => {
          const { user } = await customerWithSubscription('ctx@example.test', 'ctx.example');
          await hook(user.id);
          const make = (tx: Repositories, domain: string) =>
            tx.sites.create({ customer_id: user.id, domain, created_at: T0 }, created('site.created', 'site_id', { domain }));
          await expect(
            store.transaction(async (tx) => {
              await make(tx, 'gone.ctx.example');
              throw new Error('changed my mind');
            }),
          ).rejects.toThrow('changed my mind');
          expect(await store.sites.count()).toBe(0);
          expect(await store.outbox.pendingCount()).toBe(0);
          // A conflict caught inside the transaction leaves the rest of it to commit.
          const site = await store.transaction(async (tx) => {
            const made = await make(tx, 'kept.ctx.example');
            expect(await conflictOf(make(tx, 'kept.ctx.example'))).toBe('sites.domain');
            return made;
          });
          expect(await store.sites.get(site.id)).toStrictEqual(site);
          expect(await store.outbox.pendingCount()).toBe(1);
        });
      });

      it('removing a subscription removes its sites', async () => {
        const { subscription } = await customerWithSubscription('rm@example.test', 'rm.example');
        const site = await store.sites.insert({ subscription_id: subscription.id, domain: 'x.rm.example', created_at: T0 });
        expect((await store.subscriptions.remove(subscription.id))?.id).toBe(subscription.id);
        expect(await store.sites.get(site.id)).toBeUndefined();
      });
    });

    describe('webhooks', () => {
      it('insert, get, list, listByUser, update, count; subscribedTo honours activity, events and tenancy', async () => {
        const admin = await store.users.insert(userRecord('admin@example.test', 'admin'));
        const c1 = await store.users.insert(userRecord('c1@example.test'));
        const c2 = await store.users.insert(userRecord('c2@example.test'));
        const hook = (userId: number, events: string, active = true) =>
          store.webhooks.insert({ user_id: userId, url: 'https://h.test/', secret: 's', events, active, created_at: T0, updated_at: T0 });
        const all = await hook(admin.id, '*');
        const mine = await hook(c1.id, 'site.created,site.deleted');
        const other = await hook(c2.id, '*');
        const inactive = await hook(c1.id, '*', false);
        const unrelated = await hook(c1.id, 'backup.completed');
        expect(await store.webhooks.count()).toBe(5);
        expect((await store.webhooks.list()).map((w) => w.id)).toEqual([all.id, mine.id, other.id, inactive.id, unrelated.id]);
        expect((await store.webhooks.listByUser(c1.id)).map((w) => w.id)).toEqual([mine.id, inactive.id, unrelated.id]);
        expect((await store.webhooks.subscribedTo('site.created', c1.id)).map((w) => w.id)).toEqual([all.id, mine.id]);
        expect((await store.webhooks.subscribedTo('site.created', null)).map((w) => w.id)).toEqual([all.id]);
        const updated = await store.webhooks.update(inactive.id, { active: true, updated_at: T0 });
        expect(updated?.active).toBe(true);
        expect((await store.webhooks.subscribedTo('site.created', c1.id)).map((w) => w.id)).toEqual([all.id, mine.id, inactive.id]);
        expect(await store.webhooks.get(other.id)).toEqual(other);
        expect(await store.webhooks.getMany([unrelated.id, all.id, 999_999, all.id])).toEqual([all, unrelated]);
        expect(await store.webhooks.getMany([])).toEqual([]);
      });

      it('list and listByUser read a stretch in id order: past `after`, at most `limit`', async () => {
        const a = await store.users.insert(userRecord('range-a@example.test'));
        const b = await store.users.insert(userRecord('range-b@example.test'));
        const hooks = [];
        for (let i = 0; i < 6; i++) hooks.push(await store.webhooks.insert({ user_id: i % 2 ? b.id : a.id, url: `https://h${i}.test/`, secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 }));
        const ids = (records: Array<{ id: number }>) => records.map((r) => r.id);
        const ofA = hooks.filter((h) => h.user_id === a.id).map((h) => h.id);
        expect(ids(await store.webhooks.listByUser(a.id))).toEqual(ofA);
        expect(ids(await store.webhooks.listByUser(a.id, { limit: 2 }))).toEqual(ofA.slice(0, 2));
        expect(ids(await store.webhooks.listByUser(a.id, { after: ofA[0] }))).toEqual(ofA.slice(1));
        expect(ids(await store.webhooks.listByUser(a.id, { after: ofA[0], limit: 1 }))).toEqual([ofA[1]]);
        expect(ids(await store.webhooks.listByUser(a.id, { after: ofA[2] }))).toEqual([]);
        const all = ids(await store.webhooks.list());
        expect(ids(await store.webhooks.list({ after: hooks[1].id, limit: 3 }))).toEqual(all.slice(all.indexOf(hooks[1].id) + 1, all.indexOf(hooks[1].id) + 4));
      });

      it('matching follows every change: create, update of events and activity, delete, user delete, rollback; tenancy exact', async () => {
        const admin = await store.users.insert(userRecord('madmin@example.test', 'admin'));
        const c1 = await store.users.insert(userRecord('m1@example.test'));
        const c2 = await store.users.insert(userRecord('m2@example.test'));
        const hook = (userId: number, events: string, active = true) =>
          store.webhooks.insert({ user_id: userId, url: 'https://h.test/', secret: 's', events, active, created_at: T0, updated_at: T0 });
        const template = { body: '{}', next_attempt_at: 1, created_at: T0 };
        // Both ways an event finds its endpoints: the query and the publish that queues deliveries.
        const matched = async (event: string, ownerId: number | null) => {
          const named = (await store.webhooks.subscribedTo(event, ownerId)).map((w) => w.id);
          const queued = (await store.outbox.publish({ ...eventRecord(), event, owner_id: ownerId }, template)).map((q) => q.endpoint_id);
          expect(queued).toEqual(named);
          return named;
        };
        // Many endpoints that never match, of both customers, around the ones that do.
        for (let i = 0; i < 30; i++) await hook(i % 2 ? c1.id : c2.id, 'backup.completed');
        const adminAll = await hook(admin.id, '*');
        const adminNamed = await hook(admin.id, 'site.deleted');
        const mine = await hook(c1.id, 'site.created');
        const mineAll = await hook(c1.id, '*');
        const theirs = await hook(c2.id, 'site.created,site.deleted');
        const theirsAll = await hook(c2.id, '*');
        expect(await matched('site.created', c1.id)).toEqual([adminAll.id, mine.id, mineAll.id]);
        expect(await matched('site.created', c2.id)).toEqual([adminAll.id, theirs.id, theirsAll.id]);
        expect(await matched('site.deleted', c1.id)).toEqual([adminAll.id, adminNamed.id, mineAll.id]);
        expect(await matched('site.deleted', null)).toEqual([adminAll.id, adminNamed.id]);
        // An admin's own event: their endpoints once each.
        expect(await matched('site.deleted', admin.id)).toEqual([adminAll.id, adminNamed.id]);

        // Update of the events: the old name stops matching, the new one starts.
        await store.webhooks.update(mine.id, { events: 'site.deleted', updated_at: T0 });
        expect(await matched('site.created', c1.id)).toEqual([adminAll.id, mineAll.id]);
        expect(await matched('site.deleted', c1.id)).toEqual([adminAll.id, adminNamed.id, mine.id, mineAll.id]);
        // A change that is not of events or activity leaves matching as it was.
        await store.webhooks.update(mine.id, { url: 'https://other.test/', secret: 't', updated_at: T0 });
        expect(await matched('site.deleted', c1.id)).toEqual([adminAll.id, adminNamed.id, mine.id, mineAll.id]);
        // Deactivated: not matched; active again: matched, with the events it had.
        await store.webhooks.update(mineAll.id, { active: false, updated_at: T0 });
        await store.webhooks.update(adminAll.id, { active: false, updated_at: T0 });
        expect(await matched('site.created', c1.id)).toEqual([]);
        await store.webhooks.update(mineAll.id, { active: true, updated_at: T0 });
        expect(await matched('site.created', c1.id)).toEqual([mineAll.id]);
        // Created inactive, then activated together with new events.
        const later = await hook(c1.id, 'site.created', false);
        expect(await matched('site.created', c1.id)).toEqual([mineAll.id]);
        await store.webhooks.update(later.id, { active: true, events: 'site.created,user.deleted', updated_at: T0 });
        expect(await matched('user.deleted', c1.id)).toEqual([mineAll.id, later.id]);

        // An endpoint made in a transaction that throws is never matched.
        await expect(
          store.transaction(async (tx) => {
            await tx.webhooks.insert({ user_id: c1.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
            await tx.webhooks.update(mineAll.id, { active: false, updated_at: T0 });
            throw new Error('rolled back');
          }),
        ).rejects.toThrow('rolled back');
        expect(await matched('site.created', c1.id)).toEqual([mineAll.id, later.id]);

        // Deleted: no longer matched.
        await store.webhooks.remove(later.id);
        expect(await matched('site.created', c1.id)).toEqual([mineAll.id]);
        // A deleted user's endpoints go with them; an admin's deletion also ends their share of others' events.
        await store.users.remove(c2.id);
        expect(await matched('site.created', c2.id)).toEqual([]);
        expect(await matched('site.deleted', c1.id)).toEqual([adminNamed.id, mine.id, mineAll.id]);
        await store.users.remove(admin.id);
        expect(await matched('site.deleted', c1.id)).toEqual([mine.id, mineAll.id]);
        expect(await matched('site.deleted', null)).toEqual([]);
        // A customer made admin receives every customer's events; made customer again, only their own.
        const c3 = await store.users.insert(userRecord('m3@example.test'));
        const c3Hook = await hook(c3.id, 'site.deleted');
        expect(await matched('site.deleted', c1.id)).toEqual([mine.id, mineAll.id]);
        await store.users.update(c3.id, { role: 'admin', updated_at: T0 });
        expect(await matched('site.deleted', c1.id)).toEqual([mine.id, mineAll.id, c3Hook.id]);
        await store.users.update(c3.id, { role: 'customer', updated_at: T0 });
        expect(await matched('site.deleted', c1.id)).toEqual([mine.id, mineAll.id]);
      });

      it('an endpoint change on one handle is matched by the next publish on another', async () => {
        const other = backend.openAnother ? await backend.openAnother() : store;
        if (other !== store) opened.push(other);
        const user = await store.users.insert(userRecord('mh@example.test'));
        const template = { body: '{}', next_attempt_at: 1, created_at: T0 };
        const endpointsOf = async (s: Store) =>
          (await s.outbox.publish({ ...eventRecord(), owner_id: user.id }, template)).map((q) => q.endpoint_id);
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: 'site.created', active: true, created_at: T0, updated_at: T0 });
        expect(await endpointsOf(other)).toEqual([hook.id]);
        await store.webhooks.update(hook.id, { events: 'site.deleted', updated_at: T0 });
        expect(await endpointsOf(other)).toEqual([]);
        await other.webhooks.update(hook.id, { events: '*', updated_at: T0 });
        expect(await endpointsOf(store)).toEqual([hook.id]);
        await other.webhooks.remove(hook.id);
        expect(await endpointsOf(store)).toEqual([]);
      });

      it('remove takes the endpoint\'s pending deliveries and log with it', async () => {
        const user = await store.users.insert(userRecord('wh@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const d = delivery(hook.id, user.id, 0);
        await store.outbox.enqueue(eventRecord(), [d]);
        await store.deliveryLog.append([logEntry(hook.id)]);
        expect((await store.webhooks.remove(hook.id))?.id).toBe(hook.id);
        expect(await store.outbox.get(d.id)).toBeUndefined();
        expect(await store.outbox.pendingCount()).toBe(0);
        expect(await store.deliveryLog.list(hook.id)).toEqual([]);
        expect(await store.webhooks.remove(hook.id)).toBeUndefined();
      });
    });

    describe('reset and revoked tokens', () => {
      it('a reset token is spent once, even by concurrent uses; removeForUser also drops expired ones', async () => {
        const user = await store.users.insert(userRecord('rt@example.test'));
        const other = await store.users.insert(userRecord('rt2@example.test'));
        const token = await store.resetTokens.insert({ user_id: user.id, token_hash: 'hash-1', expires_at: '2099-01-01T00:00:00.000Z', used_at: null, created_at: T0 });
        await store.resetTokens.insert({ user_id: other.id, token_hash: 'hash-old', expires_at: '2020-01-01T00:00:00.000Z', used_at: null, created_at: T0 });
        await store.resetTokens.insert({ user_id: other.id, token_hash: 'hash-live', expires_at: '2099-01-01T00:00:00.000Z', used_at: null, created_at: T0 });
        expect((await store.resetTokens.byHash('hash-1'))?.id).toBe(token.id);
        const uses = await Promise.all(Array.from({ length: 10 }, () => store.resetTokens.markUsed(token.id, T0)));
        expect(uses.filter(Boolean)).toHaveLength(1);
        expect((await store.resetTokens.byHash('hash-1'))?.used_at).toBe(T0);
        await store.resetTokens.removeForUser(user.id, Date.parse('2026-06-01T00:00:00Z'));
        expect(await store.resetTokens.byHash('hash-1')).toBeUndefined();
        expect(await store.resetTokens.byHash('hash-old')).toBeUndefined();
        expect(await store.resetTokens.byHash('hash-live')).toBeDefined();
      });

      it('revoked tokens are known until pruned after their expiry', async () => {
        await store.revokedTokens.revoke('jti-1', 1_000);
        await store.revokedTokens.revoke('jti-2', 5_000);
        expect(await store.revokedTokens.isRevoked('jti-1')).toBe(true);
        expect(await store.revokedTokens.isRevoked('jti-3')).toBe(false);
        await store.revokedTokens.prune(2_000);
        expect(await store.revokedTokens.isRevoked('jti-1')).toBe(false);
        expect(await store.revokedTokens.isRevoked('jti-2')).toBe(true);
      });

      it('a revocation is announced on the change feed (of another store of the database, too)', async () => {
        const other = backend.openAnother ? await backend.openAnother() : store;
        if (other !== store) opened.push(other);
        let heard!: () => void;
        const announced = new Promise<void>((resolve) => (heard = resolve));
        const unsubscribe = other.changes.subscribe((change) => change.kind === 'record' && change.collection === 'revoked_tokens' && heard());
        await store.revokedTokens.revoke('jti-announced', 9_000);
        await announced;
        unsubscribe();
      });
    });

    describe('limiter', () => {
      it('hit counts in a fixed window and starts a new one when it ends', async () => {
        expect((await store.limiter.hit('k', 1000, 10_000)).count).toBe(1);
        expect((await store.limiter.hit('k', 1000, 10_500)).count).toBe(2);
        const fresh = await store.limiter.hit('k', 1000, 11_000);
        expect(fresh).toMatchObject({ count: 1, window_start: 11_000, locked_until: 0 });
        expect((await store.limiter.get('k'))?.count).toBe(1);
      });

      it('100 concurrent hits count to exactly 100', async () => {
        const counts = await Promise.all(Array.from({ length: 100 }, () => store.limiter.hit('burst', 60_000, 1_000)));
        expect(counts.map((r) => r.count).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
        expect((await store.limiter.get('burst'))?.count).toBe(100);
      });

      it('100 concurrent request-window hits (on two handles when there are two) answer 1..100 each once, in order per handle', async () => {
        const other = backend.openAnother ? await backend.openAnother() : store;
        if (other !== store) opened.push(other);
        const hits = Array.from({ length: 100 }, (_, i) => (i % 2 ? other : store).limiter.countRequest('soft', 60_000, 1_000));
        const counts = (await Promise.all(hits)).map((r) => r.count);
        expect([...counts].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
        for (const parity of [0, 1]) {
          const mine = counts.filter((_, i) => i % 2 === parity);
          expect(mine).toEqual([...mine].sort((a, b) => a - b));
        }
        expect((await store.limiter.get('soft'))?.count).toBe(100);
        // Once the window has ended, a burst starts a new one: 1..10 again.
        const fresh = await Promise.all(Array.from({ length: 10 }, () => store.limiter.countRequest('soft', 60_000, 61_000)));
        expect(fresh.map((r) => r.count)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
        expect(fresh.every((r) => r.window_start === 61_000)).toBe(true);
        expect((await other.limiter.get('soft'))?.count).toBe(10);
      });

      it('a lockout hit survives a crash once answered; request-window counts once flushed (a crash may forget the unflushed)', async () => {
        for (let i = 0; i < 3; i++) await store.limiter.countRequest('window', 60_000, 1_000);
        await store.flush();
        // The last write before the crash: durable on its own, nothing later carries it to disk.
        await store.limiter.hit('lockout', 60_000, 1_000);
        const after = await crash();
        expect(await after.limiter.get('window')).toEqual({ key: 'window', count: 3, window_start: 1_000, locked_until: 0 });
        expect(await after.limiter.get('lockout')).toEqual({ key: 'lockout', count: 1, window_start: 1_000, locked_until: 0 });
        expect((await after.limiter.countRequest('window', 60_000, 2_000)).count).toBe(4);
      });

      it('a request window and a lockout counter of one key are one count (countRequest is hit written lazily)', async () => {
        await store.limiter.hit('both', 60_000, 1_000);
        expect((await store.limiter.countRequest('both', 60_000, 1_500)).count).toBe(2);
        expect((await store.limiter.hit('both', 60_000, 1_600)).count).toBe(3);
        // A lock holds a request window too, and its end starts a new one.
        await store.limiter.lock('both', 5_000);
        expect(await store.limiter.countRequest('both', 60_000, 2_000)).toMatchObject({ count: 4, locked_until: 5_000 });
        expect(await store.limiter.countRequest('both', 60_000, 5_000)).toEqual({ key: 'both', count: 1, window_start: 5_000, locked_until: 0 });
      });

      it('release takes back a hit; lock holds until its time, then a hit starts afresh', async () => {
        await store.limiter.hit('l', 60_000, 1_000);
        await store.limiter.hit('l', 60_000, 1_000);
        await store.limiter.release('l');
        expect((await store.limiter.get('l'))?.count).toBe(1);
        const locked = await store.limiter.lock('l', 5_000);
        expect(locked.locked_until).toBe(5_000);
        expect((await store.limiter.lock('l', 3_000)).locked_until).toBe(5_000);
        expect((await store.limiter.hit('l', 60_000, 2_000)).locked_until).toBe(5_000);
        expect(await store.limiter.hit('l', 60_000, 5_000)).toMatchObject({ count: 1, locked_until: 0 });
      });

      it('prune drops what ended', async () => {
        await store.limiter.hit('old', 1_000, 1_000);
        await store.limiter.hit('new', 1_000, 9_000);
        await store.limiter.prune(9_500, 1_000);
        expect(await store.limiter.get('old')).toBeUndefined();
        expect(await store.limiter.get('new')).toBeDefined();
      });

      it('remove forgets one key, removePrefix every key that starts with the prefix', async () => {
        await store.limiter.hit('lock:10.0.0.1', 60_000, 1_000);
        await store.limiter.lock('lock:10.0.0.2', 9_000);
        await store.limiter.hit('lock%:x', 60_000, 1_000);
        await store.limiter.hit('totp:7', 60_000, 1_000);
        expect(await store.limiter.remove('totp:7')).toBe(true);
        expect(await store.limiter.remove('totp:7')).toBe(false);
        expect(await store.limiter.get('totp:7')).toBeUndefined();
        expect(await store.limiter.removePrefix('lock:')).toBe(2);
        expect(await store.limiter.get('lock:10.0.0.2')).toBeUndefined();
        // A prefix is text, not a pattern.
        expect(await store.limiter.get('lock%:x')).toBeDefined();
        expect(await store.limiter.removePrefix('lock:')).toBe(0);
      });
    });

    describe('settings', () => {
      it('defaults, partial updates that persist', async () => {
        expect(await store.settings.get()).toEqual(DEFAULT_SETTINGS);
        const updated = await store.settings.update({ login_max_attempts: 7 });
        expect(updated).toEqual({ ...DEFAULT_SETTINGS, login_max_attempts: 7 });
        await store.settings.update({ jwt_ttl_seconds: 600 });
        expect(await store.settings.get()).toEqual({ ...DEFAULT_SETTINGS, login_max_attempts: 7, jwt_ttl_seconds: 600 });
      });
    });

    describe('transactions', () => {
      it('everything inside commits together', async () => {
        const { user, subscription } = await customerWithSubscription('tx@example.test', 'tx.example');
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const d = delivery(hook.id, user.id, 0);
        const site = await store.transaction(async (tx) => {
          const site = await tx.sites.insert({ subscription_id: subscription.id, domain: 'in.tx.example', created_at: T0 });
          // The transaction reads its own writes.
          expect((await tx.sites.listBySubscription(subscription.id)).map((s) => s.id)).toContain(site.id);
          await tx.outbox.enqueue(eventRecord(), [d]);
          return site;
        });
        expect(await store.sites.get(site.id)).toEqual(site);
        expect(await store.outbox.get(d.id)).toMatchObject({ id: d.id, state: 'pending' });
      });

      it('a transaction that throws leaves nothing behind', async () => {
        const { user, subscription } = await customerWithSubscription('rollback@example.test', 'rb.example');
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const d = delivery(hook.id, user.id, 0);
        const before = { users: await store.users.count(), sites: await store.sites.count(), pending: await store.outbox.pendingCount() };
        await expect(
          store.transaction(async (tx) => {
            await tx.users.insert(userRecord('phantom@example.test'));
            await tx.sites.insert({ subscription_id: subscription.id, domain: 'phantom.example', created_at: T0 });
            await tx.outbox.enqueue(eventRecord(), [d]);
            await tx.settings.update({ login_max_attempts: 99 });
            await tx.limiter.hit('phantom', 60_000, 1);
            throw new Error('changed my mind');
          }),
        ).rejects.toThrow('changed my mind');
        expect(await store.users.byEmail('phantom@example.test')).toBeUndefined();
        expect({ users: await store.users.count(), sites: await store.sites.count(), pending: await store.outbox.pendingCount() }).toEqual(before);
        expect(await store.outbox.get(d.id)).toBeUndefined();
        expect((await store.settings.get()).login_max_attempts).toBe(DEFAULT_SETTINGS.login_max_attempts);
        expect(await store.limiter.get('phantom')).toBeUndefined();
        // The ids and domains are free for the next attempt.
        await store.sites.insert({ subscription_id: subscription.id, domain: 'phantom.example', created_at: T0 });
      });

      it('a conflict inside a transaction rolls back what came before it', async () => {
        const { subscription } = await customerWithSubscription('c@example.test', 'c.example');
        await store.sites.insert({ subscription_id: subscription.id, domain: 'exists.example', created_at: T0 });
        await expect(
          store.transaction(async (tx) => {
            await tx.sites.insert({ subscription_id: subscription.id, domain: 'first.example', created_at: T0 });
            await tx.sites.insert({ subscription_id: subscription.id, domain: 'exists.example', created_at: T0 });
          }),
        ).rejects.toBeInstanceOf(StoreConflictError);
        expect((await store.sites.listBySubscription(subscription.id)).map((s) => s.domain)).toEqual(['exists.example']);
      });

      it('20 concurrent transactions creating one domain with its event: one commits, with exactly one event', async () => {
        const { user, subscription } = await customerWithSubscription('txrace@example.test', 'txrace.example');
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, () =>
            store.transaction(async (tx) => {
              const site = await tx.sites.insert({ subscription_id: subscription.id, domain: 'once.example', created_at: T0 });
              await tx.outbox.enqueue(eventRecord(), [delivery(hook.id, user.id, 0)]);
              return site;
            }),
          ),
        );
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        expect(await store.outbox.pendingCount()).toBe(1);
      });
    });

    describe('outbox', () => {
      async function endpoints(count: number, ownerEmail = 'ob@example.test') {
        const user = await store.users.insert(userRecord(ownerEmail));
        const hooks = [];
        for (let i = 0; i < count; i++) {
          hooks.push(await store.webhooks.insert({ user_id: user.id, url: `https://h${i}.test/`, secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 }));
        }
        return { user, hooks };
      }
      const claimDefaults = { leaseMs: 30_000, limit: 100, perEndpoint: 100 };

      it('publish queues one pending delivery per endpoint subscribedTo names, made from the template, and signals dispatchers', async () => {
        const admin = await store.users.insert(userRecord('pubadmin@example.test', 'admin'));
        const c1 = await store.users.insert(userRecord('pub1@example.test'));
        const c2 = await store.users.insert(userRecord('pub2@example.test'));
        const hook = (userId: number, events: string, active = true) =>
          store.webhooks.insert({ user_id: userId, url: 'https://h.test/', secret: 's', events, active, created_at: T0, updated_at: T0 });
        const all = await hook(admin.id, '*');
        const mine = await hook(c1.id, 'site.created, site.deleted');
        await hook(c2.id, '*');
        await hook(c1.id, '*', false);
        await hook(c1.id, 'backup.completed');
        const other = backend.openAnother ? await backend.openAnother() : store;
        if (other !== store) opened.push(other);
        let heard!: () => void;
        const signalled = new Promise<void>((resolve) => (heard = resolve));
        const unsubscribe = other.changes.subscribe((change) => change.kind === 'outbox' && heard());
        const template = { body: '{"event":"site.created","data":{"site_id":7}}', next_attempt_at: 1_234, created_at: T0 };

        const queued = await store.outbox.publish({ ...eventRecord(), owner_id: c1.id }, template);
        expect(queued.map((q) => q.endpoint_id)).toEqual([all.id, mine.id]);
        expect(new Set(queued.map((q) => q.id)).size).toBe(2);
        for (const [q, endpoint] of [[queued[0], all], [queued[1], mine]] as const) {
          expect(await store.outbox.get(q.id)).toStrictEqual({
            id: q.id,
            endpoint_id: endpoint.id,
            owner_id: endpoint.user_id,
            event: 'site.created',
            body: template.body,
            state: 'pending',
            attempts: 0,
            next_attempt_at: 1_234,
            created_at: T0,
          });
        }
        await Promise.race([signalled, new Promise((_, reject) => setTimeout(() => reject(new Error('no outbox change heard')), 10_000))]);
        unsubscribe();
        expect((await store.outbox.publish(eventRecord(), template)).map((q) => q.endpoint_id)).toEqual([all.id]);
        expect(await store.outbox.publish({ ...eventRecord(), event: 'user.deleted', owner_id: c2.id }, template)).toHaveLength(2);
        expect(await store.outbox.pendingCount()).toBe(5);
        await store.webhooks.update(all.id, { active: false, updated_at: T0 });
        expect(await store.outbox.publish({ ...eventRecord(), event: 'backup.failed', owner_id: c1.id }, template)).toEqual([]);
        expect(await store.outbox.pendingCount()).toBe(5);
      });

      it('concurrent publishes each queue their own event\'s deliveries, as one alone would', async () => {
        const admin = await store.users.insert(userRecord('pcadmin@example.test', 'admin'));
        const customers = [await store.users.insert(userRecord('pc1@example.test')), await store.users.insert(userRecord('pc2@example.test'))];
        const hook = (userId: number, events: string) =>
          store.webhooks.insert({ user_id: userId, url: 'https://h.test/', secret: 's', events, active: true, created_at: T0, updated_at: T0 });
        const adminHook = await hook(admin.id, '*');
        const created = [await hook(customers[0].id, 'site.created'), await hook(customers[1].id, 'site.created')];
        const deleted = await hook(customers[1].id, 'site.deleted');
        const events = Array.from({ length: 40 }, (_, i) => ({
          ...eventRecord(),
          event: i % 3 === 2 ? 'site.deleted' : 'site.created',
          owner_id: i % 4 === 3 ? null : customers[i % 2].id,
        }));
        const queued = await Promise.all(
          events.map((event, i) => store.outbox.publish(event, { body: `{"n":${i}}`, next_attempt_at: 1_000 + i, created_at: T0 })),
        );
        const expected = (event: (typeof events)[number]) => {
          if (event.owner_id === null) return [adminHook.id];
          const owner = customers.findIndex((c) => c.id === event.owner_id);
          return [adminHook.id, ...(event.event === 'site.created' ? [created[owner].id] : owner === 1 ? [deleted.id] : [])];
        };
        for (const [i, event] of events.entries()) {
          expect(queued[i].map((q) => q.endpoint_id)).toEqual(expected(event));
          for (const q of queued[i]) expect(await store.outbox.get(q.id)).toMatchObject({ event: event.event, body: `{"n":${i}}`, next_attempt_at: 1_000 + i });
        }
        expect(new Set(queued.flat().map((q) => q.id)).size).toBe(queued.flat().length);
      });

      it('a published delivery is claimable once publish resolves, by one claimer only, and its lease holder alone records it', async () => {
        const { user, hooks } = await endpoints(3);
        const template = { body: '{"n":1}', next_attempt_at: 5_000, created_at: T0 };
        const queued = await store.outbox.publish({ ...eventRecord(), owner_id: user.id }, template);
        expect(queued).toHaveLength(3);
        const claimed = await store.outbox.claim({ ...claimDefaults, owner: 'first', now: 10_000, skipEndpoints: [hooks[2].id] });
        expect(claimed.map((d) => d.endpoint_id).sort()).toEqual([hooks[0].id, hooks[1].id].sort());
        for (const d of claimed) {
          expect(d).toMatchObject({ id: queued.find((q) => q.endpoint_id === d.endpoint_id)!.id, owner_id: user.id, event: 'site.created', body: '{"n":1}', state: 'pending', attempts: 0, next_attempt_at: 5_000, created_at: T0 });
        }
        // No other claimer gets the claimed ones while their lease lives; the skipped one is free.
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'other', now: 10_000 })).map((d) => d.endpoint_id)).toEqual([hooks[2].id]);
        const [taken] = claimed;
        expect(await store.outbox.settle('other', [{ id: taken.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([]);
        expect(await store.outbox.settle('first', [{ id: taken.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([taken.id]);
      });

      it('publish inside a transaction commits with it, or leaves nothing when it throws', async () => {
        const { user, hooks } = await endpoints(2);
        const template = { body: '{}', next_attempt_at: 0, created_at: T0 };
        let kept: { id: string }[] = [];
        await expect(
          store.transaction(async (tx) => {
            kept = await tx.outbox.publish({ ...eventRecord(), owner_id: user.id }, template);
            throw new Error('changed my mind');
          }),
        ).rejects.toThrow('changed my mind');
        expect(kept).toHaveLength(2);
        expect(await store.outbox.get(kept[0].id)).toBeUndefined();
        expect(await store.outbox.pendingCount()).toBe(0);
        const queued = await store.transaction((tx) => tx.outbox.publish({ ...eventRecord(), owner_id: user.id }, template));
        expect(queued.map((q) => q.endpoint_id)).toEqual(hooks.map((h) => h.id));
        expect(await store.outbox.pendingCount()).toBe(2);
      });

      it('claims due deliveries only, each endpoint\'s in due order, at most perEndpoint and limit', async () => {
        const { user, hooks } = await endpoints(2);
        const [h1, h2] = hooks;
        const a = delivery(h1.id, user.id, 100);
        const b = delivery(h1.id, user.id, 200);
        const c = delivery(h1.id, user.id, 300);
        const later = delivery(h2.id, user.id, 5_000);
        const d = delivery(h2.id, user.id, 150);
        await store.outbox.enqueue(eventRecord(), [a, b, c]);
        await store.outbox.enqueue(eventRecord(), [later, d]);
        expect(await store.outbox.pendingCount()).toBe(5);
        expect(await store.outbox.nextDueAt()).toBe(100);
        const first = await store.outbox.claim({ ...claimDefaults, owner: 'w1', now: 1_000, perEndpoint: 2 });
        const ids = first.map((x) => x.id);
        expect(ids).toHaveLength(4 - 1);
        expect(ids).toEqual(expect.arrayContaining([a.id, b.id, d.id]));
        expect(ids).not.toContain(later.id);
        expect(ids.indexOf(a.id)).toBeLessThan(ids.indexOf(b.id));
        expect(first.find((x) => x.id === a.id)).toMatchObject({ body: a.body, endpoint_id: h1.id, owner_id: user.id, attempts: 0, state: 'pending' });
        const limited = await store.outbox.claim({ ...claimDefaults, owner: 'w1', now: 1_000, limit: 0 });
        expect(limited).toEqual([]);
      });

      it('a paused endpoint keeps its deliveries out of every claim and of nextDueAt; resumed, they are claimed in due order', async () => {
        const { user, hooks } = await endpoints(2, 'paused@example.test');
        const [h1, h2] = hooks;
        const held = [delivery(h1.id, user.id, 100), delivery(h1.id, user.id, 200), delivery(h1.id, user.id, 300)];
        const other = delivery(h2.id, user.id, 150);
        await store.outbox.enqueue(eventRecord(), held);
        await store.outbox.enqueue(eventRecord(), [other]);
        expect(await store.webhooks.update(h1.id, { paused: true, updated_at: T0 })).toMatchObject({ id: h1.id, paused: true });
        expect((await store.webhooks.get(h2.id))!.paused ?? false).toBe(false);
        expect(await store.outbox.nextDueAt()).toBe(150);
        expect(await store.outbox.pendingByEndpoint([h1.id, h2.id])).toEqual(new Map([[h1.id, 3], [h2.id, 1]]));
        // Claimed by several claimers, with room for everything: only the running endpoint's.
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'p1', now: 1_000 })).map((d) => d.id)).toEqual([other.id]);
        expect(await store.outbox.claim({ ...claimDefaults, owner: 'p2', now: 2_000, perEndpoint: 1 })).toEqual([]);
        // A manual send (a claim by id) is not held back by the pause.
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'manual', now: 1_000, leaseMs: 1, ids: [held[1].id] })).map((d) => d.id)).toEqual([held[1].id]);
        expect(await store.outbox.pendingByEndpoint([h1.id])).toEqual(new Map([[h1.id, 3]]));

        const notice = backend.openAnother ? await backend.openAnother() : store;
        if (notice !== store) opened.push(notice);
        let heard!: () => void;
        const signalled = new Promise<void>((resolve) => (heard = resolve));
        const unsubscribe = notice.changes.subscribe((change) => change.kind === 'outbox' && heard());
        // Not paused reads as false or absent (the PostgreSQL rows leave the default out, as older JSON records have it).
        expect((await store.webhooks.update(h1.id, { paused: false, updated_at: T0 }))!.paused ?? false).toBe(false);
        // Resuming tells the dispatchers: they claim the kept deliveries at once, not at their poll.
        await Promise.race([signalled, new Promise((_, reject) => setTimeout(() => reject(new Error('no outbox change heard on resume')), 10_000))]);
        unsubscribe();
        expect(await store.outbox.nextDueAt()).toBe(100);
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'p3', now: 2_000 })).map((d) => d.id)).toEqual(held.map((d) => d.id));
      });

      it('an operational event is queued only for its owner\'s endpoints that name it: not `*`, not admins\'', async () => {
        const admin = await store.users.insert(userRecord('opadmin@example.test', 'admin'));
        const c1 = await store.users.insert(userRecord('op1@example.test'));
        const c2 = await store.users.insert(userRecord('op2@example.test'));
        const hook = (userId: number, events: string) =>
          store.webhooks.insert({ user_id: userId, url: 'https://h.test/', secret: 's', events, active: true, created_at: T0, updated_at: T0 });
        await hook(admin.id, '*');
        await hook(admin.id, 'delivery.failed');
        await hook(c1.id, '*');
        const named = await hook(c1.id, 'site.created,delivery.failed');
        await hook(c1.id, 'endpoint.disabled');
        await hook(c2.id, 'delivery.failed');
        const template = { body: '{}', next_attempt_at: 0, created_at: T0 };
        const failed = { ...eventRecord(), event: 'delivery.failed', owner_id: c1.id };
        expect((await store.outbox.publish(failed, template)).map((q) => q.endpoint_id)).toEqual([named.id]);
        expect((await store.webhooks.subscribedTo('delivery.failed', c1.id)).map((w) => w.id)).toEqual([named.id]);
        expect(await store.outbox.publish({ ...failed, owner_id: null }, template)).toEqual([]);
        // An ordinary event still reaches `*` and the admins'.
        expect(await store.outbox.publish({ ...eventRecord(), owner_id: c1.id }, template)).toHaveLength(3);
      });

      it('two claimers never get the same delivery', async () => {
        const { user, hooks } = await endpoints(5);
        const all = hooks.flatMap((h) => Array.from({ length: 20 }, () => delivery(h.id, user.id, 0)));
        await store.outbox.enqueue(eventRecord(), all);
        const other = backend.openAnother ? await backend.openAnother() : store;
        if (other !== store) opened.push(other);
        const claims = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            (i % 2 ? other : store).outbox.claim({ ...claimDefaults, owner: `w${i}`, now: 1, limit: 15, perEndpoint: 5 }),
          ),
        );
        const seen = claims.flat().map((x) => x.id);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen.length).toBeGreaterThan(0);
        // A claim racing others may come back short (what they hold is skipped, not waited for);
        // the claimers claiming on drain the rest (on a shared store each endpoint is served by
        // the claimer holding it), still without a delivery handed out twice.
        for (let i = 0; seen.length < 100 && i < 100; i++) {
          seen.push(...(await (i % 2 ? other : store).outbox.claim({ ...claimDefaults, owner: `w${i % 10}`, now: 1, limit: 15, perEndpoint: 5 })).map((x) => x.id));
        }
        expect(new Set(seen).size).toBe(100);
        expect(seen.length).toBe(100);
        const nothing = await store.outbox.claim({ ...claimDefaults, owner: 'late', now: 2 });
        expect(nothing).toEqual([]);
      });

      it('an expired lease is claimed again; the old owner\'s outcome is then ignored', async () => {
        const { user, hooks } = await endpoints(1);
        const d = delivery(hooks[0].id, user.id, 0);
        await store.outbox.enqueue(eventRecord(), [d]);
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'dead', now: 1_000, leaseMs: 1_000 })).map((x) => x.id)).toEqual([d.id]);
        expect(await store.outbox.claim({ ...claimDefaults, owner: 'alive', now: 1_999, leaseMs: 1_000 })).toEqual([]);
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'alive', now: 2_000, leaseMs: 1_000 })).map((x) => x.id)).toEqual([d.id]);
        expect(await store.outbox.settle('dead', [{ id: d.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([]);
        expect(await store.outbox.get(d.id)).toMatchObject({ state: 'pending' });
        expect(await store.outbox.settle('alive', [{ id: d.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([d.id]);
        expect(await store.outbox.pendingCount()).toBe(0);
      });

      it('abandon ends a gone owner\'s leases and holds at once: its deliveries are claimed by the next claimer, its outcomes then ignored', async () => {
        const { user, hooks } = await endpoints(2, 'abandon@example.test');
        const d1 = delivery(hooks[0].id, user.id, 0);
        const d2 = delivery(hooks[1].id, user.id, 0);
        // Due after the crash: on a shared store it would wait for the crashed owner's hold of its endpoint.
        const d3 = delivery(hooks[1].id, user.id, 5_000);
        await store.outbox.enqueue(eventRecord(), [d1, d2, d3]);
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'crashed', now: 1_000, leaseMs: 60_000 })).map((x) => x.id).sort()).toEqual([d1.id, d2.id].sort());
        // Its leases are live: nobody else gets those deliveries.
        expect(await store.outbox.claim({ ...claimDefaults, owner: 'restarted', now: 2_000, leaseMs: 60_000 })).toEqual([]);
        await store.outbox.abandon('crashed');
        const taken = await store.outbox.claim({ ...claimDefaults, owner: 'restarted', now: 5_000, leaseMs: 60_000 });
        expect(taken.map((x) => x.id).sort()).toEqual([d1.id, d2.id, d3.id].sort());
        expect(await store.outbox.settle('crashed', [{ id: d1.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([]);
        expect(await store.outbox.settle('restarted', [{ id: d1.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }])).toEqual([d1.id]);
        // An owner holding nothing: nothing changes.
        await store.outbox.abandon('never-claimed');
        expect(await store.outbox.pendingCount()).toBe(2);
      });

      it('stats answers the pending count and the oldest pending delivery\'s publish time; countByState the endpoints', async () => {
        expect(await store.outbox.stats()).toEqual({ pending: 0, oldest_pending_at: null });
        const { user, hooks } = await endpoints(3, 'stats@example.test');
        await store.webhooks.update(hooks[2].id, { active: false, updated_at: T0 });
        expect(await store.webhooks.countByState()).toEqual({ active: 2, inactive: 1 });
        const newer = delivery(hooks[0].id, user.id, 0, { created_at: '2026-01-01T00:00:05.000Z' });
        const older = delivery(hooks[1].id, user.id, 0, { created_at: '2026-01-01T00:00:01.000Z' });
        const newest = delivery(hooks[1].id, user.id, 0, { created_at: '2026-01-01T00:00:09.000Z' });
        await store.outbox.enqueue(eventRecord(), [newer]);
        await store.outbox.enqueue(eventRecord(), [older]);
        await store.outbox.enqueue(eventRecord(), [newest]);
        expect(await store.outbox.stats()).toEqual({ pending: 3, oldest_pending_at: Date.parse('2026-01-01T00:00:01.000Z') });
        // A claimed (leased) delivery is still pending; a settled one is not.
        await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 1, ids: [older.id] });
        expect((await store.outbox.stats()).pending).toBe(3);
        await store.outbox.settle('w', [{ id: older.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }]);
        expect(await store.outbox.stats()).toEqual({ pending: 2, oldest_pending_at: Date.parse('2026-01-01T00:00:05.000Z') });
        if (backend.openAnother) {
          const other = await backend.openAnother();
          opened.push(other);
          expect(await other.outbox.stats()).toEqual(await store.outbox.stats());
        }
      });

      it('settle records a retry (claimable when due) and a final outcome (no longer pending)', async () => {
        const { user, hooks } = await endpoints(1);
        const d = delivery(hooks[0].id, user.id, 0);
        const e = delivery(hooks[0].id, user.id, 0);
        await store.outbox.enqueue(eventRecord(), [d, e]);
        await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 10 });
        expect(
          await store.outbox.settle('w', [
            { id: d.id, state: 'pending', attempts: 1, next_attempt_at: 2_010 },
            { id: e.id, state: 'failed', attempts: 2, next_attempt_at: 0 },
          ]),
        ).toEqual(expect.arrayContaining([d.id, e.id]));
        expect(await store.outbox.get(d.id)).toMatchObject({ attempts: 1, next_attempt_at: 2_010, state: 'pending' });
        expect(await store.outbox.pendingCount()).toBe(1);
        expect(await store.outbox.nextDueAt()).toBe(2_010);
        expect(await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 2_009 })).toEqual([]);
        // Another claimer, once w has stopped (a shared store hands w's endpoint over then).
        await store.outbox.leave('w');
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'w2', now: 2_010 })).map((x) => [x.id, x.attempts])).toEqual([[d.id, 1]]);
      });

      it('release gives claims back; skips and ids narrow a claim', async () => {
        const { user, hooks } = await endpoints(2, 'a@example.test');
        const { user: other, hooks: theirs } = await endpoints(1, 'b@example.test');
        const d1 = delivery(hooks[0].id, user.id, 0);
        const d2 = delivery(hooks[1].id, user.id, 0);
        const d3 = delivery(theirs[0].id, other.id, 0);
        await store.outbox.enqueue(eventRecord(), [d1, d2, d3]);
        const skipped = await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 1, skipEndpoints: [hooks[0].id], skipOwners: [other.id] });
        expect(skipped.map((x) => x.id)).toEqual([d2.id]);
        await store.outbox.release('w', [d2.id]);
        const named = await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 1, ids: [d3.id], skipOwners: [other.id] });
        expect(named.map((x) => x.id)).toEqual([d3.id]);
        await store.outbox.leave('w');
        const rest = await store.outbox.claim({ ...claimDefaults, owner: 'w2', now: 1 });
        expect(rest.map((x) => x.id).sort()).toEqual([d1.id, d2.id].sort());
      });

      it('a claim takes due deliveries in due order over endpoints, at most perEndpoint of each', async () => {
        const { user: a, hooks: ofA } = await endpoints(2, 'order-a@example.test');
        const { hooks: ofB } = await endpoints(1, 'order-b@example.test');
        // Due times interleave over the endpoints (retries among them, queued out of due order); one is not due yet.
        const d = [
          delivery(ofA[0].id, a.id, 30),
          delivery(ofA[0].id, a.id, 40),
          delivery(ofA[0].id, a.id, 50),
          delivery(ofA[1].id, a.id, 10),
          delivery(ofB[0].id, ofB[0].user_id, 20),
          delivery(ofB[0].id, ofB[0].user_id, 5_000),
          delivery(ofA[1].id, a.id, 60, { attempts: 1 }),
          delivery(ofA[1].id, a.id, 15, { attempts: 1 }),
        ];
        await store.outbox.enqueue(eventRecord(), d);
        const first = await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 100, limit: 3, perEndpoint: 2 });
        expect(first.map((x) => x.id)).toEqual([d[3].id, d[7].id, d[4].id]);
        const second = await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 100, perEndpoint: 1 });
        expect(second.map((x) => x.id)).toEqual([d[0].id, d[6].id]);
        const third = await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 100, skipOwners: [a.id] });
        expect(third).toEqual([]);
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 100 })).map((x) => x.id)).toEqual([d[1].id, d[2].id]);
      });

      it('record appends the entries and settles the outcomes of the lease holder', async () => {
        const { user, hooks } = await endpoints(2, 'record@example.test');
        const [d, e, f] = [delivery(hooks[0].id, user.id, 0), delivery(hooks[1].id, user.id, 0), delivery(hooks[1].id, user.id, 0)];
        await store.outbox.enqueue(eventRecord(), [d, e, f]);
        await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 10 });
        const entries = [logEntry(hooks[0].id, { delivery_id: d.id }), logEntry(hooks[1].id, { delivery_id: e.id, success: false, status_code: 500 })];
        const recorded = await store.outbox.record(
          'w',
          [
            { id: d.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 },
            { id: e.id, state: 'pending', attempts: 1, next_attempt_at: 2_010 },
          ],
          entries,
        );
        expect(recorded).toEqual(entries.map((entry, i) => ({ ...entry, id: recorded[i].id })));
        expect(recorded[1].id).toBeGreaterThan(recorded[0].id);
        expect(await store.deliveryLog.list(hooks[1].id)).toEqual([recorded[1]]);
        expect(await store.outbox.get(d.id)).toBeUndefined();
        expect(await store.outbox.get(e.id)).toMatchObject({ attempts: 1, next_attempt_at: 2_010, state: 'pending' });
        // f is still leased to w: not claimable before the lease ends; e is, when due (by another
        // claimer once w has stopped: a shared store hands w's endpoints over then).
        await store.outbox.leave('w');
        expect((await store.outbox.claim({ ...claimDefaults, owner: 'v', now: 2_010 })).map((x) => x.id)).toEqual([e.id]);
        // Outcomes of leases held by another are ignored; entries are appended all the same.
        await store.outbox.record('w', [{ id: e.id, state: 'succeeded', attempts: 2, next_attempt_at: 0 }], [logEntry(hooks[1].id, { delivery_id: e.id, attempt: 2 })]);
        expect(await store.outbox.get(e.id)).toMatchObject({ state: 'pending', attempts: 1 });
        expect(await store.deliveryLog.list(hooks[1].id)).toHaveLength(2);
      });

      it('after a crash a retry is kept, a final outcome is kept or attempted again once its lease ends, a claim without an outcome is claimed again', async () => {
        const { user, hooks } = await endpoints(1, 'crash@example.test');
        const [retry, done, unrecorded] = [0, 1, 2].map(() => delivery(hooks[0].id, user.id, 0));
        await store.outbox.enqueue(eventRecord(), [retry, done, unrecorded]);
        expect(await store.outbox.claim({ ...claimDefaults, owner: 'w', now: 10 })).toHaveLength(3);
        const retryEntry = logEntry(hooks[0].id, { delivery_id: retry.id, success: false, status_code: 500 });
        await store.outbox.record('w', [{ id: retry.id, state: 'pending', attempts: 1, next_attempt_at: 2_010 }], [retryEntry]);
        // The final outcome alone, the last write: nothing later carries it to disk.
        await store.outbox.record('w', [{ id: done.id, state: 'succeeded', attempts: 1, next_attempt_at: 0 }], [logEntry(hooks[0].id, { delivery_id: done.id })]);
        const after = await crash();
        expect(await after.outbox.get(retry.id)).toMatchObject({ state: 'pending', attempts: 1, next_attempt_at: 2_010 });
        expect(await after.outbox.get(unrecorded.id)).toMatchObject({ state: 'pending', attempts: 0 });
        // A lost final outcome leaves the delivery as it was claimed: at-least-once.
        const doneAfter = await after.outbox.get(done.id);
        if (doneAfter) expect(doneAfter).toMatchObject({ state: 'pending', attempts: 0 });
        const again = await after.outbox.claim({ ...claimDefaults, owner: 'v', now: 10 + claimDefaults.leaseMs });
        const expected = doneAfter ? [retry, done, unrecorded] : [retry, unrecorded];
        expect(again.map((d) => d.id).sort()).toEqual(expected.map((d) => d.id).sort());
      });

      it('after a crash log entries may be missing, but their ids are never given to other entries', async () => {
        const { hooks } = await endpoints(1, 'crash-log@example.test');
        const appended = [
          ...(await store.deliveryLog.append([logEntry(hooks[0].id), logEntry(hooks[0].id)])),
          ...(await store.outbox.record('w', [], [logEntry(hooks[0].id)])),
        ];
        const after = await crash();
        // What is kept is what was appended, unchanged.
        for (const entry of await after.deliveryLog.list(hooks[0].id)) expect(appended).toContainEqual(entry);
        const [next] = await after.deliveryLog.append([logEntry(hooks[0].id)]);
        expect(next.id).toBeGreaterThan(Math.max(...appended.map((e) => e.id)));
        expect((await after.deliveryLog.list(hooks[0].id))[0]).toEqual(next);
      });

      it('record keeps serving the last 100 attempts per endpoint', async () => {
        const { hooks } = await endpoints(1, 'record-ret@example.test');
        let last: DeliveryLogEntry | undefined;
        for (let i = 0; i < 25; i++) {
          const batch = await store.outbox.record('w', [], Array.from({ length: 10 }, () => logEntry(hooks[0].id)));
          last = batch[batch.length - 1];
        }
        const kept = await store.deliveryLog.list(hooks[0].id, { limit: 500 });
        expect(kept).toHaveLength(100);
        expect(kept[0].id).toBe(last!.id);
      });

    describe('delivery log', () => {
      it('ids are increasing integers; list is newest first with filters; get; since', async () => {
        const user = await store.users.insert(userRecord('log@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const other = await store.webhooks.insert({ user_id: user.id, url: 'https://o.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const [e1, e2] = await store.deliveryLog.append([
          logEntry(hook.id, { created_at: '2026-01-01T00:00:00.000Z' }),
          logEntry(hook.id, { success: false, status_code: 500, event: 'site.deleted', created_at: '2026-01-02T00:00:00.000Z' }),
        ]);
        const [e3] = await store.deliveryLog.append([logEntry(other.id)]);
        expect(Number.isSafeInteger(e1.id) && e1.id > 0 && e1.id < 1e9).toBe(true);
        expect(e2.id).toBeGreaterThan(e1.id);
        expect(e3.id).toBeGreaterThan(e2.id);
        expect(e2).toMatchObject({ endpoint_id: hook.id, success: false, status_code: 500, payload: { event: 'site.created', data: { site_id: 1 } } });
        expect((await store.deliveryLog.list(hook.id)).map((e) => e.id)).toEqual([e2.id, e1.id]);
        expect((await store.deliveryLog.list(hook.id, { failed: true })).map((e) => e.id)).toEqual([e2.id]);
        expect((await store.deliveryLog.list(hook.id, { failed: false })).map((e) => e.id)).toEqual([e1.id]);
        expect((await store.deliveryLog.list(hook.id, { event: 'site.deleted' })).map((e) => e.id)).toEqual([e2.id]);
        expect((await store.deliveryLog.list(hook.id, { since: Date.parse('2026-01-01T12:00:00Z') })).map((e) => e.id)).toEqual([e2.id]);
        expect((await store.deliveryLog.list(hook.id, { limit: 1 })).map((e) => e.id)).toEqual([e2.id]);
        expect(await store.deliveryLog.get(hook.id, e1.id)).toEqual(e1);
        expect(await store.deliveryLog.get(other.id, e1.id)).toBeUndefined();
        expect((await store.deliveryLog.since(e1.id, 10)).map((e) => e.id)).toEqual([e2.id, e3.id]);
        expect((await store.deliveryLog.since(e1.id, 1)).map((e) => e.id)).toEqual([e2.id]);
      });

      it('keeps the last 100 attempts per endpoint', async () => {
        const user = await store.users.insert(userRecord('ret@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        let last: DeliveryLogEntry | undefined;
        for (let i = 0; i < 250; i++) [last] = await store.deliveryLog.append([logEntry(hook.id, { attempt: 1 })]);
        const kept = await store.deliveryLog.list(hook.id, { limit: 500 });
        expect(kept).toHaveLength(100);
        expect(kept[0].id).toBe(last!.id);
      });

      it('health summarises each endpoint\'s last 100 attempts as computeHealth reads them from list, in one call', async () => {
        const user = await store.users.insert(userRecord('health@example.test'));
        const hook = async () => store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const [empty, mixed, failing, rolled] = [await hook(), await hook(), await hook(), await hook()];
        const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();
        const retried = randomUUID();
        await store.deliveryLog.append([
          logEntry(mixed.id, { created_at: at(1) }),
          logEntry(mixed.id, { delivery_id: retried, success: false, status_code: 500, reason: 'HTTP 500', created_at: at(2) }),
          logEntry(mixed.id, { delivery_id: retried, attempt: 2, created_at: at(4) }),
          logEntry(mixed.id, { success: false, status_code: 0, response: 'connect ECONNREFUSED', reason: 'connection refused', created_at: at(10) }),
          logEntry(mixed.id, { success: false, status_code: 502, created_at: at(20) }),
        ]);
        // Batches through record, as the dispatcher writes them: deliveries failing twice, one pending retry last.
        for (let i = 0; i < 3; i++) {
          const id = randomUUID();
          await store.outbox.record('w', [], [logEntry(failing.id, { delivery_id: id, success: false, status_code: 503, reason: 'HTTP 503', created_at: at(30 + i * 10) })]);
          await store.outbox.record('w', [], [logEntry(failing.id, { delivery_id: id, attempt: 2, success: false, status_code: 503, reason: 'HTTP 503', created_at: at(32 + i * 10) })]);
        }
        await store.deliveryLog.append([logEntry(failing.id, { success: false, status_code: 500, reason: 'HTTP 500', created_at: at(100) })]);
        // 130 attempts: the first 30 (the only successes) leave the window.
        for (let i = 0; i < 13; i++) {
          await store.deliveryLog.append(Array.from({ length: 10 }, (_, j) => logEntry(rolled.id, i < 3 ? { created_at: at(i * 10 + j) } : { success: false, status_code: 500, attempt: 2, created_at: at(i * 10 + j) })));
        }
        const ids = [empty.id, mixed.id, failing.id, rolled.id, 999_999_999];
        const summaries = await store.deliveryLog.health(ids);
        expect([...summaries.keys()].sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
        expect(summaries.get(empty.id)).toEqual({ attempts: 0, successes: 0, last_success_at: null, last_failure: null, failures: [] });
        expect(summaries.get(999_999_999)).toEqual({ attempts: 0, successes: 0, last_success_at: null, last_failure: null, failures: [] });
        expect(summaries.get(mixed.id)).toMatchObject({ attempts: 5, successes: 2, last_success_at: at(4), last_failure: { created_at: at(20), status_code: 502, reason: null } });
        expect(summaries.get(mixed.id)!.failures.map((f) => f.created_at)).toEqual([at(20), at(10)]);
        expect(summaries.get(failing.id)).toMatchObject({ attempts: 7, successes: 0, last_success_at: null, last_failure: { created_at: at(100), reason: 'HTTP 500' } });
        expect(summaries.get(failing.id)!.failures).toHaveLength(7);
        expect(summaries.get(rolled.id)).toMatchObject({ attempts: 100, successes: 0, last_success_at: null });
        expect(summaries.get(rolled.id)!.failures).toHaveLength(100);
        // The health the API shows is the same from the summary as from the log, whenever it is asked and whatever the reset.
        for (const hookId of ids) {
          const entries = await store.deliveryLog.list(hookId);
          for (const now of [at(50), at(101), at(200), at(100_000)]) {
            for (const reset of [null, at(5), at(45), at(115)]) {
              expect(healthFromSummary(summaries.get(hookId)!, reset, Date.parse(now)), `endpoint ${hookId} at ${now}, reset ${reset}`).toEqual(computeHealth(entries, reset, Date.parse(now)));
            }
          }
        }
        expect(await store.deliveryLog.health([])).toEqual(new Map());
      });

      it('health keeps up with appends, and leaves a log it cannot summarise to be read whole', async () => {
        const user = await store.users.insert(userRecord('health-odd@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        await store.deliveryLog.append([logEntry(hook.id, { success: false, status_code: 500 })]);
        expect((await store.deliveryLog.health([hook.id])).get(hook.id)).toMatchObject({ attempts: 1, successes: 0 });
        const delivery = randomUUID();
        await store.deliveryLog.append([logEntry(hook.id, { delivery_id: delivery })]);
        expect((await store.deliveryLog.health([hook.id])).get(hook.id)).toMatchObject({ attempts: 2, successes: 1, last_success_at: T0, failures: [] });
        // A success followed by another attempt of the same delivery: not a shape health expects.
        await store.deliveryLog.append([logEntry(hook.id, { delivery_id: delivery, attempt: 2, success: false, status_code: 500 })]);
        expect((await store.deliveryLog.health([hook.id])).get(hook.id)).toBeNull();
      });

      it('revision moves with every entry appended and stays while the log is unchanged', async () => {
        const user = await store.users.insert(userRecord('rev@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const other = await store.webhooks.insert({ user_id: user.id, url: 'https://o.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const seen = new Set<string>();
        const first = await store.deliveryLog.revision(hook.id);
        seen.add(first);
        expect(await store.deliveryLog.revision(hook.id)).toBe(first);
        for (let i = 0; i < 120; i++) {
          await (i % 2 ? store.outbox.record('w', [], [logEntry(hook.id)]) : store.deliveryLog.append([logEntry(hook.id)]));
          const revision = await store.deliveryLog.revision(hook.id);
          expect(seen.has(revision), `revision after append ${i + 1}`).toBe(false);
          seen.add(revision);
        }
        const last = await store.deliveryLog.revision(hook.id);
        await store.deliveryLog.append([logEntry(other.id)]);
        await store.deliveryLog.list(hook.id);
        expect(await store.deliveryLog.revision(hook.id)).toBe(last);
      });

      it('reads an endpoint with its log revision together: the endpoint as get gives it, the revision as revision does', async () => {
        const user = await store.users.insert(userRecord('rev-with@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const before = await store.webhooks.getWithLogRevision(hook.id);
        expect(before).toEqual({ endpoint: await store.webhooks.get(hook.id), logRevision: await store.deliveryLog.revision(hook.id) });
        await store.deliveryLog.append([logEntry(hook.id)]);
        const after = await store.webhooks.getWithLogRevision(hook.id);
        expect(after!.logRevision).toBe(await store.deliveryLog.revision(hook.id));
        expect(after!.logRevision).not.toBe(before!.logRevision);
        await store.webhooks.remove(hook.id);
        expect(await store.webhooks.getWithLogRevision(hook.id)).toBeUndefined();
      });

      it('revision moves when pruning makes room for a new entry, and stays while nothing is added', async () => {
        const user = await store.users.insert(userRecord('rev-prune@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const full = await store.deliveryLog.append(Array.from({ length: 100 }, () => logEntry(hook.id)));
        const revisions = [await store.deliveryLog.revision(hook.id)];
        // Each append pushes the oldest entry out of the answer; the second one's prune also
        // deletes the first entry on PostgreSQL (it prunes below the newest 100 it found).
        await store.deliveryLog.append([logEntry(hook.id)]);
        revisions.push(await store.deliveryLog.revision(hook.id));
        const [added] = await store.deliveryLog.append([logEntry(hook.id)]);
        revisions.push(await store.deliveryLog.revision(hook.id));
        expect(new Set(revisions).size).toBe(3);
        expect(await store.deliveryLog.get(hook.id, full[0].id)).toBeUndefined();
        const listed = (await store.deliveryLog.list(hook.id)).map((e) => e.id);
        expect(listed).toHaveLength(100);
        expect(listed[0]).toBe(added.id);
        expect(listed).not.toContain(full[1].id);
        // Reading the log and its health leaves the revision as it is.
        await store.deliveryLog.list(hook.id);
        await store.deliveryLog.health([hook.id]);
        expect(await store.deliveryLog.revision(hook.id)).toBe(revisions[2]);
      });

      it('revision moves when an entry commits after a newer one (several writers at once)', async (ctx) => {
        // Only a backend with several handles on one log has writers whose ids commit out of order.
        if (!backend.openAnother) return ctx.skip();
        const other = await backend.openAnother();
        opened.push(other);
        const user = await store.users.insert(userRecord('rev-order@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        await store.deliveryLog.append([logEntry(hook.id)]);
        let seenBefore = '';
        let newer: DeliveryLogEntry | undefined;
        const [older] = await store.transaction(async (tx) => {
          const entries = await tx.deliveryLog.append([logEntry(hook.id, { attempt: 2 })]);
          // Another writer to the same endpoint gets a higher id and commits first, without
          // waiting for this transaction.
          [newer] = await other.deliveryLog.append([logEntry(hook.id, { attempt: 3 })]);
          seenBefore = await other.deliveryLog.revision(hook.id);
          expect((await other.deliveryLog.list(hook.id)).map((e) => e.id)).not.toContain(entries[0].id);
          return entries;
        });
        expect(older.id).toBeLessThan(newer!.id);
        const seenAfter = await other.deliveryLog.revision(hook.id);
        expect(seenAfter).not.toBe(seenBefore);
        expect((await other.deliveryLog.list(hook.id)).map((e) => e.id)).toEqual([newer!.id, older.id, expect.any(Number)]);
        expect(await store.deliveryLog.revision(hook.id)).toBe(seenAfter);
      });

      it('getMany reads entries by id, oldest first', async () => {
        const user = await store.users.insert(userRecord('many@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        const [a, b, c] = await store.deliveryLog.append([logEntry(hook.id), logEntry(hook.id, { attempt: 2 }), logEntry(hook.id)]);
        expect(await store.deliveryLog.getMany([c.id, a.id, 999_999_999])).toEqual([a, c]);
        expect(await store.deliveryLog.getMany([])).toEqual([]);
        expect((await store.deliveryLog.getMany([b.id]))[0]).toMatchObject({ id: b.id, attempt: 2 });
      });
    });

    });

    describe('after a crash', () => {
      it('every change whose call resolved is kept: records, removals, settings, tokens, transactions, prunes, flushed key uses', async () => {
        const { user, subscription } = await customerWithSubscription('kept@example.test', 'kept.example');
        const site = await store.sites.insert({ subscription_id: subscription.id, domain: 'a.kept.example', created_at: T0 });
        const removed = await store.sites.insert({ subscription_id: subscription.id, domain: 'b.kept.example', created_at: T0 });
        await store.sites.remove(removed.id);
        await store.users.update(user.id, { name: 'Kept' });
        await store.settings.update({ login_max_attempts: 7 });
        const token = await store.resetTokens.insert({ user_id: user.id, token_hash: 'hash-kept', expires_at: '2099-01-01T00:00:00.000Z', used_at: null, created_at: T0 });
        expect(await store.resetTokens.markUsed(token.id, T0)).toBe(true);
        const key = await store.apiKeys.insert({ user_id: user.id, name: 'k', key_hash: 'hash-key', key_prefix: 'pk_kept', last_used_at: null, expires_at: null, created_at: T0 });
        await store.revokedTokens.revoke('jti-expired', 1_000);
        await store.revokedTokens.revoke('jti-live', 9_000);
        const inTransaction = await store.transaction(async (tx) => tx.sites.insert({ subscription_id: subscription.id, domain: 'c.kept.example', created_at: T0 }));
        const after = await crash();
        expect(await after.sites.listBySubscription(subscription.id)).toEqual([site, inTransaction]);
        expect((await after.users.get(user.id))?.name).toBe('Kept');
        expect((await after.settings.get()).login_max_attempts).toBe(7);
        expect((await after.resetTokens.byHash('hash-kept'))?.used_at).toBe(T0);
        expect(await after.apiKeys.get(key.id)).toEqual(key);
        // No id is handed out twice, even one whose record is gone.
        const next = await after.sites.insert({ subscription_id: subscription.id, domain: 'd.kept.example', created_at: T0 });
        expect(next.id).toBeGreaterThan(inTransaction.id);

        // Each the last write before its crash, so no later write can carry it to disk.
        await store.revokedTokens.prune(2_000);
        const afterPrune = await crash();
        expect(await afterPrune.revokedTokens.isRevoked('jti-expired')).toBe(false);
        expect(await afterPrune.revokedTokens.isRevoked('jti-live')).toBe(true);
        await store.apiKeys.touch(key.id, Date.parse('2026-01-02T00:00:00.500Z'));
        await store.flush();
        const afterFlush = await crash();
        expect((await afterFlush.apiKeys.get(key.id))?.last_used_at).toBe('2026-01-02T00:00:00.000Z');
      });
    });

    describe('change feed', () => {
      it('tells of record changes, queued deliveries and logged attempts', async () => {
        const seen: Change[] = [];
        const other = backend.openAnother ? await backend.openAnother() : store;
        if (other !== store) opened.push(other);
        let check = () => {};
        const unsubscribe = other.changes.subscribe((change) => {
          seen.push(change);
          check();
        });
        const user = await store.users.insert(userRecord('feed@example.test'));
        const hook = await store.webhooks.insert({ user_id: user.id, url: 'https://h.test/', secret: 's', events: '*', active: true, created_at: T0, updated_at: T0 });
        await store.outbox.enqueue(eventRecord(), [delivery(hook.id, user.id, 0)]);
        const [entry] = await store.deliveryLog.append([logEntry(hook.id)]);
        await store.settings.update({ login_max_attempts: 9 });
        // Announced by id on every backend; whoever needs the entry reads it.
        const announced = (c: Change) => c.kind === 'logged' && c.ids.includes(entry.id);
        const arrived = () =>
          seen.some(announced) &&
          seen.some((c) => c.kind === 'record' && c.collection === 'settings') &&
          seen.some((c) => c.kind === 'outbox') &&
          seen.some((c) => c.kind === 'record' && c.collection === 'users' && c.id === user.id) &&
          seen.some((c) => c.kind === 'record' && c.collection === 'webhooks' && c.id === hook.id);
        // Another handle hears of the changes a moment after they commit: wait for them (bounded).
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`changes not seen: ${JSON.stringify(seen)}`)), 10_000);
          check = () => {
            if (!arrived()) return;
            clearTimeout(timer);
            resolve();
          };
          check();
        });
        unsubscribe();
        expect(arrived()).toBe(true);
        const logged = seen.find(announced)!;
        expect(logged.kind).toBe('logged');
        const [told] = await other.deliveryLog.getMany([entry.id]);
        expect(told).toMatchObject({ id: entry.id, endpoint_id: hook.id, delivery_id: entry.delivery_id });
      });

      it('has told of every committed change of the cached collections once caughtUp() answers true', async () => {
        const other = backend.openAnother ? await backend.openAnother() : store;
        if (other !== store) opened.push(other);
        const heard = new Set<string>();
        const heardAsked = new Set<string>();
        // The store's own feed tells during the write. Another handle of a shared database that
        // answers at once (its write fence holds) has been told by the write's notice before the
        // write resolved (it names the row); one that asks the database is told by caughtUp itself
        // (id null), whatever notices are on their way.
        const sameHandle = other === store;
        const unsubscribe = other.changes.subscribe((change) => {
          if (change.kind !== 'record') return;
          heard.add(change.collection);
          if (sameHandle || change.id === null) heardAsked.add(change.collection);
        });
        let atOnce = 0;
        /** Once `write` has resolved, the other handle is caught up and has heard of `collection`. */
        const toldOf = async (collection: string, write: () => Promise<unknown>) => {
          heard.clear();
          heardAsked.clear();
          await write();
          const answer = other.changes.caughtUp();
          if (answer === true) {
            atOnce++;
            expect([...heard], collection).toContain(collection);
          } else {
            expect(await answer).toBe(true);
            expect([...heardAsked], collection).toContain(collection);
          }
        };
        // Rounds back to back: a notice alone arrives a moment after the commit.
        for (let round = 0; round < 20; round++) {
          const { user, subscription } = await customerWithSubscription(`caught-${round}@example.test`, `caught-${round}.example.test`);
          let siteId = 0;
          await toldOf('sites', async () => {
            siteId = (await store.sites.insert({ subscription_id: subscription.id, domain: `s.caught-${round}.example.test`, created_at: T0 })).id;
          });
          await toldOf('sites', () => store.sites.remove(siteId));
          let keyId = 0;
          await toldOf('api_keys', async () => {
            keyId = (await store.apiKeys.insert({ user_id: user.id, name: 'k', key_hash: `${round}`.padStart(64, 'c'), key_prefix: 'ncp_0000000000000000', last_used_at: null, expires_at: null, created_at: T0 })).id;
          });
          await toldOf('api_keys', () => store.apiKeys.remove(keyId));
          await toldOf('subscriptions', () => store.subscriptions.update(subscription.id, { status: 'suspended', updated_at: T0 }));
          await toldOf('users', () => store.transaction((tx) => tx.users.update(user.id, { name: `renamed ${round}` })));
          // Removing the user takes its subscriptions with it.
          await toldOf('subscriptions', () => store.users.remove(user.id));
        }
        unsubscribe();
        // Answering at once is what serves caches cheaply: the embedded store always does, and a
        // handle of a shared database whose fence holds does (it joined at its first question).
        expect(atOnce).toBeGreaterThan(0);
      });
    });
  });
}

// Failure paths that a running daemon cannot be pushed into from outside: the app is built
// in-process on a real JSON store in a temporary directory, with one store call replaced.
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { generateApiKey } from '../../src/daemon/auth/api-keys.js';
import { StoreUnavailableError, type Repositories, type Store } from '../../src/store/store.js';

describe('sources in-process', () => {
  let fixture: TestApp;
  let store: Store;
  let app: FastifyInstance;
  let admin: string;
  let customer: { id: number; token: string };

  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, token: string, payload?: object) =>
    app.inject({ method, url: `/api/v1${url}`, headers: { authorization: `Bearer ${token}` }, payload }).then((r) => ({ status: r.statusCode, body: r.json() }));
  /** Every event queued fails as on a full disk; the write it belongs to rolls back. */
  const failOutbox = () => {
    const original = store.transaction.bind(store);
    const failing = (tx: Repositories): Repositories =>
      new Proxy(tx, {
        get(target, name) {
          const value = Reflect.get(target, name);
          if (name !== 'outbox') return value;
          return new Proxy(value, {
            get(outbox, method) {
              if (method === 'enqueue' || method === 'publish') return async () => Promise.reject(new StoreUnavailableError('the store could not write'));
              const member = Reflect.get(outbox, method);
              return typeof member === 'function' ? member.bind(outbox) : member;
            },
          });
        },
      });
    (store as { transaction: Store['transaction'] }).transaction = (fn) => original((tx) => fn(failing(tx)));
    // A write with its event is one store call: it is made, then its commit fails, as the
    // event's queueing failing would fail it (the store undoes it whole).
    const { sites, subscriptions } = store;
    const writes = { siteCreate: sites.create, siteDelete: sites.delete, subscriptionCreate: subscriptions.create, setStatus: subscriptions.setStatus };
    /** `write` made in a transaction whose commit then fails. */
    const committing = <T>(write: (tx: Repositories) => Promise<T>): Promise<T> =>
      original(async (tx) => {
        await write(tx);
        throw new StoreUnavailableError('the store could not write');
      });
    sites.create = (site, event) => committing((tx) => tx.sites.create(site, event));
    sites.delete = (id, customerId, event) => committing((tx) => tx.sites.delete(id, customerId, event));
    subscriptions.create = (record, event) => committing((tx) => tx.subscriptions.create(record, event));
    subscriptions.setStatus = (id, status, at, event) => committing((tx) => tx.subscriptions.setStatus(id, status, at, event));
    return () => {
      (store as { transaction: Store['transaction'] }).transaction = original;
      Object.assign(sites, { create: writes.siteCreate, delete: writes.siteDelete });
      Object.assign(subscriptions, { create: writes.subscriptionCreate, setStatus: writes.setStatus });
    };
  };

  beforeEach(async () => {
    fixture = await buildTestApp();
    ({ store, app } = fixture);
    admin = (await fixture.addUser('admin@example.com', 'admin')).token;
    customer = await fixture.addUser('c@example.com', 'customer');
  });
  afterEach(async () => {
    await fixture.close();
  });

  it('undoes a site creation whose event cannot be queued (503), so a retry publishes it', async () => {
    await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: 'c.example' });
    const restore = failOutbox();
    const failed = await call('POST', '/sites', customer.token, { domain: 'www.c.example' });
    expect([failed.status, failed.body.error]).toEqual([503, 'storage unavailable']);
    expect((await call('GET', '/sites', customer.token)).body.data).toEqual([]);
    restore();
    const retry = await call('POST', '/sites', customer.token, { domain: 'www.c.example' });
    expect(retry.status).toBe(201);
  });

  it('undoes a subscription creation and its default switch, and a suspension, when the event cannot be queued', async () => {
    const first = (await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: 'one.example' })).body.data;
    await new Promise((resolve) => setTimeout(resolve, 5)); // so a changed updated_at would show
    const restore = failOutbox();
    const created = await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: 'two.example', is_default: true });
    expect(created.status).toBe(503);
    const suspended = await call('POST', `/admin/subscriptions/${first.id}/suspend`, admin);
    expect(suspended.status).toBe(503);
    restore();
    const list = (await call('GET', '/subscriptions', customer.token)).body.data;
    expect(list).toEqual([first]);
  });

  it('keeps a site whose deletion event cannot be queued (503), so a retry deletes it and publishes', async () => {
    await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: 'c.example' });
    const site = (await call('POST', '/sites', customer.token, { domain: 'gone.example' })).body.data;
    const restore = failOutbox();
    const res = await call('DELETE', `/sites/${site.id}`, customer.token);
    restore();
    expect([res.status, res.body.error]).toEqual([503, 'storage unavailable']);
    expect((await call('GET', '/sites', customer.token)).body.data).toEqual([site]);
    expect((await call('DELETE', `/sites/${site.id}`, customer.token)).status).toBe(200);
    expect((await call('GET', '/sites', customer.token)).body.data).toEqual([]);
  });

  it('accepts an API key (Bearer or X-API-Key) for the customer routes', async () => {
    await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: 'c.example' });
    const { key, hash, prefix } = generateApiKey();
    await store.apiKeys.insert({ user_id: customer.id, name: 'ci', key_hash: hash, key_prefix: prefix, last_used_at: null, expires_at: null, created_at: new Date().toISOString() });
    const created = await call('POST', '/sites', key, { domain: 'key.example' });
    expect(created.status).toBe(201);
    const listed = await app.inject({ method: 'GET', url: '/api/v1/sites', headers: { 'x-api-key': key } });
    expect([listed.statusCode, listed.json().data.map((s: any) => s.domain)]).toEqual([200, ['key.example']]);
    const subs = await app.inject({ method: 'GET', url: '/api/v1/subscriptions', headers: { 'x-api-key': key } });
    expect(subs.json().data.map((s: any) => s.main_domain)).toEqual(['c.example']);
    expect((await call('DELETE', `/sites/${created.body.data.id}`, key)).status).toBe(200);
  });

  it('shows every site change in GET /sites at once, though listings are memoised between changes', async () => {
    const sub = (await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: 'c.example' })).body.data;
    const domains = async (token: string, query = '') => (await call('GET', `/sites${query}`, token)).body.data.map((s: any) => s.domain);
    // Fill the memo for each view (admin: all; customer: default; explicit subscription).
    expect([await domains(admin), await domains(customer.token), await domains(customer.token, `?subscription_id=${sub.id}`)]).toEqual([[], [], []]);
    const site = (await call('POST', '/sites', customer.token, { domain: 'one.c.example' })).body.data;
    expect([await domains(admin), await domains(customer.token), await domains(customer.token, `?subscription_id=${sub.id}`)]).toEqual([
      ['one.c.example'], ['one.c.example'], ['one.c.example'],
    ]);
    // A creation rolled back (its event could not be queued) never shows.
    const restore = failOutbox();
    expect((await call('POST', '/sites', customer.token, { domain: 'two.c.example' })).status).toBe(503);
    restore();
    expect(await domains(admin)).toEqual(['one.c.example']);
    expect((await call('DELETE', `/sites/${site.id}`, customer.token)).status).toBe(200);
    expect([await domains(admin), await domains(customer.token)]).toEqual([[], []]);
    // A cascade (the customer deleted with their subscriptions and sites) empties the admin's view.
    await call('POST', '/sites', customer.token, { domain: 'three.c.example' });
    expect(await domains(admin)).toEqual(['three.c.example']);
    expect((await call('DELETE', `/admin/users/${customer.id}`, admin)).status).toBe(200);
    expect(await domains(admin)).toEqual([]);
    // The memoised body is the route's own serialisation: the envelope with the documented fields only.
    const again = await app.inject({ method: 'GET', url: '/api/v1/sites', headers: { authorization: `Bearer ${admin}` } });
    expect([again.statusCode, again.headers['content-type'], again.json()]).toEqual([200, 'application/json; charset=utf-8', { data: [], error: null, message: '' }]);
  });

  it('keeps a domain unique under concurrent creations: one 201, the rest 409 with the usual message', async () => {
    const sub = (await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: 'c.example' })).body.data;
    const results = await Promise.all(
      Array.from({ length: 5 }, () => call('POST', '/sites', customer.token, { domain: 'race.example', subscription_id: sub.id })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    for (const r of results.filter((r) => r.status === 409)) expect(r.body.message).toBe('a site with domain race.example already exists');
    expect((await store.sites.listBySubscription(sub.id)).filter((s) => s.domain === 'race.example')).toHaveLength(1);
  });
});

// Subscriptions over HTTP (the app in-process, app.inject): creation rules (customer role, host name, default switching),
// suspension, listing, and the events each change publishes, read from the outbox journal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateEventData } from '../../src/shared/events.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { attachProbe, createCustomer, createSite, createSubscription, eventIds, eventsDuring, eventsSince, RELAXED_LIMITS, type Customer } from './helpers.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

describe('subscriptions', () => {
  let api: TestApp;
  let admin: string;
  let alice: Customer;
  let bob: Customer;

  beforeAll(async () => {
    api = await buildTestApp({ settings: RELAXED_LIMITS });
    admin = await api.login();
    await attachProbe(api, admin);
    alice = await createCustomer(api, admin, 'alice@example.com');
    bob = await createCustomer(api, admin, 'bob@example.com');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('creates a subscription (201) and publishes subscription.created owned by the customer, before answering', async () => {
    const { result: res, events } = await eventsDuring(api, () =>
      api.request('POST', '/admin/subscriptions', { token: admin, body: { customer_id: alice.id, main_domain: 'Alice.EXAMPLE.' } }),
    );
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      data: {
        id: expect.any(Number),
        customer_id: alice.id,
        main_domain: 'alice.example',
        is_default: true,
        status: 'active',
        created_at: expect.stringMatching(ISO),
        updated_at: expect.stringMatching(ISO),
      },
      error: null,
      message: expect.any(String),
    });
    expect(events).toEqual([
      {
        id: expect.any(String),
        event: 'subscription.created',
        owner_id: alice.id,
        data: { subscription_id: res.body.data.id, main_domain: 'alice.example' },
        timestamp: expect.stringMatching(ISO),
      },
    ]);
    expect(validateEventData(events[0].event, events[0].data)).toBeNull();
  });

  it('makes the first subscription the default, and moves the mark only on is_default: true', async () => {
    const carol = await createCustomer(api, admin, 'carol@example.com');
    const first = await createSubscription(api, admin, { customer_id: carol.id, main_domain: 'carol-1.example', is_default: false });
    expect(first.is_default).toBe(true);
    const second = await createSubscription(api, admin, { customer_id: carol.id, main_domain: 'carol-2.example' });
    expect(second.is_default).toBe(false);
    const third = await createSubscription(api, admin, { customer_id: carol.id, main_domain: 'carol-3.example', is_default: true });
    expect(third.is_default).toBe(true);

    const list = await api.request('GET', '/subscriptions', { token: carol.token });
    expect(list.status).toBe(200);
    expect(list.body.data.map((s: any) => [s.id, s.is_default])).toEqual([
      [first.id, false],
      [second.id, false],
      [third.id, true],
    ]);
  });

  it('lists only the caller\'s own subscriptions; an admin sees every customer\'s', async () => {
    const bobs = await createSubscription(api, admin, { customer_id: bob.id, main_domain: 'bob.example' });
    const own = await api.request('GET', '/subscriptions', { token: bob.token });
    expect(own.status).toBe(200);
    expect(own.body.data).toEqual([expect.objectContaining({ id: bobs.id, customer_id: bob.id, main_domain: 'bob.example' })]);

    const all = await api.request('GET', '/subscriptions', { token: admin });
    expect(all.status).toBe(200);
    const owners = new Set(all.body.data.map((s: any) => s.customer_id));
    expect(owners).toContain(alice.id);
    expect(owners).toContain(bob.id);
    expect(all.body.data.map((s: any) => s.id)).toEqual([...all.body.data.map((s: any) => s.id)].sort((a, b) => a - b));

    expect((await api.request('GET', '/subscriptions')).status).toBe(401);
  });

  it('refuses a customer that does not exist or is not a customer (422), bad host names (422) and malformed bodies (400)', async () => {
    const post = (body: unknown) => api.request('POST', '/admin/subscriptions', { token: admin, body });
    const before = await eventIds(api);

    const ghost = await post({ customer_id: 999_999, main_domain: 'ghost.example' });
    expect([ghost.status, ghost.body.error]).toEqual([422, 'validation failed']);
    expect(ghost.body.message).toContain('customer_id');

    const adminUser = (await api.request('GET', '/auth/me', { token: admin })).body.data.id;
    const notCustomer = await post({ customer_id: adminUser, main_domain: 'admin.example' });
    expect(notCustomer.status).toBe(422);
    expect(notCustomer.body.message).toMatch(/customer_id: .*not customer/);

    for (const bad of ['localhost', 'exa mple.com', '-x.example', 'x_y.example', '1.2.3.4', 'a..example', '*.example.com', 'a.example/x', `${'a'.repeat(64)}.example`]) {
      const res = await post({ customer_id: alice.id, main_domain: bad });
      expect([bad, res.status]).toEqual([bad, 422]);
      expect(res.body.message).toContain('main_domain');
    }

    expect((await post({ main_domain: 'x.example' })).status).toBe(400);
    expect((await post({ customer_id: String(alice.id), main_domain: 'x.example' })).status).toBe(400);
    expect((await post({ customer_id: alice.id, main_domain: 'x.example', is_default: 'yes' })).status).toBe(400);
    expect((await post({ customer_id: alice.id, main_domain: 'x.example', plan: 'gold' })).status).toBe(400);
    expect(await eventsSince(api, before)).toEqual([]);
  });

  it('refuses a main domain already used by a subscription (409, whatever its case)', async () => {
    await createSubscription(api, admin, { customer_id: alice.id, main_domain: 'taken.example' });
    const res = await api.request('POST', '/admin/subscriptions', { token: admin, body: { customer_id: bob.id, main_domain: 'TAKEN.example' } });
    expect([res.status, res.body.error]).toEqual([409, 'conflict']);
  });

  it('refuses a main domain that is another customer\'s site (409), but not the customer\'s own', async () => {
    const frank = await createCustomer(api, admin, 'frank@example.com');
    await createSubscription(api, admin, { customer_id: frank.id, main_domain: 'frank.example' });
    await createSite(api, frank.token, { domain: 'shop.frank.example' });
    const res = await api.request('POST', '/admin/subscriptions', { token: admin, body: { customer_id: alice.id, main_domain: 'Shop.Frank.example' } });
    expect([res.status, res.body.error]).toEqual([409, 'conflict']);
    await createSubscription(api, admin, { customer_id: frank.id, main_domain: 'shop.frank.example' });
  });

  it('keeps subscription management to admins (403 for a customer)', async () => {
    const create = await api.request('POST', '/admin/subscriptions', { token: alice.token, body: { customer_id: alice.id, main_domain: 'self.example' } });
    expect(create.status).toBe(403);
    const own = (await api.request('GET', '/subscriptions', { token: alice.token })).body.data[0];
    const suspend = await api.request('POST', `/admin/subscriptions/${own.id}/suspend`, { token: alice.token });
    expect(suspend.status).toBe(403);
    expect((await api.request('GET', '/subscriptions', { token: alice.token })).body.data[0].status).toBe('active');
  });

  it('suspends a subscription once, publishing subscription.suspended; again is 409, unknown is 404', async () => {
    const dave = await createCustomer(api, admin, 'dave@example.com');
    const sub = await createSubscription(api, admin, { customer_id: dave.id, main_domain: 'dave.example' });
    const site = await createSite(api, dave.token, { domain: 'www.dave.example' });

    const { result: res, events } = await eventsDuring(api, () => api.request('POST', `/admin/subscriptions/${sub.id}/suspend`, { token: admin }));
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: sub.id, status: 'suspended', is_default: true });
    expect(events).toEqual([
      expect.objectContaining({ event: 'subscription.suspended', owner_id: dave.id, data: { subscription_id: sub.id, main_domain: 'dave.example' } }),
    ]);

    const { result: again, events: none } = await eventsDuring(api, () => api.request('POST', `/admin/subscriptions/${sub.id}/suspend`, { token: admin }));
    expect([again.status, again.body.error]).toEqual([409, 'conflict']);
    expect(none).toEqual([]);
    expect((await api.request('POST', '/admin/subscriptions/999999/suspend', { token: admin })).status).toBe(404);
    expect((await api.request('POST', '/admin/subscriptions/abc/suspend', { token: admin })).status).toBe(400);

    // Suspended: its sites stay listed and deletable, but no new site can be added.
    const listed = await api.request('GET', '/sites', { token: dave.token });
    expect(listed.body.data.map((s: any) => s.id)).toEqual([site.id]);
    const refused = await api.request('POST', '/sites', { token: dave.token, body: { domain: 'new.dave.example' } });
    expect([refused.status, refused.body.error]).toEqual([409, 'conflict']);
    expect(refused.body.message).toContain('suspended');
    expect((await api.request('DELETE', `/sites/${site.id}`, { token: dave.token })).status).toBe(200);
  });

  it('deleting a customer removes their subscriptions and sites, freeing their domains', async () => {
    const erin = await createCustomer(api, admin, 'erin@example.com');
    const sub = await createSubscription(api, admin, { customer_id: erin.id, main_domain: 'erin.example' });
    const site = await createSite(api, erin.token, { domain: 'shop.erin.example' });
    expect((await api.request('DELETE', `/admin/users/${erin.id}`, { token: admin })).status).toBe(200);

    const subs = await api.request('GET', '/subscriptions', { token: admin });
    expect(subs.body.data.map((s: any) => s.id)).not.toContain(sub.id);
    const sites = await api.request('GET', '/sites', { token: admin });
    expect(sites.body.data.map((s: any) => s.id)).not.toContain(site.id);

    const reuse = await createSubscription(api, admin, { customer_id: bob.id, main_domain: 'erin.example' });
    expect(reuse.id).not.toBe(sub.id);
    const reuseSite = await createSite(api, admin, { domain: 'shop.erin.example', subscription_id: reuse.id });
    expect(reuseSite.id).not.toBe(site.id);
  });
});

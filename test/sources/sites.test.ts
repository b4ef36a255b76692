// Websites over HTTP (the app in-process, app.inject): the subscription context of section 2.7/4.2 (default, explicit,
// 400/403/404, admin sees all), creation and deletion rules, and the site events published
// to the outbox journal with the subscription's customer as owner.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateEventData } from '../../src/shared/events.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { attachProbe, createCustomer, createSite, createSubscription, eventIds, eventsDuring, eventsSince, outboxEvents, RELAXED_LIMITS, type Customer } from './helpers.js';

const ids = (res: { body: any }) => res.body.data.map((s: { id: number }) => s.id);

describe('sites and the subscription context', () => {
  let api: TestApp;
  let admin: string;
  let alice: Customer;
  let bob: Customer;
  let loner: Customer;
  /** alice: a1 (first, default at creation), a2, a3 (made default); bob: b1. */
  let a1: number, a2: number, a3: number, b1: number;
  let siteA1: number, siteA2: number, siteA3: number, siteB1: number;

  beforeAll(async () => {
    api = await buildTestApp({ settings: RELAXED_LIMITS });
    admin = await api.login();
    await attachProbe(api, admin);
    alice = await createCustomer(api, admin, 'alice@example.com');
    bob = await createCustomer(api, admin, 'bob@example.com');
    loner = await createCustomer(api, admin, 'loner@example.com');
    a1 = (await createSubscription(api, admin, { customer_id: alice.id, main_domain: 'alice-one.example' })).id;
    a2 = (await createSubscription(api, admin, { customer_id: alice.id, main_domain: 'alice-two.example' })).id;
    b1 = (await createSubscription(api, admin, { customer_id: bob.id, main_domain: 'bob.example' })).id;
    siteA1 = (await createSite(api, alice.token, { domain: 'a1.example' })).id; // the default (a1) at this point
    siteA2 = (await createSite(api, alice.token, { domain: 'a2.example', subscription_id: a2 })).id;
    a3 = (await createSubscription(api, admin, { customer_id: alice.id, main_domain: 'alice-three.example', is_default: true })).id;
    siteA3 = (await createSite(api, alice.token, { domain: 'a3.example' })).id; // now the default is a3
    siteB1 = (await createSite(api, admin, { domain: 'b1.example', subscription_id: b1 })).id;
  });
  afterAll(async () => {
    await api?.close();
  });

  it('puts a site without subscription_id in the customer\'s default subscription', async () => {
    const all = await api.request('GET', '/sites', { token: admin });
    const bySite = Object.fromEntries(all.body.data.map((s: any) => [s.id, s.subscription_id]));
    expect(bySite).toEqual({ [siteA1]: a1, [siteA2]: a2, [siteA3]: a3, [siteB1]: b1 });
  });

  it('lists the default subscription\'s sites for a customer without subscription_id', async () => {
    const res = await api.request('GET', '/sites', { token: alice.token });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: [{ id: siteA3, subscription_id: a3, domain: 'a3.example', created_at: expect.any(String) }],
      error: null,
      message: '',
    });
    expect(ids(await api.request('GET', '/sites', { token: bob.token }))).toEqual([siteB1]);
  });

  it('selects a subscription with ?subscription_id=', async () => {
    expect(ids(await api.request('GET', `/sites?subscription_id=${a1}`, { token: alice.token }))).toEqual([siteA1]);
    expect(ids(await api.request('GET', `/sites?subscription_id=${a2}`, { token: alice.token }))).toEqual([siteA2]);
    expect(ids(await api.request('GET', `/sites?subscription_id=${a3}`, { token: alice.token }))).toEqual([siteA3]);
  });

  it('answers 403 for another customer\'s subscription, 404 for an unknown one, 400 for anything but a decimal id', async () => {
    const other = await api.request('GET', `/sites?subscription_id=${b1}`, { token: alice.token });
    expect([other.status, other.body.error, other.body.data]).toEqual([403, 'forbidden', null]);
    const unknown = await api.request('GET', '/sites?subscription_id=999999', { token: alice.token });
    expect([unknown.status, unknown.body.error]).toEqual([404, 'not found']);
    expect((await api.request('GET', '/sites?subscription_id=0', { token: alice.token })).status).toBe(400);

    for (const bad of ['abc', '1.5', '', '0x10', '1e1', '%201', `${a1}abc`, '1,2']) {
      const res = await api.request('GET', `/sites?subscription_id=${bad}`, { token: alice.token });
      expect([bad, res.status, res.body.error]).toEqual([bad, 400, 'bad request']);
      expect(res.body.message).toContain('subscription_id');
    }
    const twice = await api.request('GET', `/sites?subscription_id=${a1}&subscription_id=${a2}`, { token: alice.token });
    expect(twice.status).toBe(400);
    const typo = await api.request('GET', `/sites?subscription=${a1}`, { token: alice.token });
    expect(typo.status).toBe(400);
    expect((await api.request('GET', '/sites')).status).toBe(401);
  });

  it('shows an admin every site without subscription_id, and any customer\'s with it', async () => {
    expect(ids(await api.request('GET', '/sites', { token: admin }))).toEqual([siteA1, siteA2, siteA3, siteB1]);
    expect(ids(await api.request('GET', `/sites?subscription_id=${b1}`, { token: admin }))).toEqual([siteB1]);
    expect((await api.request('GET', '/sites?subscription_id=999999', { token: admin })).status).toBe(404);
  });

  it('gives a customer without a subscription an empty list, and refuses to create a site for them (422)', async () => {
    const res = await api.request('GET', '/sites', { token: loner.token });
    expect([res.status, res.body.data]).toEqual([200, []]);
    const create = await api.request('POST', '/sites', { token: loner.token, body: { domain: 'loner.example' } });
    expect([create.status, create.body.error]).toEqual([422, 'validation failed']);
    expect(create.body.message).toContain('subscription_id');
  });

  it('applies the same context rules when creating a site', async () => {
    const before = await eventIds(api);
    const other = await api.request('POST', '/sites', { token: alice.token, body: { domain: 'x.example', subscription_id: b1 } });
    expect(other.status).toBe(403);
    const unknown = await api.request('POST', '/sites', { token: alice.token, body: { domain: 'x.example', subscription_id: 999999 } });
    expect(unknown.status).toBe(404);
    const notInteger = await api.request('POST', '/sites', { token: alice.token, body: { domain: 'x.example', subscription_id: '1' } });
    expect(notInteger.status).toBe(400);
    const fractional = await api.request('POST', '/sites', { token: alice.token, body: { domain: 'x.example', subscription_id: 1.5 } });
    expect(fractional.status).toBe(400);
    const adminWithout = await api.request('POST', '/sites', { token: admin, body: { domain: 'x.example' } });
    expect([adminWithout.status, adminWithout.body.error]).toEqual([400, 'bad request']);
    expect(adminWithout.body.message).toContain('subscription_id');
    expect(await eventsSince(api, before)).toEqual([]);
    expect(ids(await api.request('GET', '/sites', { token: admin }))).toEqual([siteA1, siteA2, siteA3, siteB1]);
  });

  it('validates the domain as a host name (422) and refuses duplicates (409)', async () => {
    const post = (domain: unknown) => api.request('POST', '/sites', { token: alice.token, body: { domain } });
    for (const bad of ['localhost', 'a b.example', 'bad_label.example', '-lead.example', 'trail-.example', '.lead.example', 'a..example',
      '10.0.0.1', 'example.123', 'http://x.example', 'x.example:80', 'x.example/path', 'exa\tmple.com', 'xn--zz.example',
      `${'a'.repeat(64)}.example`, `${'abcdefghi.'.repeat(26)}example`]) {
      const res = await post(bad);
      expect([bad, res.status, res.body.error]).toEqual([bad, 422, 'validation failed']);
      expect(res.body.message).toContain('domain');
    }
    expect((await post(42)).status).toBe(400);
    expect((await api.request('POST', '/sites', { token: alice.token, body: {} })).status).toBe(400);
    expect((await api.request('POST', '/sites', { token: alice.token, body: { domain: 'ok.example', extra: 1 } })).status).toBe(400);

    const dup = await post('A1.Example.');
    expect([dup.status, dup.body.error]).toEqual([409, 'conflict']);
    const bobDup = await api.request('POST', '/sites', { token: bob.token, body: { domain: 'a1.example' } });
    expect(bobDup.status).toBe(409);
    const othersMain = await api.request('POST', '/sites', { token: alice.token, body: { domain: 'bob.example' } });
    expect(othersMain.status).toBe(409);
    // Its own subscription's main domain is fine.
    const ownMain = await createSite(api, bob.token, { domain: 'bob.example' });

    const idn = await createSite(api, alice.token, { domain: 'Bücher.Example' });
    expect(idn.domain).toBe('xn--bcher-kva.example');
    expect((await post('xn--bcher-kva.example')).status).toBe(409);
    for (const id of [ownMain.id, idn.id]) expect((await api.request('DELETE', `/sites/${id}`, { token: admin })).status).toBe(200);
  });

  it('publishes site.created and site.deleted owned by the subscription\'s customer, before answering', async () => {
    // Created by the customer in their default subscription.
    const { result: created, events: createdEvents } = await eventsDuring(api, () =>
      api.request('POST', '/sites', { token: alice.token, body: { domain: 'Events.Example' } }),
    );
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({ id: expect.any(Number), subscription_id: a3, domain: 'events.example', created_at: expect.any(String) });
    expect(createdEvents).toEqual([
      { id: expect.any(String), event: 'site.created', owner_id: alice.id, data: { site_id: created.body.data.id, domain: 'events.example' }, timestamp: expect.any(String) },
    ]);

    // Created and deleted by an admin: the owner is still the customer.
    const { result: byAdmin, events: adminEvents } = await eventsDuring(api, () =>
      api.request('POST', '/sites', { token: admin, body: { domain: 'admin-made.example', subscription_id: b1 } }),
    );
    expect(byAdmin.status).toBe(201);
    expect(adminEvents).toEqual([expect.objectContaining({ event: 'site.created', owner_id: bob.id, data: { site_id: byAdmin.body.data.id, domain: 'admin-made.example' } })]);

    const { result: deleted, events: deletedEvents } = await eventsDuring(api, () =>
      api.request('DELETE', `/sites/${byAdmin.body.data.id}`, { token: admin }),
    );
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toEqual({ id: byAdmin.body.data.id });
    expect(deletedEvents).toEqual([expect.objectContaining({ event: 'site.deleted', owner_id: bob.id, data: { site_id: byAdmin.body.data.id, domain: 'admin-made.example' } })]);

    const { result: own, events: ownEvents } = await eventsDuring(api, () =>
      api.request('DELETE', `/sites/${created.body.data.id}`, { token: alice.token }),
    );
    expect(own.body).toEqual({ data: { id: created.body.data.id }, error: null, message: expect.any(String) });
    expect(ownEvents).toEqual([
      { id: expect.any(String), event: 'site.deleted', owner_id: alice.id, data: { site_id: created.body.data.id, domain: 'events.example' }, timestamp: expect.any(String) },
    ]);

    for (const event of [...createdEvents, ...adminEvents, ...deletedEvents, ...ownEvents]) {
      expect(validateEventData(event.event, event.data)).toBeNull();
      expect(Number.isInteger(event.data.site_id)).toBe(true);
    }
  });

  it('refuses to delete another customer\'s site (403), an unknown one (404), and deletes once', async () => {
    const before = await eventIds(api);
    const foreign = await api.request('DELETE', `/sites/${siteB1}`, { token: alice.token });
    expect([foreign.status, foreign.body.error, foreign.body.data]).toEqual([403, 'forbidden', null]);
    expect(ids(await api.request('GET', '/sites', { token: bob.token }))).toContain(siteB1);
    expect((await api.request('DELETE', '/sites/999999', { token: alice.token })).status).toBe(404);
    expect((await api.request('DELETE', '/sites/abc', { token: alice.token })).status).toBe(400);
    expect(await eventsSince(api, before)).toEqual([]);

    const temp = await createSite(api, bob.token, { domain: 'temp.bob.example' });
    expect((await api.request('DELETE', `/sites/${temp.id}`, { token: bob.token })).status).toBe(200);
    expect((await api.request('DELETE', `/sites/${temp.id}`, { token: bob.token })).status).toBe(404);
  });

  it('refuses a NUL character in any string of a request (422 naming the field), on either store', async () => {
    const event = await api.request('POST', '/admin/events', {
      token: admin,
      body: { event: 'site.created', data: { site_id: 1, domain: 'nul\u0000.example' } },
    });
    expect(event.status).toBe(422);
    expect(event.body).toEqual({ data: null, error: 'validation failed', message: 'data.domain: must not contain the NUL character (U+0000)' });
    const user = await api.request('POST', '/admin/users', { token: admin, body: { email: 'nul@example.com', name: 'N\u0000', role: 'customer', password: 'a-long-password-1' } });
    expect(user.status).toBe(422);
    expect(user.body.message).toBe('name: must not contain the NUL character (U+0000)');
    expect((await api.request('GET', '/admin/users', { token: admin })).body.data.map((u: { email: string }) => u.email)).not.toContain('nul@example.com');
  });

  it('creates one site when the same domain is posted many times at once', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, () => api.request('POST', '/sites', { token: alice.token, body: { domain: 'race.example' } })),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(409)]);
    const created = results.find((r) => r.status === 201)!.body.data.id;
    const events = (await outboxEvents(api)).filter((e) => e.event === 'site.created' && e.data.domain === 'race.example');
    expect(events.map((e) => e.data.site_id)).toEqual([created]);
  });
});

describe('default subscription without a mark', () => {
  it('falls back to the oldest subscription when none is marked default', async () => {
    let api = await buildTestApp();
    try {
      const admin = await api.login();
      const cust = await createCustomer(api, admin, 'old@example.com');
      const oldest = await createSubscription(api, admin, { customer_id: cust.id, main_domain: 'oldest.example' });
      const newer = await createSubscription(api, admin, { customer_id: cust.id, main_domain: 'newer.example', is_default: true });
      const oldSite = await createSite(api, cust.token, { domain: 'old-site.example', subscription_id: oldest.id });
      await createSite(api, cust.token, { domain: 'new-site.example', subscription_id: newer.id });

      // A store written without the mark (an older version, or edited by hand while stopped):
      // the JSON store's file here (the PostgreSQL store gets the same state by SQL).
      // Stopped cleanly, the store has folded its journal into store.json.
      api = await api.restart(async () => {
        if (api.databaseUrl) {
          const pg = (await import('pg')).default;
          const client = new pg.Client({ connectionString: api.databaseUrl });
          await client.connect();
          await client.query('UPDATE subscriptions SET is_default = false');
          await client.end();
        } else {
          const file = join(api.dataDir, 'store.json');
          const store = JSON.parse(await readFile(file, 'utf8'));
          for (const s of store.subscriptions) s.is_default = false;
          await writeFile(file, JSON.stringify(store));
        }
      });

      const token = await api.login('old@example.com', 'customer-password-1');
      const res = await api.request('GET', '/sites', { token });
      expect(res.status).toBe(200);
      expect(ids(res)).toEqual([oldSite.id]);
    } finally {
      await api.close();
    }
  });
});

// The event catalogue drives validation: POST /admin/events checks every entry's fields
// (one table-driven test over EVENT_CATALOGUE), and what the daemon accepts lands in its outbox.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_CATALOGUE, type EventType } from '../../src/shared/events.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { attachProbe, createCustomer, eventsDuring, RELAXED_LIMITS, type Customer } from './helpers.js';

/** Section 6.1 of the description, written out independently of the code under test. */
const SECTION_6_1: Record<string, Record<string, 'integer' | 'string'>> = {
  'site.created': { site_id: 'integer', domain: 'string' },
  'site.deleted': { site_id: 'integer', domain: 'string' },
  'domain.created': { domain_id: 'integer', name: 'string' },
  'domain.deleted': { domain_id: 'integer', name: 'string' },
  'database.created': { database_id: 'integer', name: 'string' },
  'database.deleted': { database_id: 'integer', name: 'string' },
  'email.created': { mailbox_id: 'integer', email: 'string' },
  'ftp.created': { ftp_account_id: 'integer', username: 'string' },
  'backup.completed': { schedule_id: 'integer', name: 'string' },
  'subscription.created': { subscription_id: 'integer', main_domain: 'string' },
  'subscription.suspended': { subscription_id: 'integer', main_domain: 'string' },
  'webhook.test': { message: 'string' },
};

/** The operational events of CONTRACT section 7: only the owner's endpoints naming them receive them. */
const OPERATIONAL: Record<string, Record<string, 'integer' | 'string'>> = {
  'delivery.failed': { endpoint_id: 'integer', delivery_id: 'string', event: 'string', reason: 'string', attempts: 'integer' },
  'endpoint.disabled': { endpoint_id: 'integer', url: 'string', reason: 'string' },
};

function validData(type: EventType): Record<string, unknown> {
  return Object.fromEntries(Object.entries(type.fields).map(([field, kind]) => [field, kind === 'integer' ? 42 : `${field}-value`]));
}

/** A value of the wrong JSON type for a field of the given kind (a numeric string for an integer). */
function wrongType(kind: 'integer' | 'string'): unknown[] {
  return kind === 'integer' ? ['42', 4.5, true, { id: 1 }] : [42, false, ['x']];
}

describe('event catalogue', () => {
  let api: TestApp;
  let admin: string;
  let customer: Customer;

  beforeAll(async () => {
    api = await buildTestApp({ settings: RELAXED_LIMITS });
    admin = await api.login();
    await attachProbe(api, admin);
    customer = await createCustomer(api, admin, 'catalogue@example.com');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('holds exactly the twelve events of section 6.1 and the two operational ones, and serves them at GET /events/types', async () => {
    expect(Object.fromEntries(EVENT_CATALOGUE.map((e) => [e.name, e.fields]))).toEqual({ ...SECTION_6_1, ...OPERATIONAL });
    const res = await api.request('GET', '/events/types', { token: customer.token });
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual(EVENT_CATALOGUE.map((e) => ({ name: e.name, description: e.description, fields: e.fields })));
  });

  it('validates every entry\'s data fields on POST /admin/events', async () => {
    const publish = (event: string, data: unknown, owner_id: number | null = customer.id) =>
      api.request('POST', '/admin/events', { token: admin, body: { event, data, owner_id } });
    const expect422 = async (label: string, event: string, data: unknown, mentions: string) => {
      const res = await publish(event, data);
      expect([label, res.status, res.body.error]).toEqual([label, 422, 'validation failed']);
      expect(res.body.data).toBeNull();
      expect(res.body.message, label).toContain(mentions);
    };

    for (const type of EVENT_CATALOGUE) {
      const valid = validData(type);
      for (const [field, kind] of Object.entries(type.fields)) {
        const { [field]: _omitted, ...missing } = valid;
        await expect422(`${type.name} without ${field}`, type.name, missing, `data.${field}`);
        await expect422(`${type.name} with ${field} null`, type.name, { ...valid, [field]: null }, `data.${field}`);
        for (const bad of wrongType(kind)) {
          await expect422(`${type.name} with ${field}=${JSON.stringify(bad)}`, type.name, { ...valid, [field]: bad }, `data.${field}`);
        }
        if (kind === 'integer') await expect422(`${type.name} with ${field}=0`, type.name, { ...valid, [field]: 0 }, `data.${field}`);
        if (kind === 'string') await expect422(`${type.name} with ${field} empty`, type.name, { ...valid, [field]: '' }, `data.${field}`);
      }
      for (const extra of ['extra_field', 'constructor', 'toString']) {
        await expect422(`${type.name} with ${extra}`, type.name, { ...valid, [extra]: 'x' }, `data.${extra}`);
      }

      const { result: res, events } = await eventsDuring(api, () => publish(type.name, valid));
      expect([type.name, res.status]).toEqual([type.name, 200]);
      // Two endpoints receive it: the admin's probe and the owner's; an operational event, neither (both are `*`).
      expect(res.body.data).toEqual({ event_id: expect.stringMatching(/^[0-9a-f-]{36}$/), deliveries: type.name in OPERATIONAL ? 0 : 2 });
      // The outbox shows events through their deliveries: an operational one here has none.
      const published = [{ id: expect.any(String), event: type.name, owner_id: customer.id, data: valid, timestamp: expect.any(String) }];
      expect(events).toEqual(type.name in OPERATIONAL ? [] : published);
    }

    for (const unknown of ['site.updated', 'SITE.CREATED', 'site.created ', '*']) {
      await expect422(`unknown event ${JSON.stringify(unknown)}`, unknown, { site_id: 1, domain: 'a.example' }, 'event');
    }
  });

  it('treats a malformed body as 400 and an unknown owner or a customer caller as refused', async () => {
    const noData = await api.request('POST', '/admin/events', { token: admin, body: { event: 'site.created' } });
    expect(noData.status).toBe(400);
    expect(noData.body.message).toContain('data');
    const arrayData = await api.request('POST', '/admin/events', { token: admin, body: { event: 'site.created', data: [1] } });
    expect(arrayData.status).toBe(400);
    const ghost = await api.request('POST', '/admin/events', {
      token: admin,
      body: { event: 'site.created', data: { site_id: 1, domain: 'a.example' }, owner_id: 999_999 },
    });
    expect(ghost.status).toBe(422);
    expect(ghost.body.message).toContain('owner_id');
    const asCustomer = await api.request('POST', '/admin/events', {
      token: customer.token,
      body: { event: 'site.created', data: { site_id: 1, domain: 'a.example' } },
    });
    expect(asCustomer.status).toBe(403);
  });
});

// Strict ids (CONTRACT section 6): path and query ids are decimal integers 1 … 2^53 − 1 written
// plainly, anything else is a 400 that names the field; body ids out of that range are a 422
// that names the field (never "subscription Infinity not found"). Built in-process: app.inject.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/daemon/app.js';
import { layout } from '../../src/shared/paths.js';
import { JsonStore } from '../../src/store/json/json-store.js';

const MAX = '9007199254740991';
const NOT_IDS = ['0x1', '1e3', '1e0', '01', '007', '0', '-1', '+1', '1.0', '1.5', ' 1', '1 ', '%201', 'abc', '9007199254740992', '99999999999999999999', 'Infinity', 'NaN'];

describe('strict ids', () => {
  let dir: string;
  let store: JsonStore;
  let app: FastifyInstance;
  let admin: string;
  let customerId: number;
  let webhookId: number;

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: string | object) =>
    app
      .inject({
        method,
        url: `/api/v1${url}`,
        headers: { authorization: `Bearer ${admin}`, ...(typeof payload === 'string' ? { 'content-type': 'application/json' } : {}) },
        payload,
      })
      .then((r) => ({ status: r.statusCode, body: r.json() }));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-ids-'));
    store = await JsonStore.open(layout(dir), { create: true });
    app = await buildApp({ store, paths: layout(dir), jwtSecret: new TextEncoder().encode('s'.repeat(64)) });
    const now = new Date().toISOString();
    const user = { name: 'x', password_hash: 'x', totp_secret: null, totp_pending_secret: null, two_factor_enabled: false, totp_last_step: null, created_at: now, updated_at: now };
    const adminUser = await store.users.insert({ ...user, email: 'admin@example.com', role: 'admin' });
    customerId = (await store.users.insert({ ...user, email: 'c@example.com', role: 'customer' })).id;
    admin = await app.tokens.issue(adminUser.id, 'admin', 3600);
    const created = await call('POST', '/webhooks', { url: 'https://192.0.3.1/hook', secret: 's', events: '*', active: false });
    expect(created.status).toBe(201);
    webhookId = created.body.data.id;
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the plain decimal id, and answers 404 for an unknown one up to 2^53 − 1', async () => {
    expect((await call('GET', `/webhooks/${webhookId}`)).body.data.id).toBe(webhookId);
    const unknown = await call('GET', `/webhooks/${MAX}`);
    expect([unknown.status, unknown.body.message]).toEqual([404, `webhook ${MAX} not found`]);
  });

  it.each(NOT_IDS)('answers 400 naming the path parameter for /webhooks/%s', async (bad) => {
    const res = await call('GET', `/webhooks/${bad.includes('%') ? bad : encodeURIComponent(bad)}`);
    expect([res.status, res.body.error, res.body.data]).toEqual([400, 'bad request', null]);
    expect(res.body.message).toBe(`path parameter id: must be a decimal integer from 1 to ${MAX} (no sign, no leading zeros)`);
  });

  it('applies to every id in the path: entry_id, a user, a subscription, a site, a key', async () => {
    const redeliver = await call('POST', `/webhooks/${webhookId}/deliveries/0x2/redeliver`);
    expect([redeliver.status, redeliver.body.message]).toEqual([400, expect.stringMatching(/^path parameter entry_id: must be a decimal integer/)]);
    for (const [method, url] of [
      ['DELETE', '/admin/users/1e0'],
      ['POST', '/admin/subscriptions/01/suspend'],
      ['DELETE', '/sites/0x10'],
      ['DELETE', '/auth/api-keys/-3'],
      ['PUT', '/webhooks/1.0'],
      ['GET', '/webhooks/0/deliveries'],
      ['POST', '/webhooks/00/test'],
    ] as const) {
      const res = await call(method, url, method === 'PUT' ? { active: true } : undefined);
      expect([url, res.status, res.body.message]).toEqual([url, 400, expect.stringMatching(/^path parameter id: must be a decimal integer/)]);
    }
  });

  it('applies to ids in the query: subscription_id, user_id, endpoint_id (the stream too)', async () => {
    for (const url of ['/sites?subscription_id=1e3', '/sites?subscription_id=0', '/webhooks?user_id=01', '/webhooks/deliveries/stream?endpoint_id=0x1']) {
      const res = await call('GET', url);
      const name = url.split('?')[1].split('=')[0];
      expect([url, res.status, res.body.message]).toEqual([url, 400, `query parameter ${name}: must be a decimal integer from 1 to ${MAX} (no sign, no leading zeros)`]);
    }
    const twice = await call('GET', '/sites?subscription_id=1&subscription_id=2');
    expect([twice.status, twice.body.message]).toEqual([400, expect.stringMatching(/^query parameter subscription_id: /)]);
    const unknown = await call('GET', `/sites?subscription_id=${MAX}`);
    expect(unknown.status).toBe(404);
  });

  it('reads other query integers in plain decimal too, their range staying a 422', async () => {
    const hex = await call('GET', `/webhooks/${webhookId}/deliveries?limit=0x10`);
    expect([hex.status, hex.body.message]).toEqual([400, 'query parameter limit: must be a single decimal integer']);
    const big = await call('GET', `/webhooks/${webhookId}/deliveries?limit=1001`);
    expect([big.status, big.body.message]).toEqual([422, 'query parameter limit: must be <= 1000']);
    expect((await call('GET', `/webhooks/${webhookId}/deliveries?limit=5`)).status).toBe(200);
  });

  it('refuses body ids beyond 2^53 − 1 (1e400 is Infinity to JSON.parse) with 422 naming the field', async () => {
    const cases: Array<[string, string, string]> = [
      ['/sites', '{"domain":"a.example","subscription_id":1e400}', 'subscription_id'],
      ['/sites', '{"domain":"a.example","subscription_id":9007199254740992}', 'subscription_id'],
      ['/admin/subscriptions', '{"customer_id":1e400,"main_domain":"a.example"}', 'customer_id'],
      ['/admin/events', '{"event":"site.created","data":{"site_id":1,"domain":"a.example"},"owner_id":1e400}', 'owner_id'],
    ];
    for (const [url, body, field] of cases) {
      const res = await call('POST', url, body);
      expect([url, res.status, res.body.error, res.body.message]).toEqual([url, 422, 'validation failed', `${field}: must be <= ${MAX}`]);
    }
    const zero = await call('POST', '/admin/subscriptions', { customer_id: 0, main_domain: 'a.example' });
    expect([zero.status, zero.body.message]).toEqual([422, 'customer_id: must be >= 1']);
    const text = await call('POST', '/admin/subscriptions', { customer_id: String(customerId), main_domain: 'a.example' });
    expect([text.status, text.body.message]).toEqual([400, 'customer_id: must be integer']);
    const fine = await call('POST', '/admin/subscriptions', { customer_id: customerId, main_domain: 'a.example' });
    expect(fine.status).toBe(201);
  });
});

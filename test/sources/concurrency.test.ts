// Uniqueness is the store's rule, whatever the timing: 20 concurrent creations of one user email,
// one site domain or one subscription main domain give one 201 and 19 409s, and the store holds
// one such record. Runs on both stores (the postgres project runs the app on PostgreSQL), in-process.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { RELAXED_LIMITS, createCustomer, createSubscription, type Customer } from './helpers.js';

const RACERS = 20;

describe('concurrent creations of one unique name', () => {
  let api: TestApp;
  let admin: string;
  let customer: Customer;

  beforeAll(async () => {
    api = await buildTestApp({ settings: RELAXED_LIMITS });
    admin = await api.login();
    customer = await createCustomer(api, admin, 'racer@example.com');
  });
  afterAll(async () => {
    await api?.close();
  });

  const statuses = (results: Array<{ status: number }>) => results.map((r) => r.status).sort();
  const expected = [201, ...Array<number>(RACERS - 1).fill(409)];

  it(`${RACERS} POST /admin/users with one email: one 201, ${RACERS - 1} 409s, one such user`, async () => {
    const results = await Promise.all(
      Array.from({ length: RACERS }, (_, i) =>
        api.request('POST', '/admin/users', { token: admin, body: { email: i % 2 ? 'Same@Example.com' : 'same@example.com', name: `Same ${i}`, password: 'same-password-1', role: 'customer' } }),
      ),
    );
    expect(statuses(results)).toEqual(expected);
    for (const r of results.filter((r) => r.status === 409)) expect(r.body).toMatchObject({ data: null, error: 'conflict', message: 'a user with email same@example.com already exists' });
    const users = (await api.request('GET', '/admin/users', { token: admin })).body.data as Array<{ email: string }>;
    expect(users.filter((u) => u.email === 'same@example.com')).toHaveLength(1);
  });

  it(`${RACERS} POST /sites with one domain: one 201, ${RACERS - 1} 409s, one such site`, async () => {
    const sub = await createSubscription(api, admin, { customer_id: customer.id, main_domain: 'racer.example' });
    const results = await Promise.all(
      Array.from({ length: RACERS }, () => api.request('POST', '/sites', { token: customer.token, body: { domain: 'race.racer.example', subscription_id: sub.id } })),
    );
    expect(statuses(results)).toEqual(expected);
    const sites = (await api.request('GET', `/sites?subscription_id=${sub.id}`, { token: customer.token })).body.data as Array<{ domain: string }>;
    expect(sites.filter((s) => s.domain === 'race.racer.example')).toHaveLength(1);
  });

  it(`${RACERS} POST /admin/subscriptions with one main domain: one 201, ${RACERS - 1} 409s, one such subscription`, async () => {
    const results = await Promise.all(
      Array.from({ length: RACERS }, () =>
        api.request('POST', '/admin/subscriptions', { token: admin, body: { customer_id: customer.id, main_domain: 'contested.example' } }),
      ),
    );
    expect(statuses(results)).toEqual(expected);
    const subs = (await api.request('GET', '/subscriptions', { token: admin })).body.data as Array<{ main_domain: string }>;
    expect(subs.filter((s) => s.main_domain === 'contested.example')).toHaveLength(1);
  });
});

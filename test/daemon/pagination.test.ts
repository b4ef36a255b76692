// Every list a page at a time (CONTRACT section 7): `limit` and `after`, id order, and the next
// page in a `Link` header; and the CLI's client, which follows those links to the end. The app is
// built in-process on a real JSON store (app.inject), and listens on loopback for the client.
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ApiClient, nextPage } from '../../src/cli/api-client.js';
import type { Store } from '../../src/store/store.js';

describe('paginated lists', () => {
  let fixture: TestApp;
  let store: Store;
  let app: FastifyInstance;
  let admin: string;
  let customer: { id: number; token: string };

  const get = async (url: string, token: string) => {
    const res = await app.inject({ method: 'GET', url: `/api/v1${url}`, headers: { authorization: `Bearer ${token}` } });
    return { status: res.statusCode, body: res.json(), link: res.headers.link as string | undefined };
  };
  /** Walks a list from its first page by the `Link` headers; the ids of every page. */
  async function walk(first: string, token: string, between: () => Promise<void> = async () => {}): Promise<number[][]> {
    const pages: number[][] = [];
    let url: string | null = first;
    while (url) {
      const page = await get(url, token);
      expect(page.status).toBe(200);
      pages.push(page.body.data.map((item: { id: number }) => item.id));
      url = nextPage(page.link);
      await between();
    }
    return pages;
  }

  beforeEach(async () => {
    fixture = await buildTestApp();
    ({ store, app } = fixture);
    admin = (await fixture.addUser('admin@example.com', 'admin')).token;
    customer = await fixture.addUser('c@example.com', 'customer');
  });
  afterEach(async () => {
    await fixture.close();
  });

  it('walks 2,500 sites in three pages with no gap or repeat while sites are created and deleted', async () => {
    const now = new Date().toISOString();
    const subscription = await store.subscriptions.insert({
      customer_id: customer.id, main_domain: 'c.example', is_default: true, status: 'active', created_at: now, updated_at: now,
    });
    // Inserted at once: the store commits them together, and gives ids in call order.
    const ids = (await Promise.all(Array.from({ length: 2_500 }, (_, i) => store.sites.insert({ subscription_id: subscription.id, domain: `s${i}.c.example`, created_at: now })))).map(
      (site) => site.id,
    );
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const first = await get('/sites', customer.token);
    expect([first.body.data.length, first.link]).toEqual([1000, `</api/v1/sites?after=${ids[999]}>; rel="next"`]);

    // Between pages: one site created (it gets a larger id, so it comes on a later page) and one
    // site of a page already read deleted (it was read once, before it went).
    let n = 0;
    const churn = async () => {
      n++;
      await store.sites.insert({ subscription_id: subscription.id, domain: `new${n}.c.example`, created_at: now });
      await store.sites.remove(ids[n * 10]);
    };
    const pages = await walk('/sites', customer.token, churn);
    const seen = pages.flat();
    expect(pages.map((p) => p.length)).toEqual([1000, 1000, 502]);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    for (const id of ids) expect(seen).toContain(id);
  });

  it('pages every list in id order with limit and after, and answers the last page without a Link', async () => {
    const now = new Date().toISOString();
    for (let i = 0; i < 5; i++) {
      await store.subscriptions.insert({ customer_id: customer.id, main_domain: `m${i}.example`, is_default: i === 0, status: 'active', created_at: now, updated_at: now });
      await store.apiKeys.insert({ user_id: customer.id, name: `k${i}`, key_hash: `h${i}`, key_prefix: `ncp_${i}`, last_used_at: null, expires_at: null, created_at: now });
      await store.webhooks.insert({
        user_id: customer.id, url: `https://h${i}.example/hook`, secret: 'secret-of-sixteen', events: '*', active: true,
        signature: 'seed', created_at: now, updated_at: now,
      });
    }
    for (const [url, token, total] of [
      ['/subscriptions', customer.token, 5],
      ['/auth/api-keys', customer.token, 5],
      ['/webhooks', customer.token, 5],
      // The fixture's first admin (as `panelctl init` makes it), this admin and the customer.
      ['/admin/users', admin, 3],
    ] as const) {
      const pages = await walk(`${url}?limit=2`, token);
      expect(pages.flat(), url).toHaveLength(total);
      expect(pages.every((p) => p.length <= 2), url).toBe(true);
      expect(pages.flat(), url).toEqual([...pages.flat()].sort((a, b) => a - b));
      const last = await get(`${url}?limit=${total}`, token);
      expect([last.body.data.length, last.link], url).toEqual([total, undefined]);
    }
  });

  it('keeps other query parameters in the next link, and refuses limits outside 1–1000', async () => {
    const now = new Date().toISOString();
    const subscription = await store.subscriptions.insert({ customer_id: customer.id, main_domain: 'c.example', is_default: true, status: 'active', created_at: now, updated_at: now });
    for (let i = 0; i < 3; i++) await store.sites.insert({ subscription_id: subscription.id, domain: `s${i}.c.example`, created_at: now });
    const page = await get(`/sites?subscription_id=${subscription.id}&limit=2`, admin);
    expect(page.link).toMatch(new RegExp(`^</api/v1/sites\\?subscription_id=${subscription.id}&limit=2&after=\\d+>; rel="next"$`));
    for (const limit of ['0', '1001']) {
      const refused = await get(`/sites?limit=${limit}`, admin);
      expect([refused.status, refused.body.error, refused.body.message]).toEqual([422, 'validation failed', expect.stringMatching(/^query parameter limit: must be/)]);
    }
    expect((await get('/sites?after=abc', admin)).status).toBe(400);
  });

  it('reads a delivery log newest first, where after means older', async () => {
    const now = new Date().toISOString();
    const hook = await store.webhooks.insert({
      user_id: customer.id, url: 'https://h.example/hook', secret: 'secret-of-sixteen', events: '*', active: true,
      signature: 'seed', created_at: now, updated_at: now,
    });
    await store.deliveryLog.append(
      Array.from({ length: 5 }, (_, i) => ({
        event: 'site.created', payload: { i }, status_code: 200, response: '', success: true, duration_ms: 1, created_at: now,
        attempt: 1, delivery_id: `d${i}`, endpoint_id: hook.id, request_headers: {}, reason: null,
      })),
    );
    const pages = await walk(`/webhooks/${hook.id}/deliveries?limit=2`, customer.token);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat()).toEqual([...pages.flat()].sort((a, b) => b - a));
  });

  it("the CLI's client reads every page, or stops at --limit", async () => {
    const now = new Date().toISOString();
    const subscription = await store.subscriptions.insert({ customer_id: customer.id, main_domain: 'c.example', is_default: true, status: 'active', created_at: now, updated_at: now });
    await Promise.all(Array.from({ length: 2_300 }, (_, i) => store.sites.insert({ subscription_id: subscription.id, domain: `s${i}.c.example`, created_at: now })));
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const client = new ApiClient({ baseUrl: address, token: customer.token });
    try {
      const all = await client.list<{ id: number }>('/sites');
      expect(all).toHaveLength(2_300);
      expect(new Set(all.map((s) => s.id)).size).toBe(2_300);
      expect(await client.list('/sites', 1_500)).toHaveLength(1_500);
      expect(await client.list('/sites', 3)).toHaveLength(3);
    } finally {
      await client.close();
    }
  });
});

// Open streams end when their credential expires (by the daemon's clock, which the test moves)
// and when their caller's role changes in the store: the app is built in-process on the run's
// store (JSON, or PostgreSQL in the postgres project, whose change feed then tells the app) and
// listens on a loopback port, since only a socket shows a stream ending.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, fixedClock, type TestApp } from '../helpers/app.js';

const START = Date.parse('2030-05-01T10:00:00Z');
const PASSWORD = 'stream-expiry-password-1';
/** A stream ends within a second of its credential's end; this leaves room for a busy machine. */
const ENDS_WITHIN_MS = 2_500;

describe('open streams and the end of their credential', () => {
  let t: TestApp;
  let base: string;
  const clock = fixedClock(START);

  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, body?: object) => t.request(method, url, { token, body });
  const login = async (email: string) => (await call('POST', '/auth/login', undefined, { email, password: PASSWORD })).body.data.token as string;

  /** Opens a stream; `ended` turns true when the daemon ends it, `text` holds what came. */
  const openStream = async (path: string, token: string) => {
    const controller = new AbortController();
    const response = await request(`${base}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
    expect(response.statusCode).toBe(200);
    response.body.setEncoding('utf8');
    const state = { text: '', ended: false, close: () => controller.abort() };
    void (async () => {
      try {
        for await (const chunk of response.body) state.text += chunk;
      } catch {
        // aborted
      }
      state.ended = true;
    })();
    await vi.waitFor(() => expect(state.text).toContain(': connected'));
    return state;
  };

  beforeAll(async () => {
    t = await buildTestApp({ clock });
    for (const [email, role] of [['admin@expiry.test', 'admin'], ['second@expiry.test', 'admin'], ['user@expiry.test', 'customer']] as const) {
      await t.addUser(email, role, PASSWORD);
    }
    base = await t.listen();
    await t.app.settings.update({ rate_limit_mode: 'lockout', jwt_ttl_seconds: 600 });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("ends an API key's delivery stream and listen session at the key's expires_at", async () => {
    const jwt = await login('user@expiry.test');
    const created = await call('POST', '/auth/api-keys', jwt, { name: 'expiring', expires_at: new Date(clock.now() + 60_000).toISOString() });
    expect(created.status).toBe(201);
    const key = created.body.data.key as string;
    const stream = await openStream('/webhooks/deliveries/stream', key);
    const listen = await openStream('/events/listen', key);
    clock.advance(59_000);
    expect((await call('GET', '/auth/me', key)).status).toBe(200);
    expect(stream.ended || listen.ended).toBe(false);
    clock.advance(1_000);
    await vi.waitFor(() => expect(stream.ended && listen.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    expect(stream.text).toContain(': ended: the API key has expired');
  });

  it("ends a JWT's stream at the token's exp", async () => {
    const jwt = await login('user@expiry.test');
    const stream = await openStream('/webhooks/deliveries/stream', jwt);
    clock.advance(600_000);
    await vi.waitFor(() => expect(stream.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
  });

  it("ends an admin's stream when the store demotes them to customer, and a customer's stays open", async () => {
    const admin = await login('second@expiry.test');
    const customer = await login('user@expiry.test');
    const adminStream = await openStream('/webhooks/deliveries/stream', admin);
    const customerStream = await openStream('/webhooks/deliveries/stream', customer);
    const second = await t.store.users.byEmail('second@expiry.test');
    await t.store.users.update(second!.id, { role: 'customer' });
    await vi.waitFor(() => expect(adminStream.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    expect(adminStream.text).toContain('role changed to customer');
    expect(customerStream.ended).toBe(false);
    customerStream.close();
  });
});

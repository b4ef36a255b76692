// Open streams end when their credential expires (by the daemon's clock, which the test moves)
// and when their caller's role changes in the store: the app is built in-process on a real JSON
// store and listens on a loopback port, since only a socket shows a stream ending.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/daemon/app.js';
import { hashPassword } from '../../src/daemon/auth/password.js';
import { layout } from '../../src/shared/paths.js';
import { openStore } from '../../src/store/factory.js';
import type { Store } from '../../src/store/store.js';

const START = Date.parse('2030-05-01T10:00:00Z');
const PASSWORD = 'stream-expiry-password-1';
/** A stream ends within a second of its credential's end; this leaves room for a busy machine. */
const ENDS_WITHIN_MS = 2_500;

describe('open streams and the end of their credential', () => {
  let dir: string;
  let store: Store;
  let app: FastifyInstance;
  let base: string;
  let now = START;

  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, body?: object) => {
    const response = await app.inject({ method, url: `/api/v1${url}`, headers: token ? { authorization: `Bearer ${token}` } : {}, ...(body ? { payload: body } : {}) });
    return { status: response.statusCode, body: response.json() };
  };
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
    dir = await mkdtemp(join(tmpdir(), 'panelctl-stream-expiry-'));
    store = await openStore({ dataDir: dir, create: true });
    const iso = new Date(START).toISOString();
    for (const [email, role] of [['admin@expiry.test', 'admin'], ['second@expiry.test', 'admin'], ['user@expiry.test', 'customer']] as const) {
      await store.users.insert({
        email,
        name: email,
        role,
        password_hash: await hashPassword(PASSWORD),
        totp_secret: null,
        totp_pending_secret: null,
        two_factor_enabled: false,
        totp_last_step: null,
        created_at: iso,
        updated_at: iso,
      });
    }
    app = await buildApp({ store, paths: layout(dir), jwtSecret: new TextEncoder().encode('stream-expiry-secret-0123456789abcdef'), clock: () => now });
    base = await app.listen({ port: 0, host: '127.0.0.1' });
    await app.settings.update({ rate_limit_mode: 'lockout', jwt_ttl_seconds: 600 });
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("ends an API key's delivery stream and listen session at the key's expires_at", async () => {
    const jwt = await login('user@expiry.test');
    const created = await call('POST', '/auth/api-keys', jwt, { name: 'expiring', expires_at: new Date(now + 60_000).toISOString() });
    expect(created.status).toBe(201);
    const key = created.body.data.key as string;
    const stream = await openStream('/webhooks/deliveries/stream', key);
    const listen = await openStream('/events/listen', key);
    now += 59_000;
    expect((await call('GET', '/auth/me', key)).status).toBe(200);
    expect(stream.ended || listen.ended).toBe(false);
    now += 1_000;
    await vi.waitFor(() => expect(stream.ended && listen.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    expect(stream.text).toContain(': ended: the API key has expired');
  });

  it("ends a JWT's stream at the token's exp", async () => {
    const jwt = await login('user@expiry.test');
    const stream = await openStream('/webhooks/deliveries/stream', jwt);
    now += 600_000;
    await vi.waitFor(() => expect(stream.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
  });

  it("ends an admin's stream when the store demotes them to customer, and a customer's stays open", async () => {
    const admin = await login('second@expiry.test');
    const customer = await login('user@expiry.test');
    const adminStream = await openStream('/webhooks/deliveries/stream', admin);
    const customerStream = await openStream('/webhooks/deliveries/stream', customer);
    const second = await store.users.byEmail('second@expiry.test');
    await store.users.update(second!.id, { role: 'customer' });
    await vi.waitFor(() => expect(adminStream.ended).toBe(true), { timeout: ENDS_WITHIN_MS, interval: 20 });
    expect(adminStream.text).toContain('role changed to customer');
    expect(customerStream.ended).toBe(false);
    customerStream.close();
  });
});

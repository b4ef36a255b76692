// API keys through the app in-process (app.inject, a clock the test moves): the key is shown once
// and never stored, works as Bearer and X-API-Key, cannot manage keys (JWT only), and stops
// working at its expiry or deletion at once.
import { Client } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { RELAXED, createUser, filesContaining } from './helpers.js';

describe('API keys', () => {
  let api: TestApp;
  let admin: string;
  let customer: string;
  let other: string;

  beforeAll(async () => {
    api = await buildTestApp({ settings: RELAXED });
    admin = await api.login();
    const c = await createUser(api, admin, 'keys@example.com');
    const o = await createUser(api, admin, 'other@example.com');
    customer = await api.login(c.email, c.password);
    other = await api.login(o.email, o.password);
  });
  afterAll(async () => {
    await api?.close();
  });

  const createKey = async (token: string, body: Record<string, unknown>) => {
    const result = await api.request('POST', '/auth/api-keys', { token, body });
    expect(result.status, result.text).toBe(201);
    return result.body.data as { id: number; name: string; key: string; key_prefix: string; expires_at: string | null; created_at: string };
  };

  it('creates a key: ncp_ + 64 hex, prefix of 20, shown in the create answer only', async () => {
    const result = await api.request('POST', '/auth/api-keys', { token: customer, body: { name: 'deploy script' } });
    expect(result.status).toBe(201);
    expect(result.body).toEqual({
      data: { id: expect.any(Number), name: 'deploy script', key: expect.stringMatching(/^ncp_[0-9a-f]{64}$/), key_prefix: expect.any(String), expires_at: null, created_at: expect.any(String) },
      error: null,
      message: expect.any(String),
    });
    const { key, key_prefix: prefix, id } = result.body.data;
    expect(key).toHaveLength(68);
    expect(prefix).toBe(key.slice(0, 20));
    expect(Date.parse(result.body.data.created_at)).toBeGreaterThan(Date.now() - 60_000);

    const list = await api.request('GET', '/auth/api-keys', { token: customer });
    expect(list.status).toBe(200);
    const listed = list.body.data.find((k: { id: number }) => k.id === id);
    expect(listed).toEqual({ id, name: 'deploy script', key_prefix: prefix, last_used_at: null, expires_at: null, created_at: result.body.data.created_at });
    expect(list.text).not.toContain(key);
    expect(list.text).not.toMatch(/key_hash|"key"/);
  });

  it('authenticates with the key as Bearer and as X-API-Key, and records last_used_at', async () => {
    const created = await createKey(customer, { name: 'both headers' });
    const bearer = await api.request('GET', '/auth/me', { token: created.key });
    expect(bearer.status).toBe(200);
    expect(bearer.body.data.email).toBe('keys@example.com');
    const header = await api.request('GET', '/auth/me', { headers: { 'x-api-key': created.key } });
    expect(header.status).toBe(200);
    expect(header.body.data.email).toBe('keys@example.com');

    const list = await api.request('GET', '/auth/api-keys', { token: customer });
    const listed = list.body.data.find((k: { id: number }) => k.id === created.id);
    expect(Date.parse(listed.last_used_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it('refuses an unknown or malformed key with 401', async () => {
    for (const token of [`ncp_${'0'.repeat(64)}`, 'ncp_short']) {
      const result = await api.request('GET', '/auth/me', { token });
      expect(result.status).toBe(401);
      expect(result.body.error).toBe('not authenticated');
    }
    expect((await api.request('GET', '/auth/me', { headers: { 'x-api-key': `ncp_${'f'.repeat(64)}` } })).status).toBe(401);
  });

  it('requires a JWT to create, list and delete keys (403 `jwt required` with a key)', async () => {
    const created = await createKey(customer, { name: 'not a manager' });
    for (const [method, path, body] of [
      ['POST', '/auth/api-keys', { name: 'minted by a key' }],
      ['GET', '/auth/api-keys', undefined],
      ['DELETE', `/auth/api-keys/${created.id}`, undefined],
    ] as const) {
      for (const auth of [{ token: created.key }, { headers: { 'x-api-key': created.key } }]) {
        const result = await api.request(method, path, { ...auth, body });
        expect([method, path, result.status, result.body.error]).toEqual([method, path, 403, 'jwt required']);
      }
    }
    // Nothing was created or deleted by those calls.
    const list = await api.request('GET', '/auth/api-keys', { token: customer });
    expect(list.body.data.map((k: { name: string }) => k.name)).not.toContain('minted by a key');
    expect(list.body.data.map((k: { id: number }) => k.id)).toContain(created.id);
  });

  it('validates name and expires_at: 400 when missing or mistyped, 422 naming the field otherwise', async () => {
    const post = (body: unknown) => api.request('POST', '/auth/api-keys', { token: customer, body });
    const cases: Array<[unknown, number, RegExp]> = [
      [{}, 400, /name/],
      [{ name: 7 }, 400, /name/],
      [{ name: 'x', extra: true }, 400, /extra/],
      [{ name: '' }, 422, /name/],
      [{ name: 'n'.repeat(101) }, 422, /name/],
      [{ name: '   ' }, 422, /name/],
      [{ name: 'x', expires_at: 12 }, 400, /expires_at/],
      [{ name: 'x', expires_at: 'tomorrow' }, 422, /expires_at/],
      [{ name: 'x', expires_at: '2099-02-30T00:00:00Z' }, 422, /expires_at/],
      [{ name: 'x', expires_at: '2099-01-01 00:00:00Z' }, 422, /expires_at/],
      [{ name: 'x', expires_at: '2099-01-01T00:00:00' }, 422, /expires_at/],
      [{ name: 'x', expires_at: '2001-01-01T00:00:00Z' }, 422, /expires_at.*future/],
      [{ name: 'x', expires_at: new Date(Date.now() - 1000).toISOString() }, 422, /expires_at.*future/],
    ];
    for (const [body, status, message] of cases) {
      const result = await post(body);
      expect([body, result.status, result.body.error]).toEqual([body, status, status === 400 ? 'bad request' : 'validation failed']);
      expect(result.body.message).toMatch(message);
      expect(result.body.data).toBeNull();
    }
    expect((await post({ name: 'n'.repeat(100) })).status).toBe(201);
  });

  it('accepts an RFC 3339 expires_at with an offset and answers it normalised to UTC', async () => {
    const created = await createKey(customer, { name: 'offset', expires_at: '2099-06-01T14:30:00+02:00' });
    expect(created.expires_at).toBe('2099-06-01T12:30:00.000Z');
    expect((await api.request('GET', '/auth/me', { token: created.key })).status).toBe(200);
  });

  it('refuses a key right after its expires_at', async () => {
    const expiresAt = api.clock.now() + 60_000;
    const created = await createKey(customer, { name: 'short-lived', expires_at: new Date(expiresAt).toISOString() });
    expect((await api.request('GET', '/auth/me', { token: created.key })).status).toBe(200);
    api.clock.set(expiresAt - 1000);
    expect((await api.request('GET', '/auth/me', { token: created.key })).status).toBe(200);
    api.clock.set(expiresAt + 1);
    const result = await api.request('GET', '/auth/me', { token: created.key });
    api.clock.set(Date.now());
    expect(result.status).toBe(401);
    expect(result.body).toEqual({ data: null, error: 'not authenticated', message: expect.stringContaining('expired') });
    // Still listed, so its owner sees why it stopped working.
    const list = await api.request('GET', '/auth/api-keys', { token: customer });
    expect(list.body.data.find((k: { id: number }) => k.id === created.id)?.expires_at).toBe(created.expires_at);
  });

  it('deletes a key (200 with its id): refused right after; unknown id 404; another customer 403; admin may', async () => {
    const created = await createKey(customer, { name: 'to delete' });
    expect((await api.request('GET', '/auth/me', { token: created.key })).status).toBe(200);
    const removed = await api.request('DELETE', `/auth/api-keys/${created.id}`, { token: customer });
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ data: { id: created.id }, error: null, message: expect.any(String) });
    const after = await api.request('GET', '/auth/me', { token: created.key });
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('not authenticated');
    expect((await api.request('DELETE', `/auth/api-keys/${created.id}`, { token: customer })).status).toBe(404);
    expect((await api.request('DELETE', '/auth/api-keys/999999', { token: customer })).body.error).toBe('not found');
    expect((await api.request('DELETE', '/auth/api-keys/abc', { token: customer })).status).toBe(400);

    const theirs = await createKey(other, { name: 'theirs' });
    const forbidden = await api.request('DELETE', `/auth/api-keys/${theirs.id}`, { token: customer });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toBe('forbidden');
    expect((await api.request('GET', '/auth/me', { token: theirs.key })).status).toBe(200);
    // Lists are per user: the other customer's key is not in this one's list.
    const list = await api.request('GET', '/auth/api-keys', { token: customer });
    expect(list.body.data.map((k: { id: number }) => k.id)).not.toContain(theirs.id);

    const byAdmin = await api.request('DELETE', `/auth/api-keys/${theirs.id}`, { token: admin });
    expect(byAdmin.status).toBe(200);
    expect((await api.request('GET', '/auth/me', { token: theirs.key })).status).toBe(401);
  });

  it('on one keep-alive connection: each request is its own key\'s caller, and a revoked key or deleted user is refused at once', async () => {
    // One connection for every request below: a cached caller must never outlive its key or its
    // user, nor answer for another key sent on the same connection.
    // A real listening socket (plain HTTP, in-process): app.inject has no connection to remember.
    const url = await api.listen();
    const connection = new Client(url, { pipelining: 1 });
    const me = async (key: string) => {
      const res = await connection.request({ method: 'GET', path: '/api/v1/auth/me', headers: { authorization: `Bearer ${key}` } });
      const body = (await res.body.json()) as any;
      return { status: res.statusCode, email: body.data?.email as string | undefined, error: body.error as string | null };
    };
    try {
      const who = await createUser(api, admin, 'conn-owner@example.com');
      const ownerToken = await api.login(who.email, who.password);
      const mine = await createKey(ownerToken, { name: 'conn-1' });
      const theirs = await createKey(other, { name: 'conn-2' });
      expect(await me(mine.key)).toMatchObject({ status: 200, email: 'conn-owner@example.com' });
      expect(await me(mine.key)).toMatchObject({ status: 200, email: 'conn-owner@example.com' });
      expect(await me(theirs.key)).toMatchObject({ status: 200, email: 'other@example.com' });
      expect(await me(mine.key)).toMatchObject({ status: 200, email: 'conn-owner@example.com' });
      expect(await me(mine.key.slice(0, -1) + (mine.key.endsWith('0') ? '1' : '0'))).toMatchObject({ status: 401 });

      expect((await api.request('DELETE', `/auth/api-keys/${theirs.id}`, { token: other })).status).toBe(200);
      expect(await me(theirs.key)).toMatchObject({ status: 401, error: 'not authenticated' });
      expect(await me(mine.key)).toMatchObject({ status: 200 });

      expect((await api.request('DELETE', `/admin/users/${who.id}`, { token: admin })).status).toBe(200);
      expect(await me(mine.key)).toMatchObject({ status: 401, error: 'not authenticated' });
    } finally {
      await connection.close();
    }
  });

  it('keeps the plaintext key in no file of the data directory, and last_used_at across a restart', async () => {
    const created = await createKey(customer, { name: 'grep me' });
    expect((await api.request('GET', '/auth/me', { token: created.key })).status).toBe(200);
    expect((await api.request('GET', '/auth/me', { headers: { 'x-api-key': created.key } })).status).toBe(200);
    api = await api.restart();

    expect(await filesContaining(api.dataDir, created.key)).toEqual([]);
    expect(await filesContaining(api.dataDir, created.key.slice(4))).toEqual([]);
    // Control: the store itself is there and holds the key's prefix and record (on PostgreSQL
    // the data directory holds no store; the contract suite covers its hashing).
    if (!api.databaseUrl) expect((await filesContaining(api.dataDir, created.key_prefix)).some((f) => f.endsWith('store.json'))).toBe(true);

    const token = await api.login('keys@example.com', 'customer-password-1');
    const listed = (await api.request('GET', '/auth/api-keys', { token })).body.data.find((k: { id: number }) => k.id === created.id);
    expect(listed.last_used_at).not.toBeNull();
    expect((await api.request('GET', '/auth/me', { token: created.key })).status).toBe(200);
  });
});

// The one caller cache (src/daemon/auth/callers.ts), in process: a JWT or an API key is looked up
// in the store once and then served from the cache, and every change that could alter who the
// credential is (a logout, a role change, a password change, a deleted key or user) is seen by
// the very next request. Across two daemons of one PostgreSQL database the same is checked in
// test/sources/reads-across-daemons.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

describe('the caller cache', () => {
  let t: TestApp;
  let admin: { id: number; token: string };

  const me = (token: string) =>
    t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${token}` } }).then((res) => ({
      status: res.statusCode,
      body: res.json() as { data: { email: string; role: string } | null; error: string | null },
    }));
  const adminList = (token: string) =>
    t.app.inject({ method: 'GET', url: '/api/v1/admin/users', headers: { authorization: `Bearer ${token}` } }).then((res) => res.statusCode);

  beforeEach(async () => {
    t = await buildTestApp();
    admin = await t.addUser('admin@example.com', 'admin');
    await t.store.settings.update({ rate_limit_user_per_minute: 1_000_000 });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await t.close();
  });

  it('looks a JWT and an API key up once, then serves repeated requests from the cache', async () => {
    // The key's creation drops the cached callers when the feed tells of it: at once on the JSON
    // store, by a notice a moment later on PostgreSQL. Counting starts once it has told.
    const told = new Promise<void>((resolve) => {
      const off = t.store.changes.subscribe((change) => {
        if (change.kind === 'record' && change.collection === 'api_keys') resolve(off());
      });
    });
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/auth/api-keys', headers: { authorization: `Bearer ${admin.token}` }, payload: { name: 'k' } });
    expect(created.statusCode, created.body).toBe(201);
    const key = created.json().data.key as string;
    await told;
    expect(await t.store.changes.caughtUp()).toBe(true);
    const verify = vi.spyOn(t.app.tokens, 'verify');
    const userLookups = vi.spyOn(t.store.users, 'get');
    const revocations = vi.spyOn(t.store.revokedTokens, 'isRevoked');
    const keyLookups = vi.spyOn(t.store.apiKeys, 'callerByHash');
    for (let i = 0; i < 5; i++) {
      expect((await me(admin.token)).status).toBe(200);
      expect((await me(key)).status).toBe(200);
    }
    // Creating the key dropped the cached callers: each credential is looked up once from here.
    expect(verify).toHaveBeenCalledTimes(1);
    expect(userLookups).toHaveBeenCalledTimes(1);
    expect(revocations).toHaveBeenCalledTimes(1);
    expect(keyLookups).toHaveBeenCalledTimes(1);
    // Each use of the key still reaches the store (it keeps last_used_at to the second).
    expect((await t.store.apiKeys.listByUser(admin.id))[0].last_used_at).not.toBeNull();
  });

  it('refuses a logged-out JWT at its next request, and keeps serving the user\'s other session', async () => {
    const other = await t.app.tokens.issue(admin.id, 'admin', 3600);
    expect((await me(admin.token)).status).toBe(200);
    expect((await me(other)).status).toBe(200);
    const logout = await t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { authorization: `Bearer ${admin.token}` } });
    expect(logout.statusCode, logout.body).toBe(200);
    expect(await me(admin.token)).toMatchObject({ status: 401, body: { error: 'not authenticated' } });
    expect((await me(other)).status).toBe(200);
  });

  it('serves a changed role at the next request (JWT and key alike)', async () => {
    const customer = await t.addUser('c@example.com', 'customer');
    const key = (await t.app.inject({ method: 'POST', url: '/api/v1/auth/api-keys', headers: { authorization: `Bearer ${customer.token}` }, payload: { name: 'k' } })).json().data.key as string;
    expect(await adminList(customer.token)).toBe(403);
    expect(await adminList(key)).toBe(403);
    await t.store.users.update(customer.id, { role: 'admin' });
    expect(await adminList(customer.token)).toBe(200);
    expect(await adminList(key)).toBe(200);
    expect((await me(key)).body.data?.role).toBe('admin');
    await t.store.users.update(customer.id, { role: 'customer' });
    expect(await adminList(customer.token)).toBe(403);
    expect(await adminList(key)).toBe(403);
  });

  it('refuses the sessions of a changed password, a deleted key and a deleted user at their next request', async () => {
    const user = await t.addUser('u@example.com', 'customer');
    const key = (await t.app.inject({ method: 'POST', url: '/api/v1/auth/api-keys', headers: { authorization: `Bearer ${user.token}` }, payload: { name: 'k' } })).json().data;
    const spare = (await t.app.inject({ method: 'POST', url: '/api/v1/auth/api-keys', headers: { authorization: `Bearer ${user.token}` }, payload: { name: 'k2' } })).json().data;
    for (const credential of [user.token, key.key, spare.key]) expect((await me(credential)).status).toBe(200);

    // A password change raises the token generation: the old JWT is refused, the keys are not.
    await t.store.users.update(user.id, { token_generation: 1, password_changed_at: new Date().toISOString() });
    expect(await me(user.token)).toMatchObject({ status: 401, body: { error: 'not authenticated' } });
    expect((await me(key.key)).status).toBe(200);

    await t.store.apiKeys.remove(key.id);
    expect((await me(key.key)).status).toBe(401);
    expect((await me(spare.key)).status).toBe(200);

    await t.store.users.remove(user.id);
    expect((await me(spare.key)).status).toBe(401);
  });
});

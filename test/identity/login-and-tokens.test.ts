// Login, JWTs and users through the app in-process (app.inject): the token's shape and
// lifetime, one answer for unknown emails and wrong passwords, and every kind of bad token refused.
import { SignJWT, decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD } from '../helpers/daemon.js';
import { RELAXED, createUser, putSettings } from './helpers.js';

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('login, JWTs and users', () => {
  let api: TestApp;
  let admin: string;
  let secret: Uint8Array;

  beforeAll(async () => {
    // The admin's hash at the daemon's cost: a login is timed against an unknown email's below.
    api = await buildTestApp({ settings: RELAXED, daemonPasswordCost: true });
    admin = await api.login();
    secret = api.jwtSecret;
  });
  afterAll(async () => {
    await api?.close();
  });

  /** A token signed with the daemon's own secret, to show the refusals below are for the defect named. */
  const signed = (claims: Record<string, unknown>, alg = 'HS256', key = secret) =>
    new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(key);

  it('logs in with email and password: an HS256 JWT with sub, role, iat, exp, jti, gen, and the user', async () => {
    const result = await api.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      data: { token: expect.any(String), user: { id: 1, email: ADMIN_EMAIL, name: 'Administrator', role: 'admin' } },
      error: null,
      message: expect.stringMatching(/logged in/),
    });
    const token = result.body.data.token;
    expect(decodeProtectedHeader(token).alg).toBe('HS256');
    const claims = decodeJwt(token);
    expect(claims).toEqual({ sub: '1', role: 'admin', iat: expect.any(Number), exp: expect.any(Number), jti: expect.any(String), gen: 0 });
    expect(claims.exp! - claims.iat!).toBe(86_400);
    expect(Math.abs(claims.iat! - Date.now() / 1000)).toBeLessThan(10);
  });

  it('takes the JWT lifetime from jwt_ttl_seconds, changed without a restart', async () => {
    await putSettings(api, admin, { jwt_ttl_seconds: 120 });
    try {
      const claims = decodeJwt(await api.login());
      expect(claims.exp! - claims.iat!).toBe(120);
    } finally {
      await putSettings(api, admin, { jwt_ttl_seconds: 86_400 });
    }
  });

  it('answers an unknown email and a wrong password identically, in about the same time', async () => {
    const unknown = await api.request('POST', '/auth/login', { body: { email: 'nobody@example.com', password: ADMIN_PASSWORD } });
    const wrong = await api.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: 'not-the-password' } });
    for (const result of [unknown, wrong]) {
      expect(result.status).toBe(401);
      expect(result.body).toEqual({ data: null, error: 'invalid credentials', message: 'email or password is wrong' });
    }

    // Both paths verify one scrypt hash; without the dummy hash an unknown email answers ~50x faster.
    const time = async (email: string) => {
      const start = process.hrtime.bigint();
      await api.request('POST', '/auth/login', { body: { email, password: 'guess-guess-guess' } });
      return Number(process.hrtime.bigint() - start) / 1e6;
    };
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const unknownTimes: number[] = [];
    const knownTimes: number[] = [];
    for (let i = 0; i < 7; i++) {
      unknownTimes.push(await time(`nobody${i}@example.com`));
      knownTimes.push(await time(ADMIN_EMAIL));
    }
    const ratio = median(unknownTimes) / median(knownTimes);
    expect(ratio, `unknown ${median(unknownTimes)} ms, known ${median(knownTimes)} ms`).toBeGreaterThan(0.33);
    expect(ratio).toBeLessThan(3);
  });

  it('stores a new password as scrypt with N 16384, r 8, p 1 and a salt of its own', async () => {
    // Tests that sign one account in many times store a cheaper hash themselves (quickPasswordHash);
    // what the daemon makes is this.
    const [a, b] = [await createUser(api, admin, 'hash-a@example.com'), await createUser(api, admin, 'hash-b@example.com')];
    const stored = await Promise.all([a, b].map(async (user) => (await api.store.users.get(user.id))!.password_hash));
    for (const hash of stored) expect(hash).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/);
    expect(stored[0].split('$')[4]).not.toBe(stored[1].split('$')[4]);
  });

  it('matches the email case-insensitively', async () => {
    const result = await api.request('POST', '/auth/login', { body: { email: ' Admin@LOCALHOST ', password: ADMIN_PASSWORD } });
    expect(result.status).toBe(200);
  });

  it('shows the caller on /auth/me', async () => {
    const me = await api.request('GET', '/auth/me', { token: admin });
    expect(me.status).toBe(200);
    expect(me.body.data).toEqual({ id: 1, email: ADMIN_EMAIL, name: 'Administrator', role: 'admin', two_factor_enabled: false, created_at: expect.any(String) });
  });

  it('answers 401 `not authenticated` without credentials or with a malformed header', async () => {
    for (const headers of [{}, { authorization: 'Basic YWRtaW46eA==' }, { authorization: 'Bearer' }] as Array<Record<string, string>>) {
      const result = await api.request('GET', '/auth/me', { headers });
      expect(result.status).toBe(401);
      expect(result.body).toEqual({ data: null, error: 'not authenticated', message: expect.stringMatching(/authentication required/) });
    }
  });

  it('accepts a well-formed token signed with the data directory secret (control for the refusals)', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signed({ sub: '1', role: 'admin', iat: now, exp: now + 60, jti: 'control' });
    expect((await api.request('GET', '/auth/me', { token })).status).toBe(200);
  });

  it('refuses a forged `alg: none` token', async () => {
    const now = Math.floor(Date.now() / 1000);
    const payload = { sub: '1', role: 'admin', iat: now, exp: now + 3600, jti: 'forged' };
    for (const token of [`${b64url({ alg: 'none', typ: 'JWT' })}.${b64url(payload)}.`, `${b64url({ alg: 'none' })}.${b64url(payload)}`]) {
      const result = await api.request('GET', '/auth/me', { token });
      expect(result.status).toBe(401);
      expect(result.body.error).toBe('not authenticated');
    }
  });

  it('refuses a token signed with another key', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signed({ sub: '1', role: 'admin', iat: now, exp: now + 3600, jti: 'other' }, 'HS256', new TextEncoder().encode('another-secret-of-sufficient-length-000'));
    const result = await api.request('GET', '/admin/users', { token });
    expect(result.status).toBe(401);
    expect(result.body).toEqual({ data: null, error: 'not authenticated', message: expect.stringContaining('invalid token') });
  });

  it('refuses a token with the right key but another algorithm (HS512): the algorithm is pinned', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signed({ sub: '1', role: 'admin', iat: now, exp: now + 3600, jti: 'hs512' }, 'HS512');
    expect((await api.request('GET', '/auth/me', { token })).status).toBe(401);
  });

  it('refuses an expired token, saying so', async () => {
    const now = Math.floor(Date.now() / 1000);
    const token = await signed({ sub: '1', role: 'admin', iat: now - 7200, exp: now - 10, jti: 'expired' });
    const result = await api.request('GET', '/auth/me', { token });
    expect(result.status).toBe(401);
    expect(result.body).toEqual({ data: null, error: 'not authenticated', message: expect.stringContaining('expired') });
  });

  it('refuses a tampered payload (role raised) and a token missing a required claim', async () => {
    const customer = await createUser(api, admin, 'tamper@example.com');
    const token = await api.login(customer.email, customer.password);
    const [header, , signature] = token.split('.');
    const raised = { ...decodeJwt(token), role: 'admin' };
    const tampered = `${header}.${b64url(raised)}.${signature}`;
    expect((await api.request('GET', '/admin/users', { token: tampered })).status).toBe(401);

    const now = Math.floor(Date.now() / 1000);
    const noJti = await signed({ sub: '1', role: 'admin', iat: now, exp: now + 60 });
    expect((await api.request('GET', '/auth/me', { token: noJti })).status).toBe(401);
  });

  it('manages users as admin: create (201), duplicate email (409), customer refused (403), delete (200, then 404)', async () => {
    const created = await api.request('POST', '/admin/users', {
      token: admin,
      body: { email: 'Carol@Example.com', name: 'Carol', password: 'carol-password', role: 'customer' },
    });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({ id: expect.any(Number), email: 'carol@example.com', name: 'Carol', role: 'customer', two_factor_enabled: false, created_at: expect.any(String) });
    expect(created.text).not.toContain('password');

    const duplicate = await api.request('POST', '/admin/users', {
      token: admin,
      body: { email: 'carol@example.com', name: 'Carol 2', password: 'carol-password', role: 'customer' },
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error).toBe('conflict');

    const carol = await api.login('carol@example.com', 'carol-password');
    expect(decodeJwt(carol)).toMatchObject({ sub: String(created.body.data.id), role: 'customer' });
    for (const [method, path] of [['GET', '/admin/users'], ['DELETE', '/admin/users/1'], ['GET', '/admin/settings']] as const) {
      const result = await api.request(method, path, { token: carol });
      expect([path, result.status, result.body.error]).toEqual([path, 403, 'forbidden']);
    }

    const list = await api.request('GET', '/admin/users', { token: admin });
    expect(list.body.data.map((u: { email: string }) => u.email)).toContain('carol@example.com');
    expect(list.text).not.toMatch(/password_hash|totp_secret|scrypt/);

    const removed = await api.request('DELETE', `/admin/users/${created.body.data.id}`, { token: admin });
    expect(removed.status).toBe(200);
    expect(removed.body.data).toEqual({ id: created.body.data.id });
    // The deleted user's token stops working at once.
    const after = await api.request('GET', '/auth/me', { token: carol });
    expect(after.status).toBe(401);
    expect(after.body.message).toContain('no longer exists');
    expect((await api.request('DELETE', `/admin/users/${created.body.data.id}`, { token: admin })).status).toBe(404);
  });

  it('logs out: POST /auth/logout revokes the presented JWT only; an API key cannot log out', async () => {
    const session = await api.login();
    const other = await api.login();
    expect((await api.request('GET', '/auth/me', { token: session })).status).toBe(200);
    const out = await api.request('POST', '/auth/logout', { token: session });
    expect([out.status, out.body.data, out.body.error]).toEqual([200, null, null]);
    for (const path of ['/auth/me', '/webhooks']) {
      const refused = await api.request('GET', path, { token: session });
      expect([path, refused.status, refused.body.error]).toEqual([path, 401, 'not authenticated']);
      expect(refused.body.message).toContain('logged out');
    }
    // Logging out again with the revoked token is refused like any other request.
    expect((await api.request('POST', '/auth/logout', { token: session })).status).toBe(401);
    // Another session of the same user goes on.
    expect((await api.request('GET', '/auth/me', { token: other })).status).toBe(200);

    const key = (await api.request('POST', '/auth/api-keys', { token: other, body: { name: 'no-logout' } })).body.data.key;
    const withKey = await api.request('POST', '/auth/logout', { token: key });
    expect([withKey.status, withKey.body.error]).toEqual([403, 'jwt required']);
    expect((await api.request('GET', '/auth/me', { token: key })).status).toBe(200);
  });
});

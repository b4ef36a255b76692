// Time-dependent rules checked exactly, with the app built in-process (app.inject) on a real
// JSON store and a clock the test moves: reset-token expiry, lockout end, request windows,
// key expiry at its instant, TOTP steps at a fixed time.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/daemon/app.js';
import { hashPassword } from '../../src/daemon/auth/password.js';
import { layout } from '../../src/shared/paths.js';
import { openStore } from '../../src/store/factory.js';
import type { Store } from '../../src/store/store.js';
import { eventually, totpAt } from './helpers.js';

const START = Date.parse('2030-03-01T10:00:00Z');
const PASSWORD = 'clock-password-1';

describe('time-dependent rules with a controlled clock', () => {
  let dir: string;
  let store: Store;
  let app: FastifyInstance;
  let now = START;

  const call = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, options: { token?: string; body?: unknown } = {}) => {
    const response = await app.inject({
      method,
      url: `/api/v1${url}`,
      headers: options.token ? { authorization: `Bearer ${options.token}` } : {},
      ...(options.body !== undefined ? { payload: options.body as object } : {}),
    });
    return { status: response.statusCode, headers: response.headers, body: response.json() };
  };
  const login = async (email: string, password = PASSWORD, totp_code?: string) =>
    call('POST', '/auth/login', { body: { email, password, ...(totp_code ? { totp_code } : {}) } });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-clock-'));
    const paths = layout(dir);
    store = await openStore({ dataDir: dir, create: true });
    const iso = new Date(START).toISOString();
    for (const [email, role] of [['admin@clock.test', 'admin'], ['user@clock.test', 'customer']] as const) {
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
    app = await buildApp({ store, paths, jwtSecret: new TextEncoder().encode('clock-test-secret-0123456789abcdef'), clock: () => now });
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('expires a JWT at its exp, by the daemon clock', async () => {
    await app.settings.update({ rate_limit_mode: 'requests', jwt_ttl_seconds: 600 });
    const token = (await login('user@clock.test')).body.data.token;
    now += 599_000;
    expect((await call('GET', '/auth/me', { token })).status).toBe(200);
    now += 1_000;
    const expired = await call('GET', '/auth/me', { token });
    expect(expired.status).toBe(401);
    expect(expired.body.message).toContain('expired');
  });

  it('refuses an API key from the instant of its expires_at', async () => {
    const jwt = (await login('user@clock.test')).body.data.token;
    const expiresAt = new Date(now + 60_000).toISOString();
    const created = await call('POST', '/auth/api-keys', { token: jwt, body: { name: 'clocked', expires_at: expiresAt } });
    expect(created.status).toBe(201);
    now = Date.parse(expiresAt) - 1;
    expect((await call('GET', '/auth/me', { token: created.body.data.key })).status).toBe(200);
    now = Date.parse(expiresAt);
    expect((await call('GET', '/auth/me', { token: created.body.data.key })).status).toBe(401);
  });

  it('starts a new request window after a minute, with X-RateLimit-Reset at the window end', async () => {
    await app.settings.update({ rate_limit_mode: 'requests', rate_limit_login_per_minute: 2 });
    now = Math.ceil(now / 60_000) * 60_000 + 500; // not on a second boundary
    const windowStart = now;
    const first = await login('user@clock.test');
    expect(first.headers['x-ratelimit-reset']).toBe(String(Math.ceil((windowStart + 60_000) / 1000)));
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    now += 30_000;
    expect((await login('user@clock.test')).status).toBe(200);
    const limited = await login('user@clock.test');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('30');
    expect(limited.headers['x-ratelimit-reset']).toBe(String(Math.ceil((windowStart + 60_000) / 1000)));
    now = windowStart + 60_000;
    const next = await login('user@clock.test');
    expect(next.status).toBe(200);
    expect(next.headers['x-ratelimit-remaining']).toBe('1');
    await app.settings.update({ rate_limit_login_per_minute: 10 });
  });

  it('locks for login_lockout_minutes, counts failures only within that period, and unlocks after it', async () => {
    await app.settings.update({ rate_limit_mode: 'lockout', login_max_attempts: 3, login_lockout_minutes: 15 });
    // Two failures, then a pause longer than the period: the count starts again.
    for (let i = 0; i < 2; i++) expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    now += 15 * 60_000;
    for (let i = 0; i < 2; i++) expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    expect((await login('user@clock.test')).status).toBe(200);
    // The third failure of this period locks.
    expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    const locked = await login('user@clock.test');
    expect(locked.status).toBe(429);
    expect(locked.body.data).toEqual({ remaining_seconds: 900 });
    expect(locked.body.message).toContain('15 minutes');

    now += 14 * 60_000 + 1_000;
    const almost = await login('user@clock.test');
    expect(almost.body.data).toEqual({ remaining_seconds: 59 });
    expect(almost.body.message).toContain('1 minute');
    expect(almost.headers['retry-after']).toBe('59');

    now += 59_000;
    expect((await login('user@clock.test')).status).toBe(200);
    // After a lock has ended, counting starts from zero.
    for (let i = 0; i < 2; i++) expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    expect((await login('user@clock.test')).status).toBe(200);
  });

  it('accepts a TOTP code one step either side of the daemon time, not two', async () => {
    await app.settings.update({ rate_limit_mode: 'requests' });
    const jwt = (await login('admin@clock.test')).body.data.token;
    const { secret } = (await call('POST', '/auth/2fa/setup', { token: jwt })).body.data;
    now = Math.floor(now / 30_000) * 30_000 + 10_000; // 10 s into step s
    const s = Math.floor(now / 30_000);
    expect((await call('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totpAt(secret, s - 2) } })).status).toBe(401);
    expect((await call('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totpAt(secret, s + 2) } })).status).toBe(401);
    expect((await call('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totpAt(secret, s - 1) } })).status).toBe(200);
    expect((await login('admin@clock.test', PASSWORD, totpAt(secret, s + 1))).status).toBe(200);
    // The next step's code is now at most as new as the last accepted one, until time moves on.
    expect((await login('admin@clock.test', PASSWORD, totpAt(secret, s + 1))).status).toBe(401);
    now += 60_000; // s + 2 is now current
    expect((await login('admin@clock.test', PASSWORD, totpAt(secret, s + 2))).status).toBe(200);
  });

  it('honours a reset token until it is an hour old, not after', async () => {
    await app.settings.update({ rate_limit_mode: 'requests' });
    const mailDir = layout(dir).mailDir;
    const tokenOfMail = async (n: number) => {
      const name = await eventually(async () => (await readdir(mailDir).catch(() => [] as string[])).filter((f) => f.endsWith('.eml')).sort()[n - 1], `mail ${n}`);
      return /^ {4}(\S{43})$/m.exec(await readFile(join(mailDir, name), 'utf8'))![1];
    };
    const requested = now;
    expect((await call('POST', '/auth/forgot-password', { body: { email: 'user@clock.test' } })).status).toBe(200);
    const first = await tokenOfMail(1);
    now = requested + 60 * 60_000;
    const late = await call('POST', '/auth/reset-password', { body: { token: first, password: 'too-late-password' } });
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid token');

    const again = now;
    expect((await call('POST', '/auth/forgot-password', { body: { email: 'user@clock.test' } })).status).toBe(200);
    const second = await tokenOfMail(2);
    now = again + 60 * 60_000 - 1;
    expect((await call('POST', '/auth/reset-password', { body: { token: second, password: 'in-time-password' } })).status).toBe(200);
    expect((await login('user@clock.test', 'in-time-password')).status).toBe(200);
  });
});

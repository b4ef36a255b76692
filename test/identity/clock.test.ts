// Time-dependent rules checked exactly, with the app built in-process (app.inject) on the run's
// store (JSON, or PostgreSQL in the postgres project) and a clock that stands still until the
// test moves it: reset-token expiry, lockout end, request windows, key expiry at its instant,
// TOTP steps at a fixed time.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layout } from '../../src/shared/paths.js';
import { buildTestApp, fixedClock, type TestApp } from '../helpers/app.js';
import type { RequestOptions } from '../helpers/daemon.js';
import { eventually, totpAt } from './helpers.js';

const START = Date.parse('2030-03-01T10:00:00Z');
const PASSWORD = 'clock-password-1';

describe('time-dependent rules with a controlled clock', () => {
  let t: TestApp;
  const clock = fixedClock(START);

  const call = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, options: RequestOptions = {}) => t.request(method, url, options);
  const login = async (email: string, password = PASSWORD, totp_code?: string) =>
    call('POST', '/auth/login', { body: { email, password, ...(totp_code ? { totp_code } : {}) } });

  beforeAll(async () => {
    t = await buildTestApp({ clock });
    await t.addUser('admin@clock.test', 'admin', PASSWORD);
    await t.addUser('user@clock.test', 'customer', PASSWORD);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('expires a JWT at its exp, by the daemon clock', async () => {
    await t.app.settings.update({ rate_limit_mode: 'requests', jwt_ttl_seconds: 600 });
    const token = (await login('user@clock.test')).body.data.token;
    clock.advance(599_000);
    expect((await call('GET', '/auth/me', { token })).status).toBe(200);
    clock.advance(1_000);
    const expired = await call('GET', '/auth/me', { token });
    expect(expired.status).toBe(401);
    expect(expired.body.message).toContain('expired');
  });

  it('refuses an API key from the instant of its expires_at', async () => {
    const jwt = (await login('user@clock.test')).body.data.token;
    const expiresAt = new Date(clock.now() + 60_000).toISOString();
    const created = await call('POST', '/auth/api-keys', { token: jwt, body: { name: 'clocked', expires_at: expiresAt } });
    expect(created.status).toBe(201);
    clock.set(Date.parse(expiresAt) - 1);
    expect((await call('GET', '/auth/me', { token: created.body.data.key })).status).toBe(200);
    clock.set(Date.parse(expiresAt));
    expect((await call('GET', '/auth/me', { token: created.body.data.key })).status).toBe(401);
  });

  it('starts a new request window after a minute, with X-RateLimit-Reset at the window end', async () => {
    await t.app.settings.update({ rate_limit_mode: 'requests', rate_limit_login_per_minute: 2 });
    clock.set(Math.ceil(clock.now() / 60_000) * 60_000 + 500); // not on a second boundary
    const windowStart = clock.now();
    const first = await login('user@clock.test');
    expect(first.headers['x-ratelimit-reset']).toBe(String(Math.ceil((windowStart + 60_000) / 1000)));
    expect(first.headers['x-ratelimit-remaining']).toBe('1');
    clock.advance(30_000);
    expect((await login('user@clock.test')).status).toBe(200);
    const limited = await login('user@clock.test');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBe('30');
    expect(limited.headers['x-ratelimit-reset']).toBe(String(Math.ceil((windowStart + 60_000) / 1000)));
    clock.set(windowStart + 60_000);
    const next = await login('user@clock.test');
    expect(next.status).toBe(200);
    expect(next.headers['x-ratelimit-remaining']).toBe('1');
    await t.app.settings.update({ rate_limit_login_per_minute: 10 });
  });

  it('locks for login_lockout_minutes, counts failures only within that period, and unlocks after it', async () => {
    await t.app.settings.update({ rate_limit_mode: 'lockout', login_max_attempts: 3, login_lockout_minutes: 15 });
    // Two failures, then a pause longer than the period: the count starts again.
    for (let i = 0; i < 2; i++) expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    clock.advance(15 * 60_000);
    for (let i = 0; i < 2; i++) expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    expect((await login('user@clock.test')).status).toBe(200);
    // The third failure of this period locks.
    expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    const locked = await login('user@clock.test');
    expect(locked.status).toBe(429);
    expect(locked.body.data).toEqual({ remaining_seconds: 900 });
    expect(locked.body.message).toContain('15 minutes');

    clock.advance(14 * 60_000 + 1_000);
    const almost = await login('user@clock.test');
    expect(almost.body.data).toEqual({ remaining_seconds: 59 });
    expect(almost.body.message).toContain('1 minute');
    expect(almost.headers['retry-after']).toBe('59');

    clock.advance(59_000);
    expect((await login('user@clock.test')).status).toBe(200);
    // After a lock has ended, counting starts from zero.
    for (let i = 0; i < 2; i++) expect((await login('user@clock.test', 'wrong')).status).toBe(401);
    expect((await login('user@clock.test')).status).toBe(200);
  });

  it('accepts a TOTP code one step either side of the daemon time, not two', async () => {
    await t.app.settings.update({ rate_limit_mode: 'requests' });
    const jwt = (await login('admin@clock.test')).body.data.token;
    const { secret } = (await call('POST', '/auth/2fa/setup', { token: jwt })).body.data;
    clock.set(Math.floor(clock.now() / 30_000) * 30_000 + 10_000); // 10 s into step s
    const s = Math.floor(clock.now() / 30_000);
    expect((await call('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totpAt(secret, s - 2) } })).status).toBe(401);
    expect((await call('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totpAt(secret, s + 2) } })).status).toBe(401);
    expect((await call('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totpAt(secret, s - 1) } })).status).toBe(200);
    expect((await login('admin@clock.test', PASSWORD, totpAt(secret, s + 1))).status).toBe(200);
    // The next step's code is now at most as new as the last accepted one, until time moves on.
    expect((await login('admin@clock.test', PASSWORD, totpAt(secret, s + 1))).status).toBe(401);
    clock.advance(60_000); // s + 2 is now current
    expect((await login('admin@clock.test', PASSWORD, totpAt(secret, s + 2))).status).toBe(200);
  });

  it('honours a reset token until it is an hour old, not after', async () => {
    await t.app.settings.update({ rate_limit_mode: 'requests' });
    const mailDir = layout(t.dir).mailDir;
    const tokenOfMail = async (n: number) => {
      const name = await eventually(async () => (await readdir(mailDir).catch(() => [] as string[])).filter((f) => f.endsWith('.eml')).sort()[n - 1], `mail ${n}`);
      return /^ {4}(\S{43})$/m.exec(await readFile(join(mailDir, name), 'utf8'))![1];
    };
    const requested = clock.now();
    expect((await call('POST', '/auth/forgot-password', { body: { email: 'user@clock.test' } })).status).toBe(200);
    const first = await tokenOfMail(1);
    clock.set(requested + 60 * 60_000);
    const late = await call('POST', '/auth/reset-password', { body: { token: first, password: 'too-late-password' } });
    expect(late.status).toBe(400);
    expect(late.body.error).toBe('invalid token');

    const again = clock.now();
    expect((await call('POST', '/auth/forgot-password', { body: { email: 'user@clock.test' } })).status).toBe(200);
    const second = await tokenOfMail(2);
    clock.set(again + 60 * 60_000 - 1);
    expect((await call('POST', '/auth/reset-password', { body: { token: second, password: 'in-time-password' } })).status).toBe(200);
    expect((await login('user@clock.test', 'in-time-password')).status).toBe(200);
  });
});

// Request limits: variant A (request-rate windows with X-RateLimit headers), variant B (the
// per-IP failure counter and lockout), the mode setting and live setting changes through the app
// in-process (app.inject); both surviving a crash on a real daemon, killed with SIGKILL.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startLoggedIn, type HttpResult, type TestDaemon } from '../helpers/daemon.js';
import { createUser, currentStep, freshStep, putSettings, totpAt } from './helpers.js';

const header = (result: HttpResult, name: string) => {
  const value = result.headers[name];
  return value === undefined ? undefined : Number(value);
};

function expectLimitHeaders(result: HttpResult, limit: number) {
  expect(header(result, 'x-ratelimit-limit'), `${result.status} ${result.text}`).toBe(limit);
  const remaining = header(result, 'x-ratelimit-remaining')!;
  expect(remaining).toBeGreaterThanOrEqual(0);
  expect(remaining).toBeLessThanOrEqual(limit);
  const reset = header(result, 'x-ratelimit-reset')!;
  const now = Date.now() / 1000;
  expect(reset).toBeGreaterThanOrEqual(Math.floor(now));
  expect(reset).toBeLessThanOrEqual(Math.ceil(now) + 61);
  return { remaining, reset };
}

describe('variant A: request-rate limits', () => {
  let api: TestApp;
  let admin: string;
  // Admins are limited like everyone: tests that lower the per-user limit change it through an
  // admin account that has made (almost) no requests in the current window.
  const ops: Array<{ email: string; password: string }> = [];
  const opsToken = (i: number) => api.login(ops[i].email, ops[i].password);

  beforeAll(async () => {
    api = await buildTestApp();
    admin = await api.login();
    for (const i of [0, 1]) ops.push(await createUser(api, admin, `ops${i}@example.com`, 'admin'));
  });
  afterAll(async () => {
    await api?.close();
  });

  it('puts X-RateLimit-Limit/Remaining/Reset (Unix seconds) on every /api/v1 answer, with the default limits', async () => {
    const me = await api.request('GET', '/auth/me', { token: admin });
    expect(me.status).toBe(200);
    expectLimitHeaders(me, 120);
    for (const result of [
      await api.request('GET', '/auth/me'), // 401
      await api.request('GET', '/no/such/path', { token: admin }), // 404
      await api.request('POST', '/admin/users', { token: admin, body: {} }), // 400
    ]) {
      expect(result.status).toBeGreaterThanOrEqual(400);
      expectLimitHeaders(result, 120);
    }
    const login = await api.request('POST', '/auth/login', { body: { email: 'nobody@example.com', password: 'x' } });
    expectLimitHeaders(login, 10);
    const forgot = await api.request('POST', '/auth/forgot-password', { body: { email: 'nobody@example.com' } });
    expectLimitHeaders(forgot, 5);
    // Documented exemption: liveness checks are not counted.
    expect((await api.request('GET', '/health')).headers['x-ratelimit-limit']).toBeUndefined();
  });

  it('limits /auth/login per IP and answers 429 `rate limit exceeded` with Retry-After', async () => {
    await putSettings(api, admin, { rate_limit_login_per_minute: 3 });
    let last: HttpResult | undefined;
    const remainings: number[] = [];
    for (let i = 0; i < 10; i++) {
      last = await api.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
      if (last.status === 429) break;
      expect(last.status).toBe(200);
      remainings.push(expectLimitHeaders(last, 3).remaining);
    }
    expect(last!.status).toBe(429);
    expect(last!.body).toEqual({ data: null, error: 'rate limit exceeded', message: expect.stringContaining('3 per minute') });
    const { remaining, reset } = expectLimitHeaders(last!, 3);
    expect(remaining).toBe(0);
    const retryAfter = header(last!, 'retry-after')!;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(Math.abs(reset - (Date.now() / 1000 + retryAfter))).toBeLessThanOrEqual(2);
    // Counting down to 0 within the window; at most 3 answered.
    expect(remainings.length).toBeLessThanOrEqual(3);
    expect(remainings.at(-1)).toBe(0);
    expect(remainings).toEqual([...remainings].sort((a, b) => b - a));

    // Other routes have their own windows: still served.
    expect((await api.request('GET', '/auth/me', { token: admin })).status).toBe(200);
    // Raising the limit applies at once, without a restart.
    await putSettings(api, admin, { rate_limit_login_per_minute: 1000 });
    const after = await api.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    expect(after.status).toBe(200);
    expectLimitHeaders(after, 1000);
  });

  it('limits forgot and reset password together per IP', async () => {
    await putSettings(api, admin, { rate_limit_reset_per_minute: 2, rate_limit_mode: 'requests' });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const forgot = await api.request('POST', '/auth/forgot-password', { body: { email: 'nobody@example.com' } });
      const reset = await api.request('POST', '/auth/reset-password', { body: { token: 'A'.repeat(43), password: 'long-enough-1' } });
      statuses.push(forgot.status, reset.status);
      if (reset.status === 429) {
        expect(reset.body.error).toBe('rate limit exceeded');
        expect(header(reset, 'retry-after')).toBeGreaterThanOrEqual(1);
      }
    }
    // The earlier forgot-password call of this window (limit then 5) may have used one of the two.
    expect(statuses.filter((s) => s !== 429).length).toBeLessThanOrEqual(2);
    expect(statuses.at(-1)).toBe(429);
    await putSettings(api, admin, { rate_limit_reset_per_minute: 1000 });
    expect((await api.request('POST', '/auth/forgot-password', { body: { email: 'nobody@example.com' } })).status).toBe(200);
  });

  it('limits everything else per user (JWT and key alike), and applies a lowered limit at once', async () => {
    const user = await createUser(api, admin, 'busy@example.com');
    const jwt = await api.login(user.email, user.password);
    const key = (await api.request('POST', '/auth/api-keys', { token: jwt, body: { name: 'busy' } })).body.data.key;

    const before = await api.request('GET', '/auth/me', { token: jwt });
    expectLimitHeaders(before, 120);
    let opsAdmin = await opsToken(0);
    await putSettings(api, opsAdmin, { rate_limit_user_per_minute: 6 });
    const first = await api.request('GET', '/auth/me', { token: key });
    const { remaining: r1, reset } = expectLimitHeaders(first, 6);
    // JWT and key count against the same per-user window.
    const second = await api.request('GET', '/auth/me', { token: jwt });
    expect(expectLimitHeaders(second, 6).remaining).toBe(r1 - 1);

    const resumed = await api.request('GET', '/auth/me', { token: jwt });
    expect(resumed.status).toBe(200);
    const { remaining: r3, reset: reset3 } = expectLimitHeaders(resumed, 6);
    expect(r3).toBe(r1 - 2);
    expect(reset3).toBe(reset);
    // (That the window survives a crash: 'variant B and request windows across a crash' below.)

    let last = resumed;
    for (let i = 0; i < 10 && last.status !== 429; i++) last = await api.request('GET', '/auth/me', { headers: { 'x-api-key': key } });
    expect(last.status).toBe(429);
    expect(last.body).toEqual({ data: null, error: 'rate limit exceeded', message: expect.any(String) });
    expect(header(last, 'retry-after')).toBeGreaterThanOrEqual(1);
    expect((await api.request('GET', '/auth/me', { token: jwt })).status).toBe(429);

    // Another user is not affected, and an admin can raise the limit without a restart.
    opsAdmin = await opsToken(0);
    expect((await api.request('GET', '/auth/me', { token: opsAdmin })).status).toBe(200);
    await putSettings(api, opsAdmin, { rate_limit_user_per_minute: 120 });
    const raised = await api.request('GET', '/auth/me', { token: jwt });
    expect(raised.status).toBe(200);
    expectLimitHeaders(raised, 120);
  });

  it('limits unauthenticated callers per IP', async () => {
    const opsAdmin = await opsToken(1);
    await putSettings(api, opsAdmin, { rate_limit_user_per_minute: 3 });
    let last: HttpResult | undefined;
    for (let i = 0; i < 6; i++) {
      last = await api.request('GET', '/auth/me');
      if (last.status === 429) break;
      expect(last.status).toBe(401);
    }
    expect(last!.status).toBe(429);
    expect(last!.body.error).toBe('rate limit exceeded');
    // A signed-in user's window is separate from the IP's.
    await putSettings(api, opsAdmin, { rate_limit_user_per_minute: 120 });
  });

  it('has no request-rate limit and no headers in `lockout` mode', async () => {
    await putSettings(api, admin, { rate_limit_mode: 'lockout', rate_limit_user_per_minute: 2, login_max_attempts: 1000 });
    for (let i = 0; i < 5; i++) {
      const result = await api.request('GET', '/auth/me', { token: admin });
      expect(result.status).toBe(200);
      expect(result.headers['x-ratelimit-limit']).toBeUndefined();
      expect(result.headers['x-ratelimit-remaining']).toBeUndefined();
    }
    await putSettings(api, admin, { rate_limit_mode: 'both', rate_limit_user_per_minute: 120 });
    expectLimitHeaders(await api.request('GET', '/auth/me', { token: admin }), 120);
  });
});

describe('variant B and request windows across a crash', () => {
  let daemon: TestDaemon;
  let admin: string;
  // A customer's window of requests, kept across the crash; changed through another admin's
  // window (admins are limited like everyone).
  let busy: { jwt: string; key: string; ops: string };

  beforeAll(async () => {
    ({ daemon, admin } = await startLoggedIn());
    // Default thresholds (5 attempts, 15 minutes); request windows out of the way.
    await putSettings(daemon, admin, { rate_limit_login_per_minute: 1000, rate_limit_reset_per_minute: 1000 });
    // Signed in before the IP is locked out below.
    const user = await createUser(daemon, admin, 'busy@example.com');
    const ops = await createUser(daemon, admin, 'ops@example.com', 'admin');
    const jwt = await daemon.login(user.email, user.password);
    const key = (await daemon.request('POST', '/auth/api-keys', { token: jwt, body: { name: 'busy' } })).body.data.key;
    busy = { jwt, key, ops: await daemon.login(ops.email, ops.password) };
  });
  afterAll(async () => {
    await daemon?.dispose();
  });

  const login = (password: string) => daemon.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password } });

  function expectLocked(result: HttpResult, maxSeconds: number) {
    expect(result.status).toBe(429);
    expect(result.body).toEqual({ data: { remaining_seconds: expect.any(Number) }, error: 'too_many_attempts', message: expect.stringMatching(/try again in \d+ minutes?/) });
    const seconds = result.body.data.remaining_seconds;
    expect(Number.isInteger(seconds)).toBe(true);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThanOrEqual(maxSeconds);
    expect(header(result, 'retry-after')).toBe(seconds);
    expect(result.body.message).toContain(`${Math.ceil(seconds / 60)} minute`);
    return seconds as number;
  }

  it('locks the IP for 15 minutes after 5 failed logins; the right password does not unlock it', async () => {
    for (let i = 0; i < 5; i++) {
      const result = await login('wrong-password');
      expect([i, result.status, result.body.error]).toEqual([i, 401, 'invalid credentials']);
    }
    const locked = await login(ADMIN_PASSWORD);
    const seconds = expectLocked(locked, 900);
    expect(seconds).toBeGreaterThan(900 - 60);
    expect(locked.body.message).toContain('15 minutes');

    // Password reset is locked out too; authenticated requests are not.
    expectLocked(await daemon.request('POST', '/auth/forgot-password', { body: { email: ADMIN_EMAIL } }), 900);
    expectLocked(await daemon.request('POST', '/auth/reset-password', { body: { token: 'A'.repeat(43), password: 'long-enough-1' } }), 900);
    expect((await daemon.request('GET', '/auth/me', { token: admin })).status).toBe(200);
  });

  it('still answers 429 after a restart (crash), with the wait counting down; a request window goes on where it was', async () => {
    await putSettings(daemon, busy.ops, { rate_limit_user_per_minute: 6 });
    const { remaining: r1, reset } = expectLimitHeaders(await daemon.request('GET', '/auth/me', { token: busy.key }), 6);
    expect(expectLimitHeaders(await daemon.request('GET', '/auth/me', { token: busy.jwt }), 6).remaining).toBe(r1 - 1);
    // Request windows are written without waiting; a later acknowledged (durable) write carries
    // them to disk with it, so it is the marker to crash after.
    await createUser(daemon, busy.ops, 'window-marker@example.com');

    const before = (await login(ADMIN_PASSWORD)).body.data.remaining_seconds;
    const answered = Date.now();
    // After a crash the daemon counts down to the lock's stored end (not a fresh 15 minutes):
    // the wait has dropped by at least the whole seconds that passed, however long the restart took.
    daemon = await daemon.restart();
    const sent = Date.now();
    const seconds = expectLocked(await login(ADMIN_PASSWORD), before);
    expect(seconds).toBeLessThanOrEqual(before - Math.floor((sent - answered) / 1000));
    expect(seconds).toBeGreaterThan(900 - 120);

    const resumed = await daemon.request('GET', '/auth/me', { token: busy.jwt });
    expect(resumed.status).toBe(200);
    const { remaining: r3, reset: reset3 } = expectLimitHeaders(resumed, 6);
    expect(r3).toBe(r1 - 2);
    expect(reset3).toBe(reset);
    await putSettings(daemon, busy.ops, { rate_limit_user_per_minute: 120 });
  });

  it('is not enforced in `requests` mode, and is again (still locked) when switched back', async () => {
    await putSettings(daemon, admin, { rate_limit_mode: 'requests' });
    const unlocked = await login(ADMIN_PASSWORD);
    expect(unlocked.status).toBe(200);
    // Failures are not counted in this mode either.
    for (let i = 0; i < 7; i++) expect((await login('wrong-password')).status).toBe(401);
    await putSettings(daemon, admin, { rate_limit_mode: 'both' });
    expectLocked(await login(ADMIN_PASSWORD), 900);
  });
});

describe('variant B: what counts as a failed attempt', () => {
  let api: TestApp;
  let admin: string;

  beforeAll(async () => {
    api = await buildTestApp({ settings: { rate_limit_mode: 'lockout', login_max_attempts: 4, login_lockout_minutes: 2 } });
    admin = await api.login();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('counts a wrong TOTP code, every forgot-password request and a refused reset token; a success does not reset the count', async () => {
    freshStep(api.clock);
    const user = await createUser(api, admin, 'counted@example.com');
    const jwt = await api.login(user.email, user.password);
    const { secret } = (await api.request('POST', '/auth/2fa/setup', { token: jwt })).body.data;
    const s = currentStep(api.clock.now());
    expect((await api.request('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totpAt(secret, s - 1) } })).status).toBe(200);
    const body = (totp_code?: string) => ({ email: user.email, password: user.password, ...(totp_code ? { totp_code } : {}) });

    // Asking for the code is not a failure.
    for (let i = 0; i < 5; i++) expect((await api.request('POST', '/auth/login', { body: body() })).body.error).toBe('2fa_required');
    // 1: a wrong code.
    expect((await api.request('POST', '/auth/login', { body: body(totpAt(secret, s + 4)) })).body.error).toBe('invalid totp code');
    // A success in between does not clear the counter.
    expect((await api.request('POST', '/auth/login', { body: body(totpAt(secret, s)) })).status).toBe(200);
    // 2: a forgot-password request (whatever the email); 3: a refused reset token.
    expect((await api.request('POST', '/auth/forgot-password', { body: { email: 'whoever@example.com' } })).status).toBe(200);
    expect((await api.request('POST', '/auth/reset-password', { body: { token: 'B'.repeat(43), password: 'long-enough-1' } })).status).toBe(400);
    // 4: a wrong password reaches login_max_attempts (4) and locks for login_lockout_minutes (2).
    expect((await api.request('POST', '/auth/login', { body: { email: user.email, password: 'nope-nope' } })).status).toBe(401);

    const locked = await api.request('POST', '/auth/login', { body: body(totpAt(secret, s + 1)) });
    expect(locked.status).toBe(429);
    expect(locked.body.error).toBe('too_many_attempts');
    expect(locked.body.data.remaining_seconds).toBeGreaterThan(120 - 30);
    expect(locked.body.data.remaining_seconds).toBeLessThanOrEqual(120);
    expect(locked.body.message).toContain('2 minutes');
    expect(locked.headers['retry-after']).toBe(String(locked.body.data.remaining_seconds));
    // `lockout` mode: no request-rate headers.
    expect(locked.headers['x-ratelimit-limit']).toBeUndefined();
  });
});

describe('variant B under concurrency', () => {
  let api: TestApp;

  beforeAll(async () => {
    api = await buildTestApp();
    const admin = await api.login();
    await putSettings(api, admin, { rate_limit_mode: 'lockout', login_max_attempts: 5, login_lockout_minutes: 15 });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('evaluates at most login_max_attempts of 150 concurrent wrong logins from one IP (401); the rest are 429', async () => {
    const results = await Promise.all(
      Array.from({ length: 150 }, () => api.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: 'wrong-password' } })),
    );
    const refused = results.filter((r) => r.status === 401);
    const locked = results.filter((r) => r.status === 429);
    expect(refused.length + locked.length, results.map((r) => r.status).join(',')).toBe(150);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeLessThanOrEqual(5);
    for (const r of refused) expect(r.body.error).toBe('invalid credentials');
    for (const r of locked) {
      expect(r.body.error).toBe('too_many_attempts');
      expect(r.body.data.remaining_seconds).toBeGreaterThan(0);
      expect(header(r, 'retry-after')).toBe(r.body.data.remaining_seconds);
    }
    // Locked now: the right password is refused too.
    const after = await api.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    expect([after.status, after.body.error]).toEqual([429, 'too_many_attempts']);
    console.log(`lockout under concurrency: ${refused.length} evaluated (401), ${locked.length} refused (429)`);
  });
});

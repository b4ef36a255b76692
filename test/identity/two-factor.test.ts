// TOTP 2FA, with codes from the test's own RFC 6238 implementation (node:crypto), so the daemon
// is checked against the standard rather than against otplib: the routes in-process (app.inject,
// the clock put at the start of a step); the per-account lock once on a real daemon, whose point
// is many client addresses at once and a lock that outlives a crash.
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { initDataDir, makeDataDir, startLoggedIn, TEST_STORE, type TestDaemon } from '../helpers/daemon.js';
import { openStore } from '../../src/store/factory.js';
import { RELAXED, createUser, currentStep, freshStep, hotp, quickPasswordHash, totpAt, type CreatedUser } from './helpers.js';

describe('the test TOTP implementation', () => {
  it('matches the RFC 6238 SHA-1 test vectors', () => {
    const key = Buffer.from('12345678901234567890');
    // Appendix B: T = 59, 1111111109, 2000000000 → 94287082, 07081804, 69279037 (8 digits).
    expect(hotp(key, Math.floor(59 / 30), 8)).toBe('94287082');
    expect(hotp(key, Math.floor(1111111109 / 30), 8)).toBe('07081804');
    expect(hotp(key, Math.floor(2000000000 / 30), 8)).toBe('69279037');
  });
});

describe('two-factor authentication', () => {
  let api: TestApp;
  let admin: string;

  beforeAll(async () => {
    api = await buildTestApp({ settings: RELAXED });
    admin = await api.login();
  });
  afterAll(async () => {
    await api?.close();
  });

  const login = (user: CreatedUser, totp_code?: string) =>
    api.request('POST', '/auth/login', { body: { email: user.email, password: user.password, ...(totp_code ? { totp_code } : {}) } });

  /** Sets up 2FA for a fresh user and returns the secret (not yet enabled). */
  const setUp = async (email: string) => {
    const user = await createUser(api, admin, email);
    const token = await api.login(user.email, user.password);
    const setup = await api.request('POST', '/auth/2fa/setup', { token });
    expect(setup.status, setup.text).toBe(200);
    return { user, token, secret: setup.body.data.secret as string, setup };
  };

  it('sets up a pending secret: base32 and an otpauth URL, login unchanged until enabled', async () => {
    const { user, token, secret, setup } = await setUp('pending@example.com');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const url = new URL(setup.body.data.otpauth_url);
    expect(url.protocol).toBe('otpauth:');
    expect(url.host).toBe('totp');
    expect(url.searchParams.get('secret')).toBe(secret);
    expect(url.searchParams.get('issuer')).toBe('panelctl');
    expect(decodeURIComponent(url.pathname)).toContain('pending@example.com');

    expect((await login(user)).status).toBe(200);
    expect((await api.request('GET', '/auth/me', { token })).body.data.two_factor_enabled).toBe(false);
    // Nothing to disable yet.
    expect((await api.request('POST', '/auth/2fa/disable', { token, body: { totp_code: totpAt(secret, currentStep(api.clock.now())) } })).status).toBe(409);
  });

  it('enables with a current code, then asks for one at login: 2fa_required, invalid totp code, replay refused', async () => {
    freshStep(api.clock);
    const { user, token, secret } = await setUp('totp@example.com');
    const s = currentStep(api.clock.now());

    const wrongEnable = await api.request('POST', '/auth/2fa/enable', { token, body: { totp_code: totpAt(secret, s + 3) } });
    expect(wrongEnable.status).toBe(401);
    expect(wrongEnable.body.error).toBe('invalid totp code');

    const enable = await api.request('POST', '/auth/2fa/enable', { token, body: { totp_code: totpAt(secret, s) } });
    expect(enable.status).toBe(200);
    expect(enable.body.data).toEqual({ two_factor_enabled: true });
    expect((await api.request('GET', '/auth/me', { token })).body.data.two_factor_enabled).toBe(true);
    expect((await api.request('POST', '/auth/2fa/setup', { token })).status).toBe(409);

    const missing = await login(user);
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ data: null, error: '2fa_required', message: expect.stringMatching(/two-factor code/) });

    const wrong = await login(user, totpAt(secret, s + 3));
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ data: null, error: 'invalid totp code', message: expect.any(String) });
    expect((await login(user, '12345')).body.error).toBe('invalid totp code');
    expect((await login(user, 'abcdef')).body.error).toBe('invalid totp code');

    // The code that enabled 2FA was used: replaying it at login is refused.
    const replayOfEnable = await login(user, totpAt(secret, s));
    expect(replayOfEnable.status).toBe(401);
    expect(replayOfEnable.body.error).toBe('invalid totp code');

    // One step of drift ahead is accepted; a second use of that code is not.
    const ahead = await login(user, totpAt(secret, s + 1));
    expect(ahead.status, ahead.text).toBe(200);
    expect(ahead.body.data.token).toEqual(expect.any(String));
    const replay = await login(user, totpAt(secret, s + 1));
    expect(replay.status).toBe(401);
    expect(replay.body.error).toBe('invalid totp code');

    // A wrong password is `invalid credentials` whatever the code.
    const badPassword = await api.request('POST', '/auth/login', { body: { email: user.email, password: 'wrong-password', totp_code: totpAt(secret, s + 1) } });
    expect(badPassword.body.error).toBe('invalid credentials');
  });

  it('accepts one step behind, refuses codes older than the last accepted, and disables with a fresh code', async () => {
    freshStep(api.clock);
    const { user, token, secret } = await setUp('drift@example.com');
    const s = currentStep(api.clock.now());

    expect((await api.request('POST', '/auth/2fa/enable', { token, body: { totp_code: totpAt(secret, s - 1) } })).status).toBe(200);
    expect((await login(user, totpAt(secret, s - 2))).body.error).toBe('invalid totp code'); // out of the window
    const now = await login(user, totpAt(secret, s));
    expect(now.status, now.text).toBe(200);
    // s - 1 is inside the window but older than the accepted s.
    expect((await login(user, totpAt(secret, s - 1))).body.error).toBe('invalid totp code');

    // Disabling also takes a fresh code: the one just used is refused.
    const jwt = now.body.data.token;
    const stale = await api.request('POST', '/auth/2fa/disable', { token: jwt, body: { totp_code: totpAt(secret, s) } });
    expect(stale.status).toBe(401);
    expect(stale.body.error).toBe('invalid totp code');
    const disable = await api.request('POST', '/auth/2fa/disable', { token: jwt, body: { totp_code: totpAt(secret, s + 1) } });
    expect(disable.status, disable.text).toBe(200);
    expect(disable.body.data).toEqual({ two_factor_enabled: false });
    expect((await login(user)).status).toBe(200);
  });

  it('needs a JWT for the 2FA routes: an API key gets 403 `jwt required`', async () => {
    const user = await createUser(api, admin, 'keyholder@example.com');
    const token = await api.login(user.email, user.password);
    const key = (await api.request('POST', '/auth/api-keys', { token, body: { name: 'k' } })).body.data.key;
    for (const path of ['/auth/2fa/setup', '/auth/2fa/enable', '/auth/2fa/disable']) {
      const result = await api.request('POST', path, { token: key, body: path.endsWith('setup') ? undefined : { totp_code: '000000' } });
      expect([path, result.status, result.body.error]).toEqual([path, 403, 'jwt required']);
    }
    expect((await api.request('POST', '/auth/2fa/enable', { token, body: { totp_code: '123456' } })).status).toBe(409); // no setup yet
    expect((await api.request('POST', '/auth/2fa/enable', { token, body: {} })).status).toBe(400);
  });

  it('keeps the TOTP secret out of every answer', async () => {
    const { token, secret } = await setUp('secretive@example.com');
    const me = await api.request('GET', '/auth/me', { token });
    const users = await api.request('GET', '/admin/users', { token: admin });
    expect(me.text).not.toContain(secret);
    expect(users.text).not.toContain(secret);
  });
});

// What only a real daemon shows, checked once (the json project): the lock counts 100 concurrent
// wrong codes from 25 real client addresses (TCP, not inject's remoteAddress), and it survives a
// crash (SIGKILL). The same rules in-process, on both stores: totp-lockout.test.ts. The account,
// with 2FA on (set up and enabled through the routes above), is written into the initialised data
// directory before the daemon starts, with a cheaper scrypt hash: each of the 100 logins verifies
// the right password before the lock is consulted, and the lock is the point here.
const SPREAD = { email: 'spread-2fa@example.com', password: 'customer-password-1', secret: 'JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP' };

describe.skipIf(TEST_STORE === 'postgres')('the per-account lock of the second factor on a real daemon', () => {
  let daemon: TestDaemon;
  let admin: string;

  beforeAll(async () => {
    const dataDir = await makeDataDir();
    await initDataDir(dataDir);
    const store = await openStore({ dataDir });
    const at = new Date().toISOString();
    await store.users.insert({
      email: SPREAD.email,
      name: 'spread',
      role: 'customer',
      password_hash: quickPasswordHash(SPREAD.password),
      totp_secret: SPREAD.secret,
      totp_pending_secret: null,
      two_factor_enabled: true,
      totp_last_step: null,
      created_at: at,
      updated_at: at,
    });
    await store.flush();
    await store.close();
    ({ daemon, admin } = await startLoggedIn({ dataDir, settings: { ...RELAXED, totp_max_failures: 10, totp_lockout_minutes: 5 } }));
  });
  afterAll(async () => {
    await daemon?.dispose();
  });

  it('evaluates at most 10 of 100 concurrent wrong codes from 25 loopback addresses, the right code gets 429, and the lock outlives a crash until POST /admin/unlock', async () => {
    const user = { email: SPREAD.email, password: SPREAD.password };
    const secret = SPREAD.secret;
    // The right code is the current step's when sent (a restart on a loaded machine can outlast a
    // step or two); the wrong one is five steps ahead, outside the window whenever it arrives.
    const right = () => totpAt(secret, currentStep());
    const s = currentStep();
    // 127.0.0.2 … 127.0.0.26: loopback addresses of their own, so the daemon sees 25 clients.
    const agents = Array.from({ length: 25 }, (_, i) => new Agent({ connect: { ca: daemon.ca, localAddress: `127.0.0.${i + 2}` } }));
    const attempt = async (agent: Agent, code: string) => {
      const response = await request(`${daemon.url}/api/v1/auth/login`, {
        method: 'POST',
        dispatcher: agent,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: user.email, password: user.password, totp_code: code }),
      });
      return { status: response.statusCode, headers: response.headers, body: (await response.body.json()) as { error: string; data: { remaining_seconds: number } | null; message: string } };
    };
    try {
      const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => attempt(agents[i % 25], totpAt(secret, s + 5))));
      const evaluated = answers.filter((a) => a.status === 401);
      expect(evaluated.length).toBeLessThanOrEqual(10);
      expect(evaluated.every((a) => a.body.error === 'invalid totp code')).toBe(true);
      expect(answers.filter((a) => a.status === 429 && a.body.error === 'too_many_attempts')).toHaveLength(100 - evaluated.length);
      const locked = await attempt(agents[0], right());
      expect(locked.status).toBe(429);
      expect(locked.body).toEqual({ data: { remaining_seconds: expect.any(Number) }, error: 'too_many_attempts', message: expect.stringContaining('two-factor') });
      expect(Number(locked.headers['retry-after'])).toBe(locked.body.data!.remaining_seconds);
      expect(locked.body.data!.remaining_seconds).toBeGreaterThan(4 * 60);
    } finally {
      await Promise.all(agents.map((agent) => agent.close()));
    }

    // restart() kills the daemon (SIGKILL) and starts another on the same data directory.
    daemon = await daemon.restart();
    admin = await daemon.login();
    const login = (code: string) => daemon.request('POST', '/auth/login', { body: { email: user.email, password: user.password, totp_code: code } });
    expect((await login(right())).status).toBe(429);
    const unlocked = await daemon.request('POST', '/admin/unlock', { token: admin, body: { email: user.email } });
    expect(unlocked.status, unlocked.text).toBe(200);
    expect(unlocked.body.data).toEqual({ addresses: 0, accounts: 1 });
    const ok = await login(right());
    expect(ok.status, ok.text).toBe(200);
  });
});

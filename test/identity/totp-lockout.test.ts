// The per-account limit on second-factor guesses, with the app built in-process (app.inject, whose
// `remoteAddress` gives each request its source address) on the run's store (JSON, or PostgreSQL
// in the postgres project) and a clock that stands still until the test moves it: 100 wrong codes
// from 25 addresses evaluate at most `totp_max_failures`, the right code is refused while locked,
// and the lock ends after `totp_lockout_minutes`, by an unlock, or survives a restart. Codes come
// from otplib at the daemon's time. Each of the ~150 logins verifies the (right) password first:
// the accounts store a cheaper scrypt hash (quickPasswordHash), as the lock is the subject here.
import { authenticator } from 'otplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, fixedClock, type TestApp } from '../helpers/app.js';
import { quickPasswordHash } from './helpers.js';

const START = Date.parse('2030-04-01T10:00:00Z');
const PASSWORD = 'totp-lock-password-1';
const SECRET = authenticator.generateSecret(20);

describe('second-factor guesses limited per account', () => {
  let t: TestApp;
  const clock = fixedClock(START);
  let adminJwt: string;

  /** The code otplib gives for the daemon's current time, and one certainly wrong for it. */
  const rightCode = () => authenticator.clone({ epoch: clock.now() }).generate(SECRET);
  const wrongCode = () => String((Number(rightCode()) + 500_000) % 1_000_000).padStart(6, '0');

  const login = async (email: string, totpCode: string | undefined, address: string) => {
    const response = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      remoteAddress: address,
      payload: { email, password: PASSWORD, ...(totpCode ? { totp_code: totpCode } : {}) },
    });
    return { status: response.statusCode, headers: response.headers, body: response.json() };
  };
  const unlock = async (body: object) => {
    const response = await t.app.inject({ method: 'POST', url: '/api/v1/admin/unlock', headers: { authorization: `Bearer ${adminJwt}` }, payload: body });
    return { status: response.statusCode, body: response.json() };
  };

  /** Each code is for a later time step than the last accepted one (a code is used once). */
  const nextStep = () => clock.advance(30_000);

  beforeAll(async () => {
    t = await buildTestApp({ clock });
    const admin = await t.addUser('admin@totp.test', 'admin', PASSWORD);
    await t.store.users.update(admin.id, { password_hash: quickPasswordHash(PASSWORD) });
    for (const email of ['victim@totp.test', 'other@totp.test']) {
      const user = await t.addUser(email, 'customer', PASSWORD);
      await t.store.users.update(user.id, { password_hash: quickPasswordHash(PASSWORD), totp_secret: SECRET, two_factor_enabled: true });
    }
    adminJwt = (await login('admin@totp.test', undefined, '127.0.0.1')).body.data.token;
  });
  afterAll(async () => {
    await t?.close();
  });

  it('has the documented defaults', () => {
    expect(t.app.settings.current()).toMatchObject({ totp_max_failures: 10, totp_lockout_minutes: 15 });
  });

  it('evaluates at most 10 of 100 wrong codes from 25 addresses; the rest, and then the right code, get 429', async () => {
    const wrong = wrongCode();
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => login('victim@totp.test', wrong, `10.0.0.${(i % 25) + 1}`)));
    const evaluated = answers.filter((a) => a.status === 401);
    const refused = answers.filter((a) => a.status === 429);
    expect(evaluated.length).toBeLessThanOrEqual(10);
    for (const a of evaluated) expect(a.body.error).toBe('invalid totp code');
    expect(refused).toHaveLength(100 - evaluated.length);
    for (const a of refused) {
      expect(a.body.error).toBe('too_many_attempts');
      expect(a.body.data.remaining_seconds).toBeGreaterThan(0);
      expect(a.headers['retry-after']).toBe(String(a.body.data.remaining_seconds));
    }

    // From an address that never tried, the right code is refused as well.
    const right = await login('victim@totp.test', rightCode(), '10.0.1.1');
    expect(right.status).toBe(429);
    expect(right.body).toEqual({ data: { remaining_seconds: 900 }, error: 'too_many_attempts', message: expect.stringContaining('15 minutes') });
    expect(right.body.message).toContain('two-factor');
    // The lock is the account's: another account with the same password and code is not affected.
    expect((await login('other@totp.test', rightCode(), '10.0.0.1')).status).toBe(200);

    clock.advance(15 * 60_000 - 1_000);
    const almost = await login('victim@totp.test', rightCode(), '10.0.1.2');
    expect(almost.status).toBe(429);
    expect(almost.body.data).toEqual({ remaining_seconds: 1 });
    clock.advance(1_000);
    expect((await login('victim@totp.test', rightCode(), '10.0.1.2')).status).toBe(200);
  });

  it('is counted sequentially too: the tenth wrong code locks, and a good login before it starts the count again', async () => {
    nextStep();
    for (let i = 0; i < 9; i++) expect((await login('victim@totp.test', wrongCode(), `10.0.2.${i + 1}`)).status).toBe(401);
    expect((await login('victim@totp.test', rightCode(), '10.0.2.50')).status).toBe(200);
    nextStep();
    for (let i = 0; i < 9; i++) expect((await login('victim@totp.test', wrongCode(), `10.0.3.${i + 1}`)).status).toBe(401);
    const tenth = await login('victim@totp.test', wrongCode(), '10.0.3.10');
    expect(tenth.status).toBe(401);
    expect((await login('victim@totp.test', rightCode(), '10.0.3.11')).status).toBe(429);
  });

  it('stays locked across a restart, and an admin unlock of the account ends it', async () => {
    // Still locked from the test before.
    t = await t.restart();
    expect((await login('victim@totp.test', rightCode(), '10.0.4.1')).status).toBe(429);

    const unknown = await unlock({ email: 'nobody@totp.test' });
    expect(unknown.status).toBe(404);
    const unlocked = await unlock({ email: 'victim@totp.test' });
    expect(unlocked.status).toBe(200);
    expect(unlocked.body.data).toEqual({ addresses: 0, accounts: 1 });
    expect((await login('victim@totp.test', rightCode(), '10.0.4.1')).status).toBe(200);
  });

  it('counts wrong codes sent to /auth/2fa/disable against the account as well', async () => {
    nextStep();
    const jwt = (await login('other@totp.test', rightCode(), '10.0.5.1')).body.data.token as string;
    const disable = (code: string) =>
      t.app.inject({ method: 'POST', url: '/api/v1/auth/2fa/disable', headers: { authorization: `Bearer ${jwt}` }, payload: { totp_code: code } });
    nextStep();
    for (let i = 0; i < 10; i++) expect((await disable(wrongCode())).statusCode).toBe(401);
    const locked = await disable(rightCode());
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error).toBe('too_many_attempts');
    // An unlock of everything ends it.
    const all = await unlock({});
    expect(all.status).toBe(200);
    expect(all.body.data.accounts).toBeGreaterThanOrEqual(1);
    expect((await disable(rightCode())).statusCode).toBe(200);
  });

  it('is off with totp_max_failures 0', async () => {
    await t.app.settings.update({ totp_max_failures: 0 });
    const user = await t.store.users.byEmail('victim@totp.test');
    nextStep();
    for (let i = 0; i < 12; i++) expect((await login('victim@totp.test', wrongCode(), `10.0.6.${i + 1}`)).status).toBe(401);
    expect((await login('victim@totp.test', rightCode(), '10.0.6.100')).status).toBe(200);
    expect(user?.two_factor_enabled).toBe(true);
    await t.app.settings.update({ totp_max_failures: 10 });
  });
});

// `panelctl admin unlock` for the data directory's owner: end to end with a real daemon while it
// runs (a signed admin JWT against POST /admin/unlock); a locked-out address logs in again, a
// login refused by a lockout exits 4 with the daemon's message said once, and `admin
// reset-password` ends the account's second-factor lock. The commands run in process against
// the daemon, the unlock that ends the address's lockout as the built CLI. With the daemon stopped (through
// the store under the lock) and with --database-url, the command runs in process against the
// in-process app's data directory or database: what is checked there is the store it changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { runInProcess } from '../helpers/cli.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { createMigratedDatabase, pgAdminUrl } from '../helpers/postgres-db.js';
import { cliSession, currentStep, totp, type CliRunner, type CliSession } from './helpers.js';

/** Wrong logins from the test's address (127.0.0.1) until the daemon (or app) locks it. */
async function lockOut(daemon: Pick<TestDaemon, 'request'>): Promise<void> {
  for (;;) {
    const answer = await daemon.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: 'not-the-password' } });
    if (answer.status === 429) return;
    expect(answer.status).toBe(401);
  }
}

const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

describe('panelctl admin unlock', () => {
  let daemon: TestDaemon;
  let cli: CliSession;

  const login = (password = ADMIN_PASSWORD, extra: string[] = [], email = ADMIN_EMAIL) =>
    cli.run(['login', '--email', email, '--password-stdin', ...extra], { input: `${password}\n` });
  const unlock = (args: string[] = [], json = false, runner: CliRunner = cli) => runner.run([...(json ? ['--json'] : []), 'admin', 'unlock', ...args]);

  beforeAll(async () => {
    daemon = await startDaemon();
    cli = await cliSession(daemon, { inProcess: true });
    // The lockout (variant B) alone: the login request rate would answer 429 first otherwise.
    const put = await daemon.request('PUT', '/admin/settings', { token: await daemon.login(), body: { rate_limit_mode: 'lockout' } });
    expect(put.status, put.text).toBe(200);
  });
  afterAll(async () => {
    await daemon?.dispose();
    await cli?.dispose();
  });

  it('with the daemon running: a locked-out login exits 4 saying so once; unlock --ip ends it', async () => {
    await lockOut(daemon);
    const refused = await login();
    expect(refused.code, refused.stderr).toBe(4);
    expect(occurrences(refused.stderr.toLowerCase(), 'too many failed attempts')).toBe(1);
    expect(refused.stderr).toMatch(/try again in 15 minutes/);
    expect(refused.stderr).toContain('panelctl admin unlock');

    const bad = await unlock(['--ip', 'not-an-address']);
    expect(bad.code).toBe(2);
    const other = await unlock(['--ip', '192.0.2.1'], true);
    expect(other.code, other.stderr).toBe(0);
    expect(JSON.parse(other.stdout)).toEqual({ addresses: 0, accounts: 0, daemon: 'running' });
    expect((await login()).code).toBe(4);

    const done = await unlock(['--ip', '127.0.0.1'], false, cli.built);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stderr + done.stdout).toContain('through the running daemon');
    const again = await login();
    expect(again.code, again.stderr).toBe(0);
  });

  it("ends an account's second-factor lock with --email, and reset-password ends it too", async () => {
    const admin = await daemon.login();
    const put = await daemon.request('PUT', '/admin/settings', { token: admin, body: { totp_max_failures: 2, rate_limit_mode: 'requests', rate_limit_login_per_minute: 10_000 } });
    expect(put.status, put.text).toBe(200);
    const email = 'locked@example.com';
    const created = await daemon.request('POST', '/admin/users', { token: admin, body: { email, name: 'Locked', password: 'locked-password-1', role: 'customer' } });
    expect(created.status, created.text).toBe(201);
    const jwt = await daemon.login(email, 'locked-password-1');
    const { secret } = (await daemon.request('POST', '/auth/2fa/setup', { token: jwt })).body.data;
    // Codes of successive steps around now (one step of drift either way), each used once.
    const s = currentStep();
    expect((await daemon.request('POST', '/auth/2fa/enable', { token: jwt, body: { totp_code: totp(secret, s - 1) } })).status).toBe(200);
    const lockAccount = async (password: string) => {
      for (let i = 0; i < 2; i++) expect((await login(password, ['--totp', '000000'], email)).code).toBe(4);
      const locked = await login(password, ['--totp', totp(secret, s)], email);
      expect(locked.code, locked.stderr).toBe(4);
      expect(occurrences(locked.stderr, 'two-factor codes')).toBe(1);
    };

    await lockAccount('locked-password-1');
    const missing = await unlock(['--email', 'nobody@example.com']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no user with email nobody@example.com');
    const done = await unlock(['--email', email], true);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ addresses: 0, accounts: 1, daemon: 'running' });
    expect((await login('locked-password-1', ['--totp', totp(secret, s)], email)).code).toBe(0);

    // Locked again, then the owner resets the password: the account's lock ends with it.
    await lockAccount('locked-password-1');
    const reset = await cli.run(['admin', 'reset-password', '--email', email, '--password-stdin'], { input: 'locked-password-2\n' });
    expect(reset.code, reset.stderr).toBe(0);
    const after = await login('locked-password-2', ['--totp', totp(secret, s + 1)], email);
    expect(after.code, after.stderr).toBe(0);
  });
});

/** Unlock in process, as the data directory's owner would run it (no login, no URL). */
const unlockInProcess = (dataDir: string, args: string[]) =>
  runInProcess(['--json', 'admin', 'unlock', ...args], { env: { PANEL_DATA_DIR: dataDir, PANELCTL_CONFIG_DIR: dataDir } });

describe('panelctl admin unlock with the daemon stopped', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp({ settings: { rate_limit_mode: 'lockout' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('works on the store (every address), and the reopened app lets the address in', async () => {
    await lockOut(t);
    let done: Awaited<ReturnType<typeof runInProcess>> | undefined;
    t = await t.restart(async () => {
      done = await unlockInProcess(t.dir, []);
    });
    expect(done!.code, done!.stderr).toBe(0);
    expect(JSON.parse(done!.stdout)).toEqual({ addresses: 1, accounts: 0, daemon: 'stopped' });
    expect(await t.login()).toMatch(/^eyJ/);
  });
});

const { url: adminUrl } = pgAdminUrl();

describe.skipIf(!adminUrl)('panelctl admin unlock --database-url', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await buildTestApp({ databaseUrl: await createMigratedDatabase(adminUrl!, 'panelctl_unlock'), settings: { rate_limit_mode: 'lockout' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("ends a running app's lockout of an address through the database", async () => {
    await lockOut(t);
    const result = await unlockInProcess(t.dir, ['--database-url', t.databaseUrl!, '--ip', '127.0.0.1']);
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ addresses: 1, accounts: 0, daemon: 'running' });
    expect(await t.login()).toMatch(/^eyJ/);
  });
});

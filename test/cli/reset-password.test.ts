// `panelctl admin reset-password` for the data directory's owner, with the daemon running (end to
// end: the built CLI once, then in process, against a real daemon, a signed admin JWT against
// POST /admin/users/:id/password) and stopped (in process: the command works on the store under the lock, then the in-process
// app opens it again): the new password works, the old one and every JWT issued before no longer
// do, and the password is printed only when the command generated it.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openStore } from '../../src/store/factory.js';
import { buildTestApp } from '../helpers/app.js';
import { runCli, runInProcess, type CliResult } from '../helpers/cli.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, makeDataDir, startDaemon, type TestDaemon } from '../helpers/daemon.js';

const CUSTOMER = 'cora@example.com';

/**
 * On this branch a password change refuses JWTs issued in an earlier second than the change
 * (password_changed_at against iat, at second precision). To make "the old JWT is refused"
 * certain, the change must fall in a later second than the token: this waits for the next
 * second boundary by polling the clock (no fixed sleep).
 */
async function nextSecond(): Promise<void> {
  const start = Math.floor(Date.now() / 1000);
  await vi.waitFor(() => expect(Math.floor(Date.now() / 1000)).toBeGreaterThan(start), { timeout: 2_000, interval: 5 });
}

/** The command as the owner types it: with the built CLI, or (`inProcess`) its run function in this process. */
const reset = (dataDir: string, email: string, password?: string, json = false, inProcess = false): Promise<CliResult> =>
  (inProcess ? runInProcess : runCli)([...(json ? ['--json'] : []), 'admin', 'reset-password', '--data-dir', dataDir, '--email', email, ...(password ? ['--password-stdin'] : [])], {
    input: password ? `${password}\n` : '',
    env: { PANELCTL_CONFIG_DIR: dataDir, PANELCTL_URL: '', PANELCTL_TOKEN: '', PANEL_DATA_DIR: '' },
  });

/** The user as the store holds it, read without writing (the daemon may be running). */
async function storedUser(dataDir: string, email: string): Promise<Record<string, unknown>> {
  const store = await openStore({ dataDir, readOnly: true });
  try {
    return { ...(await store.users.byEmail(email)) };
  } finally {
    await store.close();
  }
}

describe('panelctl admin reset-password', () => {
  let daemon: TestDaemon;
  let customerId: number;

  beforeAll(async () => {
    daemon = await startDaemon();
    const admin = await daemon.login();
    const created = await daemon.request('POST', '/admin/users', { token: admin, body: { email: CUSTOMER, name: 'Cora', password: 'cora-password-1', role: 'customer' } });
    customerId = created.body.data.id;
  });
  afterAll(async () => {
    await daemon?.dispose();
  });

  it('with the daemon running: through the API; the old JWT is refused, the new password logs in, nothing printed', async () => {
    const oldToken = await daemon.login(CUSTOMER, 'cora-password-1');
    expect((await daemon.request('GET', '/auth/me', { token: oldToken })).status).toBe(200);
    await nextSecond();
    const result = await reset(daemon.dataDir, CUSTOMER, 'cora-password-2');
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toContain('through the running daemon');
    expect(result.stdout + result.stderr).not.toContain('cora-password-2');
    const me = await daemon.request('GET', '/auth/me', { token: oldToken });
    expect(me.status).toBe(401);
    expect(me.body.error).toBe('not authenticated');
    expect((await daemon.request('POST', '/auth/login', { body: { email: CUSTOMER, password: 'cora-password-1' } })).status).toBe(401);
    expect(await daemon.login(CUSTOMER, 'cora-password-2')).toMatch(/^eyJ/);
    expect((await storedUser(daemon.dataDir, CUSTOMER)).token_generation).toBe(1);
  });

  it('with the daemon running: a generated password is printed once (and works); an unknown email is exit 1', async () => {
    const result = await reset(daemon.dataDir, CUSTOMER, undefined, true, true);
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed).toEqual({ id: customerId, email: CUSTOMER, daemon: 'running', password: expect.stringMatching(/^\S{24}$/) });
    expect(result.stderr).toContain('shown only once');
    expect(await daemon.login(CUSTOMER, printed.password)).toMatch(/^eyJ/);
    const chosen = await reset(daemon.dataDir, CUSTOMER, 'cora-password-3', true, true);
    expect(JSON.parse(chosen.stdout).password).toBeNull();

    const unknown = await reset(daemon.dataDir, 'nobody@localhost', 'whatever-123', false, true);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no user with email nobody@localhost');
  });

  it('the admin route takes an admin JWT only', async () => {
    const admin = await daemon.login();
    const customer = await daemon.login(CUSTOMER, 'cora-password-3');
    const key = (await daemon.request('POST', '/auth/api-keys', { token: admin, body: { name: 'k' } })).body.data.key as string;
    const path = `/admin/users/${customerId}/password`;
    expect((await daemon.request('POST', path, { body: { password: 'cora-password-4' } })).status).toBe(401);
    expect((await daemon.request('POST', path, { token: customer, body: { password: 'cora-password-4' } })).body.error).toBe('forbidden');
    expect((await daemon.request('POST', path, { token: key, body: { password: 'cora-password-4' } })).body.error).toBe('jwt required');
    expect((await daemon.request('POST', path, { token: admin, body: { password: 'short' } })).status).toBe(422);
    expect((await daemon.request('POST', '/admin/users/999999/password', { token: admin, body: { password: 'cora-password-4' } })).status).toBe(404);
    const ok = await daemon.request('POST', path, { token: admin, body: { password: 'cora-password-4' } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toMatchObject({ id: customerId, email: CUSTOMER });
  });
});

describe('panelctl admin reset-password with the daemon stopped', () => {
  it('works through the store; the new password works after the app opens it again, the old JWT does not', async () => {
    let t = await buildTestApp();
    try {
      const oldToken = await t.login();
      await nextSecond();
      let result: CliResult | undefined;
      // The store is closed as a stopped daemon leaves it; reopening it shows the lock was released.
      t = await t.restart(async () => {
        result = await reset(t.dir, ADMIN_EMAIL, undefined, false, true);
      });
      expect(result!.code, result!.stderr).toBe(0);
      const password = /^password:\s+(\S+)$/m.exec(result!.stdout)?.[1];
      expect(password, result!.stdout).toMatch(/^\S{24}$/);
      expect(result!.stderr).toContain('shown only once');
      expect(result!.stderr).not.toContain('through the running daemon');
      expect((await t.request('GET', '/auth/me', { token: oldToken })).status).toBe(401);
      expect((await t.request('POST', '/auth/login', { body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } })).status).toBe(401);
      expect(await t.login(ADMIN_EMAIL, password)).toMatch(/^eyJ/);
      expect((await t.store.users.byEmail(ADMIN_EMAIL))?.token_generation).toBe(1);
    } finally {
      await t.close();
    }
  });

  it('refuses a directory that is not initialised', async () => {
    const dir = await makeDataDir();
    try {
      const result = await reset(dir, ADMIN_EMAIL, 'whatever-123', false, true);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('not an initialised data directory');
      const init = await runInProcess(['init', '--data-dir', dir, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n`, env: { PANELCTL_URL: '' } });
      expect(init.code, init.stderr).toBe(0);
      expect((await reset(dir, ADMIN_EMAIL, 'whatever-123', false, true)).code).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

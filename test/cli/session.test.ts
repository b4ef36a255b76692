// Logging in and out with the built CLI against a real daemon: --password-stdin, wrong
// password (exit 4), the config file (mode 0600), tokens from flags and the environment,
// two-factor login (--totp, and the prompt on a terminal), and API keys.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCertificate } from '../../src/daemon/tls.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { awayFromStepEdge, cliSession, currentStep, HAS_SCRIPT, plain, runOnTty, totp, type CliSession } from './helpers.js';

describe('panelctl login, logout, whoami, keys', () => {
  let daemon: TestDaemon;
  let cli: CliSession;

  beforeAll(async () => {
    daemon = await startDaemon();
    cli = await cliSession(daemon);
  });
  afterAll(async () => {
    await cli?.dispose();
    await daemon?.dispose();
  });

  it('refuses a wrong password with exit 4 and stores nothing', async () => {
    const result = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: 'not-the-password\n' });
    expect(result.code).toBe(4);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('email or password is wrong');
    await expect(stat(join(cli.configDir, 'config.json'))).rejects.toThrow();

    // With --json the error is the API's envelope, on stderr.
    const json = await cli.run(['--json', 'login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: 'not-the-password\n' });
    expect(json.code).toBe(4);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr)).toEqual({ data: null, error: 'invalid credentials', message: expect.any(String) });
  });

  it('names a certificate problem when the daemon is not trusted (exit 1)', async () => {
    const other = join(cli.configDir, 'other-ca.pem');
    await writeFile(other, generateCertificate(1).cert);
    const result = await cli.run(['--ca', other, 'login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/TLS certificate of https:\/\/127\.0\.0\.1:\d+ not trusted \([A-Z_]+\): pass the daemon's certificate with --ca FILE/);
  });

  it('logs in with --password-stdin, keeps the token in a 0600 config file, and whoami uses it', async () => {
    const result = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`Logged in to ${daemon.url} as ${ADMIN_EMAIL} (admin)`);
    const file = await stat(join(cli.configDir, 'config.json'));
    expect(file.mode & 0o777).toBe(0o600);
    expect((await stat(cli.configDir)).mode & 0o777).toBe(0o700);

    const me = await cli.json(['whoami']);
    expect(me).toEqual({ id: 1, email: ADMIN_EMAIL, name: 'Administrator', role: 'admin', two_factor_enabled: false, created_at: expect.any(String) });
  });

  it('prints the login data with --json', async () => {
    const data = await cli.json(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(data).toEqual({ token: expect.stringMatching(/^eyJ/), user: { id: 1, email: ADMIN_EMAIL, name: 'Administrator', role: 'admin' } });
  });

  it('uses --token and PANELCTL_TOKEN over the stored login, and answers a bad one with exit 4 and a hint', async () => {
    const bad = await cli.run(['--token', 'not-a-token', 'whoami']);
    expect(bad.code).toBe(4);
    expect(bad.stderr).toContain('PANELCTL_TOKEN');
    const badEnv = await cli.run(['whoami'], { env: { PANELCTL_TOKEN: 'also-bad' } });
    expect(badEnv.code).toBe(4);
    const good = await cli.json(['whoami'], { env: { PANELCTL_TOKEN: await daemon.login() } });
    expect(good.email).toBe(ADMIN_EMAIL);
  });

  it('does not send the stored token to another URL', async () => {
    const other = await cli.run(['--url', 'https://127.0.0.1:9', 'whoami']);
    expect(other.code).toBe(4);
    expect(other.stderr).toContain(`the stored login is for ${daemon.url}`);
  });

  it('creates (shown once, with a warning), lists and deletes API keys, and the key works', async () => {
    const created = await cli.run(['--json', 'keys', 'create', 'ci-deploy', '--expires-in', '30d']);
    expect(created.code).toBe(0);
    const key = JSON.parse(created.stdout);
    expect(key).toEqual({
      id: expect.any(Number),
      name: 'ci-deploy',
      key: expect.stringMatching(/^ncp_[0-9a-f]{64}$/),
      key_prefix: expect.stringMatching(/^ncp_[0-9a-f]{16}$/),
      expires_at: expect.any(String),
      created_at: expect.any(String),
    });
    expect(created.stderr).toMatch(/shown only once/);
    const days = (Date.parse(key.expires_at) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThan(30.1);

    const human = await cli.run(['keys', 'create', 'nightly', '--expires-at', '2099-01-31T00:00:00Z']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^key: ncp_[0-9a-f]{64}$/m);
    expect(human.stdout).toContain('expires: 2099-01-31T00:00:00');
    expect(human.stderr).toContain('cannot be retrieved again');

    const list = await cli.json<Array<Record<string, unknown>>>(['keys', 'list']);
    expect(list.map((k) => k.name)).toEqual(['ci-deploy', 'nightly']);
    expect(list[0]).not.toHaveProperty('key');
    expect(list[0].key_prefix).toBe(key.key_prefix);

    // Piped: tab-separated lines without a header.
    const piped = await cli.run(['keys', 'list']);
    expect(piped.stdout.split('\n')[0].split('\t').slice(0, 3)).toEqual([String(key.id), 'ci-deploy', key.key_prefix]);

    // The key authenticates API calls; keys commands themselves need a login session.
    const viaKey = await cli.json(['--token', key.key, 'whoami']);
    expect(viaKey.email).toBe(ADMIN_EMAIL);
    const keysWithKey = await cli.run(['--token', key.key, 'keys', 'list']);
    expect(keysWithKey.code).toBe(4);
    expect(keysWithKey.stderr).toContain('needs a login session');

    expect(await cli.json(['keys', 'delete', String(key.id)])).toEqual({ id: key.id });
    const afterDelete = await cli.run(['--token', key.key, 'whoami']);
    expect(afterDelete.code).toBe(4);
    const missing = await cli.run(['keys', 'delete', String(key.id)]);
    expect(missing.code).toBe(1);
  });

  it('logs out (exit 0 also when already logged out), then commands ask for a login', async () => {
    const { token } = JSON.parse(await readFile(join(cli.configDir, 'config.json'), 'utf8')).login;
    expect((await daemon.request('GET', '/auth/me', { token })).status).toBe(200);
    expect(await cli.json(['logout'])).toEqual({ logged_out: true, revoked: true, url: daemon.url });
    // The daemon was told: the old token is refused, not just forgotten.
    const revoked = await daemon.request('GET', '/auth/me', { token });
    expect([revoked.status, revoked.body.message]).toEqual([401, expect.stringContaining('logged out')]);
    expect(await cli.json(['logout'])).toEqual({ logged_out: false, revoked: false, url: null });
    const result = await cli.run(['whoami']);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('run panelctl login');
  });

  it('needs --email and a password source when not on a terminal (exit 2)', async () => {
    const noEmail = await cli.run(['login', '--password-stdin'], { input: 'x\n' });
    expect(noEmail.code).toBe(2);
    const noPassword = await cli.run(['login', '--email', ADMIN_EMAIL]);
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('--password-stdin');
  });
});

describe('panelctl 2fa and two-factor login', () => {
  let daemon: TestDaemon;
  let cli: CliSession;

  beforeAll(async () => {
    daemon = await startDaemon();
    cli = await cliSession(daemon);
    const login = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(login.code).toBe(0);
  });
  afterAll(async () => {
    await cli?.dispose();
    await daemon?.dispose();
  });

  it('sets up 2FA (otpauth URL and secret), enables it with a code, and login then needs --totp', async () => {
    const human = await cli.run(['2fa', 'setup']);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^otpauth url: otpauth:\/\/totp\//m);
    const setup = await cli.json<{ secret: string; otpauth_url: string }>(['2fa', 'setup']);
    expect(setup.otpauth_url).toContain(`secret=${setup.secret}`);

    await awayFromStepEdge();
    const step = currentStep();
    const wrong = await cli.run(['2fa', 'enable', totp(setup.secret, step + 5)]);
    expect(wrong.code).toBe(4);
    expect(await cli.json(['2fa', 'enable', totp(setup.secret, step - 1)])).toEqual({ two_factor_enabled: true });
    expect((await cli.json(['whoami'])).two_factor_enabled).toBe(true);

    const withoutCode = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(withoutCode.code).toBe(4);
    expect(withoutCode.stderr).toContain('--totp CODE');

    const withCode = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin', '--totp', totp(setup.secret, step)], {
      input: `${ADMIN_PASSWORD}\n`,
    });
    expect(withCode.stderr).toContain('Logged in');
    expect(withCode.code).toBe(0);

    expect(await cli.json(['2fa', 'disable', totp(setup.secret, step + 1)])).toEqual({ two_factor_enabled: false });
  });

  it.skipIf(!HAS_SCRIPT)('on a terminal, 2fa setup shows a QR code; login prompts for email, hidden password and the code', async () => {
    const shown = await runOnTty(['--data-dir', daemon.dataDir, '--url', daemon.url, '2fa', 'setup'], cli.env).done;
    expect(shown.code).toBe(0);
    expect(shown.output).toMatch(/[▀▄█]{10,}/);
    const secretLine = /secret:\s+([A-Z2-7]+)/.exec(plain(shown.output));
    expect(secretLine).not.toBeNull();
    const setup = { secret: secretLine![1] };
    await awayFromStepEdge(15);
    const step = currentStep();
    expect(await cli.json(['2fa', 'enable', totp(setup.secret, step - 1)])).toEqual({ two_factor_enabled: true });

    const tty = runOnTty(['--data-dir', daemon.dataDir, '--url', daemon.url, 'login'], cli.env);
    await tty.waitFor(/Email: /);
    tty.write(`${ADMIN_EMAIL}\r`);
    await tty.waitFor(/Password: /);
    tty.write(`${ADMIN_PASSWORD}\r`);
    await tty.waitFor(/Two-factor code: /);
    tty.write(`${totp(setup.secret, step)}\r`);
    const { code, output } = await tty.done;
    expect(plain(output)).toContain(`Logged in to ${daemon.url} as ${ADMIN_EMAIL}`);
    expect(output).not.toContain(ADMIN_PASSWORD); // the password is not echoed
    expect(code).toBe(0);
    expect(await cli.json(['2fa', 'disable', totp(setup.secret, step + 1)])).toEqual({ two_factor_enabled: false });
  });
});

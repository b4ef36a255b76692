// login, logout, whoami, keys and 2fa against a real daemon, end to end once per family: what
// only the real thing shows (the daemon's refusals, TLS verification, a key that works and stops
// working, a revoked session, TOTP codes, prompts on a terminal). The commands run in process
// against the daemon; the login that writes the config file, and the terminal prompts, run as
// the built CLI. The commands' parsing, output and exit codes against a fake API:
// run-session.test.ts.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCertificate } from '../../src/daemon/tls.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { awayFromStepEdge, cliSession, currentStep, HAS_SCRIPT, plain, runOnTty, totp, type CliSession } from './helpers.js';

describe('panelctl login, logout, whoami, keys and 2fa against the daemon', () => {
  let daemon: TestDaemon;
  let cli: CliSession;

  beforeAll(async () => {
    daemon = await startDaemon();
    cli = await cliSession(daemon, { inProcess: true });
  });
  afterAll(async () => {
    await cli?.dispose();
    await daemon?.dispose();
  });

  it('login refuses a wrong password (exit 4) and an untrusted certificate (exit 1); logs in, whoami; keys made, used, deleted; logout revokes', async () => {
    const wrong = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: 'not-the-password\n' });
    expect(wrong).toMatchObject({ code: 4, stdout: '' });
    expect(wrong.stderr).toContain('email or password is wrong');
    await expect(stat(join(cli.configDir, 'config.json'))).rejects.toThrow();
    const other = join(cli.configDir, 'other-ca.pem');
    await writeFile(other, (await generateCertificate(1)).cert);
    const untrusted = await cli.run(['--ca', other, 'login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr).toMatch(/TLS certificate of https:\/\/127\.0\.0\.1:\d+ not trusted \([A-Z_]+\): pass the daemon's certificate with --ca FILE/);

    const login = await cli.built.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(login.code).toBe(0);
    expect(login.stderr).toContain(`Logged in to ${daemon.url} as ${ADMIN_EMAIL} (admin)`);
    expect((await stat(join(cli.configDir, 'config.json'))).mode & 0o777).toBe(0o600);
    expect(await cli.json(['whoami'])).toEqual({ id: 1, email: ADMIN_EMAIL, name: 'Administrator', role: 'admin', two_factor_enabled: false, created_at: expect.any(String) });

    const key = await cli.json(['keys', 'create', 'ci-deploy', '--expires-in', '30d']);
    expect(key).toEqual({
      id: expect.any(Number),
      name: 'ci-deploy',
      key: expect.stringMatching(/^ncp_[0-9a-f]{64}$/),
      key_prefix: expect.stringMatching(/^ncp_[0-9a-f]{16}$/),
      expires_at: expect.any(String),
      created_at: expect.any(String),
    });
    const list = await cli.json<Array<Record<string, unknown>>>(['keys', 'list']);
    expect(list.map((k) => [k.name, k.key_prefix, 'key' in k])).toEqual([['ci-deploy', key.key_prefix, false]]);
    // The key authenticates API calls; keys commands themselves need a login session.
    expect((await cli.json(['--token', key.key, 'whoami'])).email).toBe(ADMIN_EMAIL);
    const keysWithKey = await cli.run(['--token', key.key, 'keys', 'list']);
    expect(keysWithKey.code).toBe(4);
    expect(keysWithKey.stderr).toContain('needs a login session');
    expect(await cli.json(['keys', 'delete', String(key.id)])).toEqual({ id: key.id });
    expect((await cli.run(['--token', key.key, 'whoami'])).code).toBe(4);
    expect((await cli.run(['keys', 'delete', String(key.id)])).code).toBe(1);

    const { token } = JSON.parse(await readFile(join(cli.configDir, 'config.json'), 'utf8')).login;
    expect(await cli.json(['logout'])).toEqual({ logged_out: true, revoked: true, url: daemon.url });
    // The daemon was told: the old token is refused, not just forgotten.
    const revoked = await daemon.request('GET', '/auth/me', { token });
    expect([revoked.status, revoked.body.message]).toEqual([401, expect.stringContaining('logged out')]);
    expect((await cli.run(['whoami'])).code).toBe(4);
  });

  it('2fa: set up, enabled with a code; login then needs --totp and takes it; disabled with a code', async () => {
    expect((await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` })).code).toBe(0);
    const setup = await cli.json<{ secret: string; otpauth_url: string }>(['2fa', 'setup']);
    expect(setup.otpauth_url).toContain(`secret=${setup.secret}`);

    await awayFromStepEdge();
    const step = currentStep();
    expect((await cli.run(['2fa', 'enable', totp(setup.secret, step + 5)])).code).toBe(4);
    expect(await cli.json(['2fa', 'enable', totp(setup.secret, step - 1)])).toEqual({ two_factor_enabled: true });
    expect((await cli.json(['whoami'])).two_factor_enabled).toBe(true);

    const withoutCode = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(withoutCode.code).toBe(4);
    expect(withoutCode.stderr).toContain('--totp CODE');
    const withCode = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin', '--totp', totp(setup.secret, step)], { input: `${ADMIN_PASSWORD}\n` });
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

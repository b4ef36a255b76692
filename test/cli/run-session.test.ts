// login, logout, whoami, keys and 2fa in process against a fake API (gh's runF + httpmock):
// argv → the requests sent → the lines printed and the exit code (CONTRACT section 5: 0 ok,
// 1 error, 2 usage, 4 auth). The real daemon walk of these families is session.test.ts.
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeApi } from '../helpers/fake-api.js';
import { useFakeApi } from './helpers.js';

const URL = 'https://127.0.0.1:3443';
const ADMIN = { id: 1, email: 'admin@localhost', name: 'Administrator', role: 'admin' };
const KEY = { id: 3, name: 'ci-deploy', key_prefix: 'ncp_0123456789abcdef', last_used_at: null, expires_at: '2099-01-31T00:00:00Z', created_at: '2025-05-01T12:00:00.000Z' };

const { api, dir: configDir, cli } = useFakeApi();

const withToken = (token = 'jwt-1') => ({ env: { PANELCTL_TOKEN: token } });

describe('login', () => {
  const loginOk = { data: { token: 'jwt-new', user: ADMIN } };

  it('sends the email and the first line of stdin, no token; keeps URL and token in a 0600 file in a 0700 directory', async () => {
    api.on('POST', '/auth/login', loginOk);
    const result = await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'secret-pw\nignored\n', env: { PANELCTL_TOKEN: 'other' } });
    expect(result).toMatchObject({ code: 0, stdout: '' });
    expect(result.stderr).toContain(`Logged in to ${URL} as admin@localhost (admin)`);
    const [sent] = api.sent('POST', '/auth/login');
    expect(sent.body).toEqual({ email: 'admin@localhost', password: 'secret-pw' });
    expect(sent.headers.authorization).toBeUndefined();
    const file = join(configDir, 'config.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(configDir)).mode & 0o777).toBe(0o700);
    expect(JSON.parse(await readFile(file, 'utf8')).login).toMatchObject({ url: URL, token: 'jwt-new', email: 'admin@localhost' });
  });

  it('prints the login data with --json', async () => {
    api.on('POST', '/auth/login', loginOk);
    const result = await cli(['--json', 'login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n' });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual(loginOk.data);
  });

  it('a refused password is exit 4 with the API message (the envelope with --json) and stores nothing', async () => {
    api.fail('POST', '/auth/login', 401, 'invalid credentials', 'email or password is wrong');
    const result = await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'wrong\n' });
    expect(result).toMatchObject({ code: 4, stdout: '' });
    expect(result.stderr.trim()).toBe('panelctl: email or password is wrong');
    await expect(stat(join(configDir, 'config.json'))).rejects.toThrow();
    const json = await cli(['--json', 'login', '--email', 'admin@localhost', '--password-stdin'], { input: 'wrong\n' });
    expect(json).toMatchObject({ code: 4, stdout: '' });
    expect(JSON.parse(json.stderr)).toEqual({ data: null, error: 'invalid credentials', message: 'email or password is wrong' });
  });

  it('with 2FA on, asks for --totp (exit 4) and sends the code it is given', async () => {
    api.on('POST', '/auth/login', (req) => (req.body.totp_code === '123456' ? loginOk : { status: 401, error: '2fa_required', message: 'a code is required' }));
    const without = await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n' });
    expect(without.code).toBe(4);
    expect(without.stderr).toContain('pass the current code with --totp CODE');
    const withCode = await cli(['login', '--email', 'admin@localhost', '--password-stdin', '--totp', ' 123456 '], { input: 'pw\n' });
    expect(withCode.code).toBe(0);
  });

  it('needs --email and a password source when not on a terminal (exit 2, nothing sent)', async () => {
    const noEmail = await cli(['login', '--password-stdin'], { input: 'x\n' });
    expect(noEmail.code).toBe(2);
    expect(noEmail.stderr).toContain('--email is required');
    const noPassword = await cli(['login', '--email', 'admin@localhost']);
    expect(noPassword.code).toBe(2);
    expect(noPassword.stderr).toContain('--password-stdin');
    expect(api.requests).toEqual([]);
  });

  it('names an untrusted certificate (exit 1) and a refused connection (exit 1, how to start the daemon)', async () => {
    const untrusted = await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n', api: new FakeApi().refuse('DEPTH_ZERO_SELF_SIGNED_CERT') });
    expect(untrusted.code).toBe(1);
    expect(untrusted.stderr.trim()).toBe(`panelctl: TLS certificate of ${URL} not trusted (DEPTH_ZERO_SELF_SIGNED_CERT): pass the daemon's certificate with --ca FILE (default: DATA_DIR/tls/cert.pem)`);
    const refused = await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n', api: new FakeApi().refuse() });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`cannot connect to ${URL}: connection refused. Is the daemon running? panelctl daemon start`);
  });
});

describe('whoami and the token', () => {
  const me = { ...ADMIN, two_factor_enabled: false, created_at: '2025-05-01T12:00:00.000Z' };

  it('sends --token or PANELCTL_TOKEN over the stored login; prints the account (JSON or a record naming the source)', async () => {
    api.on('GET', '/auth/me', { data: me });
    await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n', api: new FakeApi().on('POST', '/auth/login', { data: { token: 'stored', user: ADMIN } }) });
    const json = await cli(['--json', 'whoami']);
    expect(JSON.parse(json.stdout)).toEqual(me);
    await cli(['--token', 'flag', 'whoami']);
    const human = await cli(['whoami'], withToken('env'));
    expect(api.sent('GET', '/auth/me').map((r) => r.headers.authorization)).toEqual(['Bearer stored', 'Bearer flag', 'Bearer env']);
    expect(human.stdout).toContain('email: admin@localhost\nname: Administrator\nrole: admin\nid: 1\n2fa: disabled\n');
    expect(human.stdout).toContain('token: --token / PANELCTL_TOKEN');
  });

  it('a refused token is exit 4 with a hint naming where it came from', async () => {
    api.fail('GET', '/auth/me', 401, 'not authenticated', 'invalid token');
    const flag = await cli(['--token', 'bad', 'whoami']);
    expect(flag.code).toBe(4);
    expect(flag.stderr.trim()).toBe('panelctl: invalid token. Check --token / PANELCTL_TOKEN, or run panelctl login');
    await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n', api: new FakeApi().on('POST', '/auth/login', { data: { token: 'stored', user: ADMIN } }) });
    const stored = await cli(['whoami']);
    expect(stored.stderr.trim()).toBe('panelctl: invalid token. Run panelctl login');
  });

  it('does not send the stored token to another URL, and without any login asks for one (exit 4, nothing sent)', async () => {
    const none = await cli(['whoami']);
    expect(none.code).toBe(4);
    expect(none.stderr).toContain('not logged in: run panelctl login');
    await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n', api: new FakeApi().on('POST', '/auth/login', { data: { token: 'stored', user: ADMIN } }) });
    const other = await cli(['--url', 'https://127.0.0.1:9', 'whoami']);
    expect(other.code).toBe(4);
    expect(other.stderr).toContain(`the stored login is for ${URL}, not https://127.0.0.1:9`);
    expect(api.requests).toEqual([]);
  });
});

describe('logout', () => {
  it('revokes the stored token at the daemon and forgets it; again is exit 0 with nothing to forget', async () => {
    await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n', api: new FakeApi().on('POST', '/auth/login', { data: { token: 'stored', user: ADMIN } }) });
    api.on('POST', '/auth/logout', { data: { logged_out: true } });
    const first = await cli(['--json', 'logout']);
    expect(JSON.parse(first.stdout)).toEqual({ logged_out: true, revoked: true, url: URL });
    expect(api.sent('POST', '/auth/logout')[0].headers.authorization).toBe('Bearer stored');
    expect(JSON.parse(await readFile(join(configDir, 'config.json'), 'utf8')).login).toBeUndefined();
    const again = await cli(['logout']);
    expect(again).toMatchObject({ code: 0, stdout: '' });
    expect(again.stderr).toContain('not logged in: nothing to forget');
  });

  it('forgets the login when the daemon cannot be told, and says the token stays valid', async () => {
    await cli(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'pw\n', api: new FakeApi().on('POST', '/auth/login', { data: { token: 'stored', user: ADMIN } }) });
    const result = await cli(['logout'], { api: new FakeApi().refuse() });
    expect(result.code).toBe(0);
    expect(result.stderr).toContain(`Logged out of ${URL} (admin@localhost)`);
    expect(result.stderr).toContain('the token stays valid until it expires');
  });
});

describe('keys', () => {
  it('create: name and expiry (--expires-in from now, --expires-at as given); the key once, with a warning', async () => {
    api.on('POST', '/auth/api-keys', (req) => ({ data: { ...KEY, name: req.body.name, expires_at: req.body.expires_at ?? null, key: `ncp_${'ab'.repeat(32)}` } }));
    const before = Date.now();
    const json = await cli(['--json', 'keys', 'create', 'ci-deploy', '--expires-in', '30d'], withToken());
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ name: 'ci-deploy', key: `ncp_${'ab'.repeat(32)}` });
    expect(json.stderr).toContain('shown only once');
    const days = (Date.parse(api.sent('POST', '/auth/api-keys')[0].body.expires_at) - before) / 86_400_000;
    expect(days).toBeGreaterThan(29.99);
    expect(days).toBeLessThan(30.01);

    const human = await cli(['keys', 'create', 'nightly', '--expires-at', '2099-01-31T00:00:00Z'], withToken());
    expect(api.sent('POST', '/auth/api-keys')[1].body).toEqual({ name: 'nightly', expires_at: '2099-01-31T00:00:00Z' });
    expect(human.stdout).toMatch(/^key: ncp_(ab){32}$/m);
    expect(human.stdout).toContain('expires: 2099-01-31T00:00:00Z');
    expect(human.stderr).toContain('cannot be retrieved again');
  });

  it('create: bad or conflicting expiry flags are usage errors (exit 2) before any request', async () => {
    for (const args of [['--expires-in', 'soon'], ['--expires-at', 'tomorrow'], ['--expires-in', '1d', '--expires-at', '2099-01-31T00:00:00Z'], []]) {
      const result = await cli(['keys', 'create', ...(args.length ? ['k', ...args] : [])], withToken());
      expect(result.code, args.join(' ')).toBe(2);
    }
    expect(api.requests).toEqual([]);
  });

  it('list: every page by default, --limit N; JSON, piped rows without a header, a table on a terminal', async () => {
    const second = { ...KEY, id: 4, name: 'nightly', key_prefix: 'ncp_fedcba9876543210' };
    api.on('GET', /^\/auth\/api-keys/, { data: [KEY], link: '</api/v1/auth/api-keys?after=3>; rel="next"' });
    api.on('GET', /^\/auth\/api-keys\?after=3/, { data: [second] });
    const json = await cli(['--json', 'keys', 'list'], withToken());
    expect(JSON.parse(json.stdout)).toEqual([KEY, second]);
    const piped = await cli(['keys', 'list'], withToken());
    expect(piped.stdout.split('\n')[0].split('\t')).toEqual(['3', 'ci-deploy', 'ncp_0123456789abcdef', '-', '2099-01-31T00:00:00Z', '2025-05-01T12:00:00.000Z']);
    const limited = await cli(['--json', 'keys', 'list', '--limit', '1'], withToken());
    expect(JSON.parse(limited.stdout)).toEqual([KEY]);
    expect(api.sent('GET', /^\/auth\/api-keys/).at(-1)!.path).toBe('/auth/api-keys?limit=1');
    const table = await cli(['keys', 'list'], { ...withToken(), tty: true, env: { PANELCTL_TOKEN: 't', NO_COLOR: '1' } });
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+PREFIX\s+LAST USED\s+EXPIRES\s+CREATED$/);
  });

  it('list: none on a terminal says how to make one', async () => {
    api.on('GET', '/auth/api-keys', { data: [] });
    const result = await cli(['keys', 'list'], { tty: true, env: { PANELCTL_TOKEN: 't', NO_COLOR: '1' } });
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('no API keys: create one with panelctl keys create NAME');
  });

  it('with an API key instead of a session: exit 4, "needs a login session"', async () => {
    api.fail('GET', '/auth/api-keys', 403, 'jwt required', 'API keys cannot manage API keys');
    const result = await cli(['keys', 'list'], withToken('ncp_key'));
    expect(result.code).toBe(4);
    expect(result.stderr.trim()).toBe('panelctl: API keys cannot manage API keys. This command needs a login session, not an API key: run panelctl login');
  });

  it('delete: DELETE by id ({id} with --json, a line otherwise); an unknown id is exit 1; a bad id exit 2', async () => {
    api.on('DELETE', '/auth/api-keys/3', { data: { id: 3 } });
    api.fail('DELETE', '/auth/api-keys/9', 404, 'not found', 'API key 9 not found');
    const json = await cli(['--json', 'keys', 'delete', '3'], withToken());
    expect(JSON.parse(json.stdout)).toEqual({ id: 3 });
    const human = await cli(['keys', 'delete', '3'], withToken());
    expect(human.stderr).toContain('Deleted API key 3');
    const missing = await cli(['keys', 'delete', '9'], withToken());
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('panelctl: API key 9 not found');
    const bad = await cli(['keys', 'delete', 'x'], withToken());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('expected a positive integer id');
  });
});

describe('2fa', () => {
  const setup = { secret: 'JBSWY3DPEHPK3PXP', otpauth_url: 'otpauth://totp/panelctl:admin%40localhost?secret=JBSWY3DPEHPK3PXP&issuer=panelctl' };

  it('setup: the otpauth URL and secret (no QR code when piped), or the JSON', async () => {
    api.on('POST', '/auth/2fa/setup', { data: setup });
    const human = await cli(['2fa', 'setup'], withToken());
    expect(human.stdout).toBe(`otpauth url: ${setup.otpauth_url}\nsecret: ${setup.secret}\n`);
    expect(human.stderr).toContain('panelctl 2fa enable CODE');
    expect(JSON.parse((await cli(['--json', '2fa', 'setup'], withToken())).stdout)).toEqual(setup);
  });

  it('enable and disable send the code without spaces; a wrong code is exit 4', async () => {
    api.on('POST', '/auth/2fa/enable', (req) => (req.body.totp_code === '123456' ? { data: { two_factor_enabled: true } } : { status: 401, error: 'invalid code', message: 'the code is wrong' }));
    api.on('POST', '/auth/2fa/disable', { data: { two_factor_enabled: false } });
    const enabled = await cli(['2fa', 'enable', '123 456'], withToken());
    expect(enabled.stderr).toContain('Two-factor authentication is enabled');
    const wrong = await cli(['2fa', 'enable', '000000'], withToken());
    expect(wrong.code).toBe(4);
    expect(JSON.parse((await cli(['--json', '2fa', 'disable', '123456'], withToken())).stdout)).toEqual({ two_factor_enabled: false });
  });
});

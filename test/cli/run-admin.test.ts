// users, settings, events, subscriptions and sites in process against a fake API: argv → the
// requests sent → the lines printed (JSON, piped rows, a table on a terminal) and exit codes.
// The real daemon walk of these families is admin.test.ts.
import { describe, expect, it } from 'vitest';
import { FakeApi } from '../helpers/fake-api.js';
import { useFakeApi } from './helpers.js';

const CREATED = '2025-05-01T12:00:00.000Z';
const ADMIN = { id: 1, email: 'admin@localhost', name: 'Administrator', role: 'admin', two_factor_enabled: false, created_at: CREATED };
const CAROL = { id: 2, email: 'carol@example.com', name: 'Carol', role: 'customer', two_factor_enabled: true, created_at: CREATED };
const SUB = { id: 3, customer_id: 2, main_domain: 'carol.example', is_default: true, status: 'active', created_at: CREATED };
const SITE = { id: 4, subscription_id: 3, domain: 'www.carol.example', created_at: CREATED };
const SETTINGS = { jwt_ttl_seconds: 86400, rate_limit_mode: 'both', webhook_allow_private_networks: false, login_max_attempts: 5 };

const { api, dir: configDir, cli } = useFakeApi({ PANELCTL_TOKEN: 'jwt' });

describe('users', () => {
  it('create: the password from stdin is sent and not shown; a generated one is sent and shown once', async () => {
    api.on('POST', '/admin/users', (req) => ({ data: { ...CAROL, email: req.body.email.toLowerCase(), name: req.body.name, role: req.body.role } }));
    const given = await cli(['--json', 'users', 'create', '--email', 'Carol@Example.com', '--name', 'Carol', '--role', 'customer', '--password-stdin'], { input: 'carol-password-1\n' });
    expect(api.sent('POST', '/admin/users')[0].body).toEqual({ email: 'Carol@Example.com', name: 'Carol', role: 'customer', password: 'carol-password-1' });
    expect(JSON.parse(given.stdout)).toEqual(CAROL);
    expect(given.stderr).toBe('');

    const generated = await cli(['--json', 'users', 'create', '--email', 'dave@example.com', '--name', 'Dave', '--role', 'admin']);
    const sent = api.sent('POST', '/admin/users')[1].body.password;
    expect(sent).toMatch(/^\S{12,}$/);
    expect(JSON.parse(generated.stdout).password).toBe(sent);
    expect(generated.stderr).toContain('shown only once');
    const human = await cli(['users', 'create', '--email', 'erin@example.com', '--name', 'Erin', '--role', 'customer']);
    expect(human.stdout).toContain(`password: ${api.sent('POST', '/admin/users')[2].body.password}`);
    expect(human.stderr).toContain('Created user erin@example.com (customer)');
  });

  it('create: a taken email is exit 1 with the API message; an unknown role exit 2 before any request', async () => {
    api.fail('POST', '/admin/users', 409, 'conflict', 'a user with this email already exists');
    const duplicate = await cli(['users', 'create', '--email', 'dave@example.com', '--name', 'D', '--role', 'admin', '--password-stdin'], { input: 'another-pass-1\n' });
    expect(duplicate).toMatchObject({ code: 1, stderr: 'panelctl: a user with this email already exists\n' });
    const badRole = await cli(['users', 'create', '--email', 'a@b.c', '--name', 'A', '--role', 'root']);
    expect(badRole.code).toBe(2);
    expect(api.requests).toHaveLength(1);
  });

  it('list: JSON, piped rows without escape codes (also with colours allowed), a coloured table on a terminal; a customer is refused with exit 4', async () => {
    api.on('GET', /^\/admin\/users/, { data: [ADMIN, CAROL] });
    expect(JSON.parse((await cli(['--json', 'users', 'list'])).stdout)).toEqual([ADMIN, CAROL]);
    const piped = await cli(['users', 'list'], { env: { NO_COLOR: undefined } });
    expect(piped.stdout).toBe(`1\tadmin@localhost\tAdministrator\tadmin\toff\t${CREATED}\n2\tcarol@example.com\tCarol\tcustomer\ton\t${CREATED}\n`);

    const coloured = await cli(['users', 'list'], { tty: true });
    expect(coloured.stdout).toMatch(/\x1b\[1mID/);
    const lines = coloured.stdout.replace(/\x1b\[[0-9;]*m/g, '').trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+EMAIL\s+NAME\s+ROLE\s+2FA\s+CREATED$/);
    expect(lines[1]).toMatch(/^1\s+admin@localhost\s+Administrator\s+admin\s+off\s+2025-05-01T12:00:00Z$/);
    expect(lines[2].indexOf('carol@example.com')).toBe(lines[0].indexOf('EMAIL'));
    for (const [args, env] of [[['users', 'list'], { NO_COLOR: '1' }], [['--no-color', 'users', 'list'], {}]] as const) {
      const plain = await cli([...args], { tty: true, env });
      expect(plain.stdout).not.toMatch(/\x1b\[/);
      expect(plain.stdout).toMatch(/^ID\s+EMAIL/);
    }

    const customer = new FakeApi().fail('GET', /^\/admin\/users/, 403, 'forbidden', 'admins only');
    const refused = await cli(['users', 'list'], { api: customer });
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain('admins only. Your account may not do this');
  });

  it('delete: {id}', async () => {
    api.on('DELETE', '/admin/users/2', { data: { id: 2 } });
    expect(JSON.parse((await cli(['--json', 'users', 'delete', '2'])).stdout)).toEqual({ id: 2 });
  });
});

describe('settings', () => {
  it('get: all as JSON or key: value lines; one as JSON or plain text', async () => {
    api.on('GET', '/admin/settings', { data: SETTINGS });
    expect(JSON.parse((await cli(['--json', 'settings', 'get'])).stdout)).toEqual(SETTINGS);
    expect((await cli(['settings', 'get'])).stdout).toContain('jwt_ttl_seconds: 86400\nrate_limit_mode: both\n');
    expect(JSON.parse((await cli(['--json', 'settings', 'get', 'login_max_attempts'])).stdout)).toBe(5);
    expect(await cli(['settings', 'get', 'rate_limit_mode'])).toMatchObject({ code: 0, stdout: 'both\n' });
  });

  it('set: the value parsed by its type in a partial PUT; the API refusing it is exit 1; an unknown key or bad value exit 2 before any request', async () => {
    api.on('PUT', '/admin/settings', (req) => ({ data: { ...SETTINGS, ...req.body } }));
    expect(JSON.parse((await cli(['--json', 'settings', 'set', 'jwt_ttl_seconds', '3600'])).stdout).jwt_ttl_seconds).toBe(3600);
    expect((await cli(['settings', 'set', 'webhook_allow_private_networks', 'true'])).stderr).toContain('webhook_allow_private_networks = true');
    await cli(['settings', 'set', 'rate_limit_mode', 'requests']);
    expect(api.sent('PUT', '/admin/settings').map((r) => r.body)).toEqual([{ jwt_ttl_seconds: 3600 }, { webhook_allow_private_networks: true }, { rate_limit_mode: 'requests' }]);

    const unknown = await cli(['settings', 'set', 'no_such_key', '1']);
    expect(unknown).toMatchObject({ code: 2, stderr: expect.stringContaining('jwt_ttl_seconds') });
    expect(await cli(['settings', 'set', 'jwt_ttl_seconds', 'soon'])).toMatchObject({ code: 2, stderr: expect.stringContaining('integer') });
    expect((await cli(['settings', 'set', 'rate_limit_mode', 'sometimes'])).code).toBe(2);
    expect((await cli(['settings', 'get', 'no_such_key'])).code).toBe(2);
    expect(api.requests).toHaveLength(3);

    api.fail('PUT', '/admin/settings', 400, 'validation', 'jwt_ttl_seconds: must be >= 60');
    expect(await cli(['settings', 'set', 'jwt_ttl_seconds', '1'])).toMatchObject({ code: 1, stderr: 'panelctl: jwt_ttl_seconds: must be >= 60\n' });
  });
});

describe('events', () => {
  it('types: the catalogue as JSON, or rows of name, fields and description', async () => {
    const types = [{ name: 'site.created', description: 'website created', fields: { site_id: 'integer', domain: 'string' } }];
    api.on('GET', '/events/types', { data: types });
    expect(JSON.parse((await cli(['--json', 'events', 'types'])).stdout)).toEqual(types);
    expect((await cli(['events', 'types'])).stdout).toBe('site.created\tsite_id:integer, domain:string\twebsite created\n');
  });

  it('emit: integer catalogue fields as numbers, the rest as strings, --owner as owner_id; API refusals exit 1; a bad pair or a repeated key exit 2', async () => {
    api.on('POST', '/admin/events', { data: { event_id: '0b0f4a64-6a0e-4f5e-9a39-3c3c1f6c2d11', deliveries: 1 } });
    const emitted = await cli(['events', 'emit', 'backup.completed', '--owner', '2', '--data', 'schedule_id=12', 'name=nightly']);
    expect(api.sent('POST', '/admin/events')[0].body).toEqual({ event: 'backup.completed', owner_id: 2, data: { schedule_id: 12, name: 'nightly' } });
    expect(emitted.stderr).toContain('Published backup.completed to 1 endpoint');
    await cli(['events', 'emit', 'site.created', '--data', 'site_id=seven', '--data', 'domain=example.com']);
    expect(api.sent('POST', '/admin/events')[1].body.data).toEqual({ site_id: 'seven', domain: 'example.com' });

    api.fail('POST', '/admin/events', 400, 'validation', 'data.site_id: must be integer');
    expect(await cli(['events', 'emit', 'site.created', '--data', 'site_id=seven'])).toMatchObject({ code: 1, stderr: 'panelctl: data.site_id: must be integer\n' });
    expect(await cli(['events', 'emit', 'site.created', '--data', 'site_id'])).toMatchObject({ code: 2, stderr: expect.stringContaining('key=value') });
    expect(await cli(['events', 'emit', 'site.created', '--data', 'site_id=1', 'site_id=2'])).toMatchObject({ code: 2, stderr: expect.stringContaining('given twice') });
    expect(api.requests).toHaveLength(3);
  });
});

describe('subscriptions and sites', () => {
  it('subscriptions: create (--default), list, suspend; suspending twice is exit 1', async () => {
    api.on('POST', '/admin/subscriptions', (req) => ({ data: { ...SUB, customer_id: req.body.customer_id, main_domain: req.body.main_domain, is_default: Boolean(req.body.is_default) } }));
    api.on('GET', /^\/subscriptions/, { data: [SUB] });
    api.on('POST', '/admin/subscriptions/3/suspend', { data: { ...SUB, status: 'suspended' } });
    await cli(['subscriptions', 'create', '--customer', '2', '--domain', 'carol.example', '--default']);
    const second = await cli(['subscriptions', 'create', '--customer', '2', '--domain', 'shop.example']);
    expect(api.sent('POST', '/admin/subscriptions').map((r) => r.body)).toEqual([
      { customer_id: 2, main_domain: 'carol.example', is_default: true },
      { customer_id: 2, main_domain: 'shop.example' },
    ]);
    expect(second.stdout).toContain('domain: shop.example\ncustomer: 2\ndefault: no\nstatus: active\n');
    expect((await cli(['subscriptions', 'list'])).stdout).toBe(`3\tcarol.example\t2\tyes\tactive\t${CREATED}\n`);
    expect((await cli(['subscriptions', 'suspend', '3'])).stderr).toContain('Suspended subscription 3 (carol.example)');
    api.fail('POST', '/admin/subscriptions/3/suspend', 409, 'conflict', 'subscription 3 is suspended already');
    expect((await cli(['subscriptions', 'suspend', '3'])).code).toBe(1);
    expect((await cli(['subscriptions', 'create', '--domain', 'x.example'])).code).toBe(2);
  });

  it('sites: create in a subscription, list (all, or one subscription’s), delete; an unknown one is exit 1', async () => {
    api.on('POST', '/sites', (req) => ({ data: { ...SITE, domain: req.body.domain, subscription_id: req.body.subscription_id } }));
    api.on('GET', /^\/sites/, { data: [SITE] });
    api.on('DELETE', '/sites/4', { data: { id: 4 } });
    api.fail('DELETE', '/sites/9999', 404, 'not found', 'site 9999 not found');
    expect(JSON.parse((await cli(['--json', 'sites', 'create', 'www.carol.example', '--subscription', '3'])).stdout)).toEqual(SITE);
    expect(api.sent('POST', '/sites')[0].body).toEqual({ domain: 'www.carol.example', subscription_id: 3 });
    expect((await cli(['sites', 'list'])).stdout).toBe(`4\twww.carol.example\t3\t${CREATED}\n`);
    await cli(['sites', 'list', '--subscription', '3', '--limit', '5']);
    expect(api.sent('GET', /^\/sites/).map((r) => r.path)).toEqual(['/sites', '/sites?subscription_id=3&limit=5']);
    expect(JSON.parse((await cli(['--json', 'sites', 'delete', '4'])).stdout)).toEqual({ id: 4 });
    expect(await cli(['sites', 'delete', '9999'])).toMatchObject({ code: 1, stderr: 'panelctl: site 9999 not found\n' });
  });

  it('sites create without --subscription, refused for it, names the flag', async () => {
    api.fail('POST', '/sites', 400, 'validation', 'subscription_id: required for admins');
    const result = await cli(['sites', 'create', 'shop.example']);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe('panelctl: --subscription ID: admins have no default subscription; name the one to create the site in (panelctl subscriptions list)');
  });
});

// Admin commands against a real daemon, end to end once per family, each with --json parsed and
// checked: users, settings, events types/emit, subscriptions and sites. The commands run in
// process against the daemon (the same argv, answers and exit codes, without a node start each);
// one command of each family runs as the built CLI. Their flags, human output (tables, colours,
// piped rows) and exit codes against a fake API: run-admin.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { cliSession, type CliSession } from './helpers.js';

describe('panelctl admin commands', () => {
  let daemon: TestDaemon;
  let cli: CliSession;
  let customerId: number;

  beforeAll(async () => {
    daemon = await startDaemon();
    cli = await cliSession(daemon, { inProcess: true });
    const login = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(login.code).toBe(0);
  });
  afterAll(async () => {
    await cli?.dispose();
    await daemon?.dispose();
  });

  it('users: create (password from stdin, or generated and shown once), list, delete', async () => {
    const created = await cli.built.json(['users', 'create', '--email', 'Carol@Example.com', '--name', 'Carol', '--role', 'customer', '--password-stdin'], {
      input: 'carol-password-1\n',
    });
    expect(created).toEqual({ id: expect.any(Number), email: 'carol@example.com', name: 'Carol', role: 'customer', two_factor_enabled: false, created_at: expect.any(String) });
    customerId = created.id;
    // The password works: carol can log in (and is a customer).
    const carol = await cliSession(daemon, { inProcess: true });
    try {
      const login = await carol.json(['login', '--email', 'carol@example.com', '--password-stdin'], { input: 'carol-password-1\n' });
      expect(login.user.role).toBe('customer');
      const forbidden = await carol.run(['users', 'list']);
      expect(forbidden.code).toBe(4);
    } finally {
      await carol.dispose();
    }

    const generated = await cli.run(['--json', 'users', 'create', '--email', 'dave@example.com', '--name', 'Dave', '--role', 'admin']);
    expect(generated.code).toBe(0);
    const dave = JSON.parse(generated.stdout);
    expect(dave).toMatchObject({ email: 'dave@example.com', role: 'admin', password: expect.stringMatching(/^\S{12,}$/) });
    expect(generated.stderr).toContain('shown only once');
    expect(await daemon.login('dave@example.com', dave.password)).toMatch(/^eyJ/);

    const duplicate = await cli.run(['users', 'create', '--email', 'dave@example.com', '--name', 'D', '--role', 'admin', '--password-stdin'], { input: 'another-pass-1\n' });
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain('already exists');

    const list = await cli.json<Array<{ email: string }>>(['users', 'list']);
    expect(list.map((u) => u.email)).toEqual([ADMIN_EMAIL, 'carol@example.com', 'dave@example.com']);
    expect(await cli.json(['users', 'delete', String(dave.id)])).toEqual({ id: dave.id });
    expect((await cli.json<unknown[]>(['users', 'list'])).length).toBe(2);
  });

  it('settings: get all, get one, set values parsed by their type', async () => {
    const all = await cli.json(['settings', 'get']);
    expect(all).toMatchObject({ jwt_ttl_seconds: 86400, rate_limit_mode: 'both', webhook_allow_private_networks: false });
    expect(await cli.json(['settings', 'get', 'login_max_attempts'])).toBe(5);
    const one = await cli.built.run(['settings', 'get', 'rate_limit_mode']);
    expect(one).toMatchObject({ code: 0, stdout: 'both\n' });

    expect((await cli.json(['settings', 'set', 'jwt_ttl_seconds', '3600'])).jwt_ttl_seconds).toBe(3600);
    expect((await cli.json(['settings', 'set', 'webhook_allow_private_networks', 'true'])).webhook_allow_private_networks).toBe(true);
    expect((await cli.json(['settings', 'set', 'rate_limit_mode', 'requests'])).rate_limit_mode).toBe('requests');
    const after = await daemon.request('GET', '/admin/settings', { token: await daemon.login() });
    expect(after.body.data).toMatchObject({ jwt_ttl_seconds: 3600, webhook_allow_private_networks: true, rate_limit_mode: 'requests' });

    const outOfRange = await cli.run(['settings', 'set', 'jwt_ttl_seconds', '1']);
    expect(outOfRange.code).toBe(1);
    expect(outOfRange.stderr).toContain('jwt_ttl_seconds');
    const badEnum = await cli.run(['settings', 'set', 'rate_limit_mode', 'sometimes']);
    expect(badEnum.code).toBe(2);
    await cli.json(['settings', 'set', 'rate_limit_mode', 'both']);
  });

  it('events: types lists the catalogue; emit sends integer fields as numbers', async () => {
    const types = await cli.json<Array<{ name: string; fields: Record<string, string> }>>(['events', 'types']);
    expect(types.find((t) => t.name === 'site.created')).toEqual({ name: 'site.created', description: 'website created', fields: { site_id: 'integer', domain: 'string' } });

    const emitted = await cli.built.json(['events', 'emit', 'backup.completed', '--owner', String(customerId), '--data', 'schedule_id=12', 'name=nightly']);
    expect(emitted).toEqual({ event_id: expect.stringMatching(/^[0-9a-f-]{36}$/), deliveries: 0 });

    const wrongType = await cli.run(['events', 'emit', 'site.created', '--data', 'site_id=seven', '--data', 'domain=example.com']);
    expect(wrongType.code).toBe(1);
    expect(wrongType.stderr).toContain('data.site_id');
    const unknown = await cli.run(['events', 'emit', 'site.exploded', '--data', 'x=1']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown event');
  });

  it('subscriptions and sites: create, list, suspend, delete', async () => {
    const sub = await cli.json(['subscriptions', 'create', '--customer', String(customerId), '--domain', 'carol.example', '--default']);
    expect(sub).toMatchObject({ id: expect.any(Number), customer_id: customerId, main_domain: 'carol.example', is_default: true, status: 'active' });
    const second = await cli.json(['subscriptions', 'create', '--customer', String(customerId), '--domain', 'shop.example']);
    expect(second.is_default).toBe(false);
    expect((await cli.json<Array<{ id: number }>>(['subscriptions', 'list'])).map((s) => s.id)).toEqual([sub.id, second.id]);

    const site = await cli.built.json(['sites', 'create', 'www.carol.example', '--subscription', String(sub.id)]);
    expect(site).toEqual({ id: expect.any(Number), subscription_id: sub.id, domain: 'www.carol.example', created_at: expect.any(String) });
    const other = await cli.json(['sites', 'create', 'blog.shop.example', '--subscription', String(second.id)]);
    expect((await cli.json<Array<{ domain: string }>>(['sites', 'list'])).map((s) => s.domain).sort()).toEqual(['blog.shop.example', 'www.carol.example']);
    expect((await cli.json<Array<{ domain: string }>>(['sites', 'list', '--subscription', String(second.id)])).map((s) => s.domain)).toEqual(['blog.shop.example']);
    expect(await cli.json(['sites', 'delete', String(other.id)])).toEqual({ id: other.id });

    const suspended = await cli.json(['subscriptions', 'suspend', String(second.id)]);
    expect(suspended).toMatchObject({ id: second.id, status: 'suspended' });
    const again = await cli.run(['subscriptions', 'suspend', String(second.id)]);
    expect(again.code).toBe(1);
    const missing = await cli.run(['sites', 'delete', '9999']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not found');
  });
});

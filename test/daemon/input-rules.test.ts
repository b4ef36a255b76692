// Inputs judged the same way everywhere, through the app in-process and the CLI: one email rule (single-
// label domains such as the default admin@localhost are addresses) on every route and in init;
// event identifiers that every JSON reader represents exactly; and messages a person can act on.
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isValidEmail } from '../../src/shared/email.js';
import { shorten } from '../../src/cli/ui/format.js';
import { runCli } from '../helpers/cli.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ADMIN_EMAIL, makeDataDir } from '../helpers/daemon.js';

describe('the email rule', () => {
  it.each([
    ['admin@localhost', true],
    ['x@localhost', true],
    ['jane.doe+tag@mail.example.com', true],
    ["o'brien@example.co.uk", true],
    ['a@b', true],
    [' Admin@LOCALHOST ', true],
    ['', false],
    ['admin', false],
    ['admin@', false],
    ['@localhost', false],
    ['a b@example.com', false],
    ['a@exa mple.com', false],
    ['a@-example.com', false],
    ['a@example..com', false],
    ['a@example.com.', false],
    ['.a@example.com', false],
    [`${'a'.repeat(65)}@example.com`, false],
    [`a@${'b'.repeat(250)}.com`, false],
  ])('%s → %s', (email, valid) => {
    expect(isValidEmail(email)).toBe(valid);
  });

  describe('on every route that takes one', () => {
    let api: TestApp;
    let admin: string;
    beforeAll(async () => {
      api = await buildTestApp();
      admin = await api.login();
    });
    afterAll(async () => {
      await api?.close();
    });

    it('forgot-password accepts admin@localhost (200), refuses a non-address with 422 naming the field', async () => {
      const ok = await api.request('POST', '/auth/forgot-password', { body: { email: ADMIN_EMAIL } });
      expect(ok.status, ok.text).toBe(200);
      const bad = await api.request('POST', '/auth/forgot-password', { body: { email: 'admin' } });
      expect(bad.status).toBe(422);
      expect(bad.body).toMatchObject({ data: null, error: 'validation failed', message: expect.stringMatching(/^email: must match format "email"/) });
    });

    it('admin users create accepts x@localhost, and that user logs in; a non-address is 422', async () => {
      const created = await api.request('POST', '/admin/users', { token: admin, body: { email: 'x@localhost', name: 'X', password: 'x-password-1', role: 'customer' } });
      expect(created.status, created.text).toBe(201);
      expect(created.body.data.email).toBe('x@localhost');
      expect(await api.login('x@localhost', 'x-password-1')).toMatch(/^eyJ/);
      const bad = await api.request('POST', '/admin/users', { token: admin, body: { email: 'x@', name: 'X', password: 'x-password-1', role: 'customer' } });
      expect(bad.status).toBe(422);
      expect(bad.body.message).toMatch(/^email: /);
    });

    it('login: an address logs in or is refused as credentials (401); a non-address is 422', async () => {
      expect((await api.request('POST', '/auth/login', { body: { email: 'nobody@localhost', password: 'whatever-1' } })).status).toBe(401);
      const bad = await api.request('POST', '/auth/login', { body: { email: 'not an address', password: 'whatever-1' } });
      expect(bad.status).toBe(422);
      expect(bad.body.message).toMatch(/^email: /);
    });
  });

  it('init takes a single-label address and refuses a non-address (exit 2, nothing created)', async () => {
    const good = await makeDataDir();
    const bad = await makeDataDir();
    try {
      // Two data directories: the accepted init and the refused one (then inited again) side by side.
      const [ok, [refused, again]] = await Promise.all([
        runCli(['init', '--data-dir', good, '--email', 'root@panel', '--password-stdin'], { input: 'root-password-1\n' }),
        runCli(['init', '--data-dir', bad, '--email', 'root', '--password-stdin'], { input: 'root-password-1\n' }).then(
          async (first) => [first, await runCli(['init', '--data-dir', bad, '--password-stdin'], { input: 'root-password-1\n' })] as const,
        ),
      ]);
      expect(ok.code, ok.stderr).toBe(0);
      expect(ok.stdout).toContain('Admin user: root@panel');
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain('"root" is not an email address');
      expect(again.code, 'the refused init left nothing behind').toBe(0);
    } finally {
      await rm(good, { recursive: true, force: true });
      await rm(bad, { recursive: true, force: true });
    }
  });
});

describe('event identifiers and ownership messages', () => {
  let api: TestApp;
  let admin: string;
  let customer: string;
  let customerId: number;
  beforeAll(async () => {
    api = await buildTestApp();
    admin = await api.login();
    const created = await api.request('POST', '/admin/users', { token: admin, body: { email: 'cust@example.com', name: 'C', password: 'cust-password-1', role: 'customer' } });
    customerId = created.body.data.id;
    customer = await api.login('cust@example.com', 'cust-password-1');
  });
  afterAll(async () => {
    await api?.close();
  });

  const publish = (raw: string) => api.request('POST', '/admin/events', { token: admin, rawBody: raw, headers: { 'content-type': 'application/json' } });

  it.each(['1e300', '9007199254740993', '9007199254740992', '0', '-1', '1.5'])('data.site_id %s → 422 naming the field', async (value) => {
    const response = await publish(`{"event":"site.created","data":{"site_id":${value},"domain":"a.example"}}`);
    expect(response.status, response.text).toBe(422);
    expect(response.body).toEqual({ data: null, error: 'validation failed', message: 'data.site_id: must be an integer from 1 to 9007199254740991' });
  });

  it.each(['1e300', '9007199254740993', '0', '-1'])('owner_id %s → 422 naming the field', async (value) => {
    const response = await publish(`{"event":"site.created","data":{"site_id":1,"domain":"a.example"},"owner_id":${value}}`);
    expect(response.status, response.text).toBe(422);
    expect(response.body.error).toBe('validation failed');
    expect(response.body.message).toMatch(/^owner_id: must be [<>]=/);
  });

  it('every identifier field of the catalogue has the same rule; the largest safe integer is accepted', async () => {
    const types = (await api.request('GET', '/events/types', { token: admin })).body.data as Array<{ name: string; fields: Record<string, string> }>;
    for (const type of types) {
      for (const [field, kind] of Object.entries(type.fields)) {
        if (kind !== 'integer') continue;
        const data = Object.fromEntries(Object.entries(type.fields).map(([f, k]) => [f, k === 'integer' ? 1 : 'x']));
        const raw = JSON.stringify({ event: type.name, data }).replace(`"${field}":1`, `"${field}":1e300`);
        const response = await publish(raw);
        expect(response.status, `${type.name} ${field}`).toBe(422);
        expect(response.body.message).toContain(`data.${field}:`);
      }
    }
    const max = await publish(`{"event":"site.created","data":{"site_id":9007199254740991,"domain":"a.example"},"owner_id":${customerId}}`);
    expect(max.status, max.text).toBe(200);
  });

  it("another user's webhook: an admin's is not called another customer's", async () => {
    const hook = await api.request('POST', '/webhooks', { token: admin, body: { url: 'https://hooks.example.com/in', secret: 'admin-secret-1', events: '*' } });
    expect(hook.status, hook.text).toBe(201);
    const response = await api.request('GET', `/webhooks/${hook.body.data.id}`, { token: customer });
    expect(response.status).toBe(403);
    expect(response.body.message).toBe(`webhook ${hook.body.data.id} belongs to another user`);
    expect(response.body.message).not.toContain('customer');
  });
});

describe('a failure reason in one line', () => {
  it('is cut at a word with an ellipsis, never mid-word without one', () => {
    const reason = 'upstream connect error or disconnect/reset before headers. reset reason: connection termination';
    const short = shorten(reason, 60);
    expect([...short].length).toBeLessThanOrEqual(60);
    expect(short.endsWith('…')).toBe(true);
    const kept = short.slice(0, -1);
    expect(reason.startsWith(kept)).toBe(true);
    // The cut falls between words (a trailing full stop goes with it).
    expect(reason.slice(kept.length)).toMatch(/^[.,;:!?-]*\s/);
    expect(shorten('short reason', 60)).toBe('short reason');
    expect(shorten('  spaced\n\n out\t text ', 60)).toBe('spaced out text');
    // One word longer than the room: cut inside it, with the ellipsis.
    expect(shorten('x'.repeat(100), 10)).toBe(`${'x'.repeat(9)}…`);
  });
});

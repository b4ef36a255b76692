// Custom headers and secret rotation through the API, the wire and the CLI: a real daemon (its
// log in a file, at debug level) posting to real HTTPS receivers. The dispatcher's side (every
// attempt during an overlap, the expiry, the Standard Webhooks list) is in rotation.test.ts.
import { verify } from '@octokit/webhooks-methods';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLoggedIn } from '../helpers/daemon.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { cliSession, type CliSession } from '../cli/helpers.js';
import { customer, endpoint, type World } from './fixtures.js';

const TOKEN = 'Bearer receiver-token-7f3a9c';

describe('custom headers and secret rotation, end to end', () => {
  let tls: ReceiverTls;
  let world: World;
  let logDir: string;
  let logFile: string;
  const receivers: Receiver[] = [];

  async function receiver(): Promise<Receiver> {
    const r = await startReceiver(tls);
    receivers.push(r);
    return r;
  }

  beforeAll(async () => {
    tls = await makeReceiverTls();
    logDir = await mkdtemp(join(tmpdir(), 'panelctl-options-log-'));
    logFile = join(logDir, 'daemon.log');
    world = await startLoggedIn({
      args: ['--allow-private-webhooks', '--log-file', logFile, '--log-level', 'debug'],
      env: { NODE_EXTRA_CA_CERTS: tls.caFile },
      settings: { rate_limit_mode: 'lockout' },
    });
  });
  afterAll(async () => {
    await world?.daemon.dispose();
    await Promise.all(receivers.map((r) => r.close()));
    await tls?.dispose();
    if (logDir) await rm(logDir, { recursive: true, force: true });
  });

  it('sends custom headers with deliveries and tests; masks them in every answer; keeps them out of the log file', async () => {
    const { id: ownerId, token } = await customer(world);
    const hook = await receiver();
    const created = await world.daemon.request('POST', '/webhooks', {
      token,
      body: { url: hook.url, secret: 'header-test-secret', events: '*', headers: { Authorization: TOKEN, 'X-Tenant': 'acme-42' } },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id;
    expect(created.body.data.headers).toEqual({ Authorization: '********', 'X-Tenant': '********' });

    const published = await world.daemon.request('POST', '/admin/events', { token: world.admin, body: { event: 'site.created', data: { site_id: 1, domain: 'example.org' }, owner_id: ownerId } });
    expect(published.status, published.text).toBe(200);
    const [delivered] = await hook.waitFor(1);
    expect(delivered.headers.authorization).toBe(TOKEN);
    expect(delivered.headers['x-tenant']).toBe('acme-42');
    expect(await verify('header-test-secret', delivered.body, delivered.headers['x-webhook-signature'] as string)).toBe(true);

    const test = await world.daemon.request('POST', `/webhooks/${id}/test`, { token });
    expect(test.status, test.text).toBe(200);
    expect(test.body.data.request_headers).toMatchObject({ Authorization: '********', 'X-Tenant': '********' });
    const [, tested] = await hook.waitFor(2);
    expect(tested.headers.authorization).toBe(TOKEN);

    // Update: one header replaced (any case), one removed, one added; the others stay.
    const updated = await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { headers: { 'x-tenant': null, 'X-Region': 'eu' } } });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data.headers).toEqual({ Authorization: '********', 'X-Region': '********' });
    const redeliver = await world.daemon.request('POST', `/webhooks/${id}/deliveries/${test.body.data.id}/redeliver`, { token });
    expect(redeliver.status, redeliver.text).toBe(200);
    const [, , redelivered] = await hook.waitFor(3);
    expect(redelivered.headers).toMatchObject({ authorization: TOKEN, 'x-region': 'eu' });
    expect(redelivered.headers).not.toHaveProperty('x-tenant');

    const answers = [
      await world.daemon.request('GET', `/webhooks/${id}`, { token }),
      await world.daemon.request('GET', '/webhooks', { token }),
      await world.daemon.request('GET', `/webhooks/${id}/deliveries`, { token }),
    ];
    for (const answer of answers) {
      expect(answer.status, answer.text).toBe(200);
      expect(answer.text).not.toContain('receiver-token-7f3a9c');
      expect(answer.text).toContain('********');
    }
    const log = await readFile(logFile, 'utf8');
    expect(log).toContain(`/webhooks/${id}`); // the requests were logged, at debug level
    expect(log).not.toContain('receiver-token-7f3a9c');
    expect(log).not.toContain('acme-42');

    // Removing them all: the endpoint answers as one that never had any.
    const cleared = await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { headers: null } });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.data).not.toHaveProperty('headers');
  });

  it('refuses reserved names, CR/LF in a value and more than 10 headers with 422', async () => {
    const { token } = await customer(world);
    const id = await endpoint(world, token, { url: 'https://127.0.0.1:9/hook' });
    const refused: Array<Record<string, unknown>> = [
      { 'Content-Type': 'text/plain' },
      { host: 'evil.example' },
      { 'User-Agent': 'x' },
      { 'X-Webhook-Signature': 'sha256=0' },
      { 'webhook-id': 'msg_1' },
      { 'Transfer-Encoding': 'chunked' },
      { 'X-Ok': 'one\r\nX-Injected: two' },
      { 'X-Ok': 'line\nbreak' },
      { 'Bad Name': 'x' },
      Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, 'v'])),
    ];
    for (const headers of refused) {
      const create = await world.daemon.request('POST', '/webhooks', { token, body: { url: 'https://127.0.0.1:9/hook', secret: 's', events: '*', headers } });
      expect(create.status, `create ${JSON.stringify(headers)}: ${create.text}`).toBe(422);
      expect(create.body.error).toBe('validation failed');
      const update = await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { headers } });
      expect(update.status, `update ${JSON.stringify(headers)}: ${update.text}`).toBe(422);
    }
    // Ten set one at a time, then an eleventh: 422, the ten kept.
    for (let i = 0; i < 10; i++) {
      expect((await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { headers: { [`X-H${i}`]: 'v' } } })).status).toBe(200);
    }
    expect((await world.daemon.request('PUT', `/webhooks/${id}`, { token, body: { headers: { 'X-H10': 'v' } } })).status).toBe(422);
    expect(Object.keys((await world.daemon.request('GET', `/webhooks/${id}`, { token })).body.data.headers)).toHaveLength(10);
  });

  it('rotates a secret with an overlap: receivers with either secret accept the test delivery', async () => {
    const { token } = await customer(world);
    const hook = await receiver();
    const id = await endpoint(world, token, { url: hook.url, secret: 'secret-before' });

    const other = await customer(world);
    expect((await world.daemon.request('POST', `/webhooks/${id}/rotate-secret`, { token: other.token, body: {} })).status).toBe(403);
    expect((await world.daemon.request('POST', `/webhooks/${id}/rotate-secret`, { token, body: { overlap_seconds: 604_801 } })).status).toBe(422);
    expect((await world.daemon.request('POST', `/webhooks/${id}/rotate-secret`, { token, body: { overlap_seconds: -1 } })).status).toBe(422);

    const before = Date.now();
    const rotated = await world.daemon.request('POST', `/webhooks/${id}/rotate-secret`, { token, body: { secret: 'secret-after', overlap_seconds: 3600 } });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.data).toEqual({ previous_secret_expires_at: expect.stringMatching(/Z$/) });
    const expiresAt = Date.parse(rotated.body.data.previous_secret_expires_at);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3_600_000 - 1000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3_600_000 + 1000);
    const shown = await world.daemon.request('GET', `/webhooks/${id}`, { token });
    expect(shown.body.data.previous_secret_expires_at).toBe(rotated.body.data.previous_secret_expires_at);
    expect(shown.text).not.toContain('secret-before');

    expect((await world.daemon.request('POST', `/webhooks/${id}/test`, { token })).status).toBe(200);
    const [request] = await hook.waitFor(1);
    expect(await verify('secret-after', request.body, request.headers['x-webhook-signature'] as string)).toBe(true);
    expect(await verify('secret-before', request.body, request.headers['x-webhook-signature-previous'] as string)).toBe(true);

    // Generated, without an overlap: the secret is answered once and the old one stops at once.
    const generated = await world.daemon.request('POST', `/webhooks/${id}/rotate-secret`, { token, body: { overlap_seconds: 0 } });
    expect(generated.status, generated.text).toBe(200);
    expect(generated.body.data).toEqual({ secret: expect.stringMatching(/^[0-9a-f]{64}$/), previous_secret_expires_at: null });
    expect((await world.daemon.request('GET', `/webhooks/${id}`, { token })).body.data).not.toHaveProperty('previous_secret_expires_at');
    expect((await world.daemon.request('POST', `/webhooks/${id}/test`, { token })).status).toBe(200);
    const [, second] = await hook.waitFor(2);
    expect(second.headers).not.toHaveProperty('x-webhook-signature-previous');
    expect(await verify(generated.body.data.secret, second.body, second.headers['x-webhook-signature'] as string)).toBe(true);

    // A standard-webhooks endpoint gets a whsec_ secret generated; a given one must be one.
    const std = await world.daemon.request('POST', '/webhooks', {
      token,
      body: { url: hook.url, secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}`, events: '*', signature: 'standard-webhooks' },
    });
    const stdRotated = await world.daemon.request('POST', `/webhooks/${std.body.data.id}/rotate-secret`, { token });
    expect(stdRotated.status, stdRotated.text).toBe(200);
    expect(stdRotated.body.data.secret).toMatch(/^whsec_/);
    expect((await world.daemon.request('POST', `/webhooks/${std.body.data.id}/rotate-secret`, { token, body: { secret: 'plain' } })).status).toBe(422);
  });

  describe('the CLI', () => {
    let cli: CliSession;
    beforeAll(async () => {
      cli = await cliSession(world.daemon);
      const { token } = await customer(world);
      cli.env.PANELCTL_TOKEN = token;
    });
    afterAll(async () => cli?.dispose());

    it('create --header, update --header Name:, view with masked values, rotate-secret --overlap', async () => {
      const hook = await receiver();
      const created = await cli.json(['webhooks', 'create', '--url', hook.url, '--events', '*', '--secret-stdin', '--header', `Authorization: ${TOKEN}`, '--header', 'X-Tenant: acme'], {
        input: 'cli-secret\n',
      });
      expect(created.headers).toEqual({ Authorization: '********', 'X-Tenant': '********' });
      const id = String(created.id);

      const view = await cli.run(['webhooks', 'show', id]);
      expect(view.code, view.stderr).toBe(0);
      expect(view.stdout).toContain('Authorization: ********');
      expect(view.stdout).not.toContain('receiver-token');

      const updated = await cli.json(['webhooks', 'update', id, '--header', 'X-Tenant:']);
      expect(updated.headers).toEqual({ Authorization: '********' });
      expect((await cli.run(['webhooks', 'update', id, '--header', 'Host: x'])).code).not.toBe(0);

      const rotated = await cli.json(['webhooks', 'rotate-secret', id, '--overlap', '2h']);
      expect(rotated.secret).toMatch(/^[0-9a-f]{64}$/);
      expect(Date.parse(rotated.previous_secret_expires_at) - Date.now()).toBeGreaterThan(7_200_000 - 60_000);
      const shown = await cli.run(['webhooks', 'show', id]);
      expect(shown.stdout).toMatch(/previous secret:?\s+signs too until/);

      const given = await cli.json(['webhooks', 'rotate-secret', id, '--secret-stdin', '--overlap', '0'], { input: 'cli-secret-3\n' });
      expect(given).toEqual({ previous_secret_expires_at: null });
      expect((await cli.run(['webhooks', 'rotate-secret', id, '--overlap', '8d'])).code).not.toBe(0);

      const test = await cli.run(['webhooks', 'test', id]);
      expect(test.code, test.stderr).toBe(0);
      const [request] = await hook.waitFor(1);
      expect(request.headers.authorization).toBe(TOKEN);
      expect(await verify('cli-secret-3', request.body, request.headers['x-webhook-signature'] as string)).toBe(true);
    });
  });
});

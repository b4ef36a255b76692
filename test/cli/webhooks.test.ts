// Webhook commands against a real daemon delivering to a real HTTPS receiver on loopback, end to
// end once: create (generated secret), show, test (signed; with the real retry), redeliver,
// --follow (JSON lines, and plain text until Ctrl-C), secret rotation, delete. The commands run
// in process against the daemon; create and the two --follow runs (ended by SIGINT) run as the
// built CLI. Flags, output and exit codes of every webhooks command: run-webhooks.test.ts.
import { createHmac } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ADMIN_EMAIL, ADMIN_PASSWORD, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { cliSession, spawnCli, type CliSession } from './helpers.js';

function signatureOk(received: { headers: Record<string, unknown>; body: string }, secret: string): boolean {
  const expected = `sha256=${createHmac('sha256', secret).update(received.body).digest('hex')}`;
  return received.headers['x-webhook-signature'] === expected;
}

describe('panelctl webhooks', () => {
  let dir: string;
  let tls: ReceiverTls;
  let receiver: Receiver;
  let daemon: TestDaemon;
  let cli: CliSession;
  let id: number;
  let secret: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-cli-hooks-'));
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls);
    daemon = await startDaemon({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: tls.caFile } });
    cli = await cliSession(daemon, { inProcess: true });
    const login = await cli.run(['login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(login.code).toBe(0);
  });
  afterAll(async () => {
    await cli?.dispose();
    await daemon?.dispose();
    await receiver?.close();
    await tls?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates an endpoint with a generated secret, shown once in the JSON', async () => {
    const result = await cli.built.run(['--json', 'webhooks', 'create', '--url', receiver.url, '--events', 'site.created, webhook.test', '--generate-secret']);
    expect(result.code).toBe(0);
    const created = JSON.parse(result.stdout);
    expect(created).toMatchObject({ id: expect.any(Number), url: receiver.url, events: 'site.created,webhook.test', active: true, secret: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(result.stderr).toContain('shown only once');
    id = created.id;
    secret = created.secret;
    const shown = await cli.json(['webhooks', 'show', String(id)]);
    expect(shown).toMatchObject({ id, url: receiver.url, events: 'site.created,webhook.test', active: true });
    expect(shown).not.toHaveProperty('secret');
  });

  it('tests the endpoint: a signed webhook.test reaches the receiver, exit 0', async () => {
    receiver.respondWith(200);
    const before = receiver.requests.length;
    const entry = await cli.json(['webhooks', 'test', String(id), '--message', 'hello from the CLI test']);
    expect(entry).toMatchObject({ endpoint_id: id, event: 'webhook.test', success: true, status_code: 200, attempt: 1 });
    const got = receiver.requests[before];
    expect(got.headers['x-webhook-event']).toBe('webhook.test');
    expect(JSON.parse(got.body).data).toEqual({ message: 'hello from the CLI test' });
    expect(signatureOk(got, secret)).toBe(true);
  });

  it('waits for the retry when the first attempt fails, and exits 1 when the delivery failed', async () => {
    receiver.respondWith(500, 200);
    const recovered = await cli.run(['webhooks', 'test', String(id)]);
    expect(recovered.code).toBe(0);
    const lines = recovered.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/✗\tHTTP 500 \(nope\)\twebhook\.test\t.*attempt 1/);
    expect(lines[1]).toMatch(/✓\tHTTP 200\twebhook\.test\t.*attempt 2/);
    expect(recovered.stderr).toContain('delivered (HTTP 200, attempt 2)');
    expect(recovered.stderr).not.toContain('waiting for the retry'); // no spinner when not on a terminal

    receiver.respondWith(503);
    const failed = await cli.run(['--json', 'webhooks', 'test', String(id)]);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ success: false, status_code: 503, attempt: 2 });
    expect(failed.stderr).toContain('test delivery failed: HTTP 503 on attempt 2');
    receiver.respondWith(200);
  });

  it('redelivers a logged entry as a new delivery with the same payload', async () => {
    const [latest] = await cli.json<Array<{ id: number; delivery_id: string; payload: unknown }>>(['webhooks', 'deliveries', String(id), '--limit', '1']);
    const again = await cli.json(['webhooks', 'redeliver', String(id), String(latest.id)]);
    expect(again).toMatchObject({ endpoint_id: id, success: true, attempt: 1, payload: latest.payload });
    expect(again.delivery_id).not.toBe(latest.delivery_id);
    const missing = await cli.run(['webhooks', 'redeliver', String(id), '99999']);
    expect(missing.code).toBe(1);
  });

  it('follows as JSON lines: the last --limit entries first, then new ones', async () => {
    const [newest, older] = await cli.json<Array<{ id: number }>>(['webhooks', 'deliveries', String(id), '--limit', '2']);
    const follow = spawnCli(['--data-dir', daemon.dataDir, '--url', daemon.url, '--json', 'webhooks', 'deliveries', String(id), '--follow', '--limit', '2'], cli.env);
    await follow.waitForStderr(/following deliveries of webhook/);
    const emit = (siteId: number) => cli.json(['events', 'emit', 'site.created', '--data', `site_id=${siteId}`, 'domain=follow.example']);
    expect((await emit(41)).deliveries).toBe(1);
    expect((await emit(42)).deliveries).toBe(1);
    await vi.waitFor(() => expect(follow.stdout().trim().split('\n').length).toBeGreaterThanOrEqual(4), { timeout: 30_000, interval: 50 });
    follow.kill('SIGINT');
    const { code, stdout } = await follow.done;
    expect(code).toBe(0);
    const lines = stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(lines.slice(0, 2).map((e) => e.id)).toEqual([older.id, newest.id]);
    expect(lines.slice(2).map((e) => [e.event, e.payload.data.site_id, e.endpoint_id])).toEqual([
      ['site.created', 41, id],
      ['site.created', 42, id],
    ]);
  });

  it('follows in plain text until interrupted (Ctrl-C exits 0)', async () => {
    const follow = spawnCli(['--data-dir', daemon.dataDir, '--url', daemon.url, 'webhooks', 'deliveries', String(id), '-f'], cli.env);
    await follow.waitForStderr(/following deliveries/);
    await cli.json(['events', 'emit', 'site.created', '--data', 'site_id=43', 'domain=tail.example']);
    await vi.waitFor(() => expect(follow.stdout()).toContain('site.created'), { timeout: 30_000, interval: 50 });
    follow.kill('SIGINT');
    const { code, stdout } = await follow.done;
    expect(code).toBe(0);
    expect(stdout).toMatch(/✓\tHTTP 200\tsite\.created\twebhook \d+\tentry \d+\tattempt 1/);
  });

  it('rotates the secret with --generate-secret; later deliveries are signed with the new one', async () => {
    const result = await cli.run(['--json', 'webhooks', 'update', String(id), '--generate-secret', '--events', '*']);
    expect(result.code).toBe(0);
    const updated = JSON.parse(result.stdout);
    expect(updated).toMatchObject({ id, events: '*', secret: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(updated.secret).not.toBe(secret);
    const before = receiver.requests.length;
    await cli.json(['webhooks', 'test', String(id)]);
    const got = await vi.waitFor(() => receiver.requests[before] ?? Promise.reject(new Error('no request yet')), { timeout: 30_000, interval: 50 });
    expect(signatureOk(got, updated.secret)).toBe(true);
    expect(signatureOk(got, secret)).toBe(false);
  });

  it('deletes the endpoint', async () => {
    expect(await cli.json(['webhooks', 'delete', String(id)])).toEqual({ id });
    expect(await cli.json(['webhooks', 'list'])).toEqual([]);
  });
});

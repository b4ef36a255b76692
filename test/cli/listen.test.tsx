// `panelctl listen --forward-to`: the built CLI against a real daemon started WITHOUT any
// private-network allowance, forwarding to a plain-HTTP receiver on loopback. The receiver gets
// the event signed with the secret listen printed, the CLI prints a line with the status, and
// the attempt is logged like any delivery: on the delivery stream and in `watch` (rendered with
// ink-testing-library from watch's own data source against the same daemon). listen runs as the
// built CLI (Ctrl-C ends it); the other commands run in process against the daemon.
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import React from 'react';
import { cleanup, render } from 'ink-testing-library';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/cli/api-client.js';
import { followDeliveries } from '../../src/cli/stream/deliveries.js';
import { apiWatchSource } from '../../src/cli/ui/source.js';
import { initialState, WatchStore } from '../../src/cli/ui/state.js';
import { WatchView } from '../../src/cli/ui/view.js';
import type { DeliveryEntry } from '../../src/shared/api/webhooks.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { cliSession, spawnCli, type CliSession } from './helpers.js';

interface Got {
  headers: IncomingHttpHeaders;
  body: string;
}

describe('panelctl listen', () => {
  let daemon: TestDaemon;
  let cli: CliSession;
  let server: Server;
  let port: number;
  const got: Got[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        got.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(202, { 'content-type': 'text/plain' }).end('accepted');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    // No --allow-private-webhooks, no NODE_EXTRA_CA_CERTS: the daemon never connects to the receiver.
    daemon = await startDaemon();
    cli = await cliSession(daemon, { inProcess: true });
    await cli.json(['login', '--email', 'admin@localhost', '--password-stdin'], { input: 'admin-password-1\n' });
  });
  afterEach(() => cleanup());
  afterAll(async () => {
    await cli?.dispose();
    await daemon?.dispose();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('forwards a site.created event to a plain-HTTP loopback receiver, signed with the printed secret, and logs the attempt', async () => {
    const settings = await cli.json(['settings', 'get']);
    expect(settings.webhook_allow_private_networks).toBe(false);
    const token = await daemon.login();
    const client = new ApiClient({ baseUrl: daemon.url, token, caFile: join(daemon.dataDir, 'tls', 'cert.pem') });

    // The watch view and a plain stream follower, both on the daemon's delivery stream.
    const controller = new AbortController();
    const streamed: DeliveryEntry[] = [];
    let connected!: () => void;
    const ready = new Promise<void>((resolve) => (connected = resolve));
    const following = followDeliveries(client, { signal: controller.signal }, {
      onEntry: (entry) => streamed.push(entry),
      onStatus: (state) => state === 'connected' && connected(),
    });
    await ready;
    // watch's data source feeding its state store, as `panelctl watch` runs it.
    const store = new WatchStore(initialState({ baseUrl: daemon.url }));
    const stopWatch = apiWatchSource(client).start(store.dispatch);

    const listen = spawnCli(['--data-dir', daemon.dataDir, '--url', daemon.url, 'listen', '--events', 'site.created', '--forward-to', `http://127.0.0.1:${port}/hook`], cli.env);
    try {
      await listen.waitForStderr(/Signing secret of this session \(X-Webhook-Signature\): [0-9a-f]{64}/);
      const sessions = (await cli.json<Array<{ url: string }>>(['webhooks', 'list'])).filter((w) => w.url.startsWith('listen:'));
      expect(sessions).toHaveLength(1);
      const emitted = await cli.json(['events', 'emit', 'site.created', '--data', 'site_id=5', 'domain=listen.example']);
      expect(emitted.deliveries).toBeGreaterThanOrEqual(1);

      const request = await vi.waitFor(() => {
        const found = got[0];
        expect(found, 'the forwarded request').toBeDefined();
        return found!;
      }, { timeout: 20_000, interval: 50 });
      expect(JSON.parse(request.body)).toMatchObject({ event: 'site.created', data: { site_id: 5, domain: 'listen.example' } });
      expect(request.headers['x-webhook-event']).toBe('site.created');
      expect(request.headers['user-agent']).toBe('Panel-WebPanel-Webhook/1.0');

      // The CLI line, in the row format of `webhooks test` and `deliveries --follow`: time,
      // outcome, status, event, where it went, duration, delivery.
      const line = await vi.waitFor(() => {
        const found = listen.stdout().split('\n').find((l) => l.includes('site.created'));
        expect(found, 'the CLI line').toBeDefined();
        return found!;
      }, { timeout: 20_000, interval: 50 });
      expect(line).toMatch(/✓\tHTTP 202\tsite\.created\twebhook \d+\t\d+ ms\t[0-9a-f-]{36}/);
      const deliveryId = line.split('\t').pop()!;
      expect(request.headers['x-webhook-delivery']).toBe(deliveryId);

      // On the delivery stream like any attempt, with the receiver's status.
      const entry = await vi.waitFor(() => {
        const found = streamed.find((e) => e.delivery_id === deliveryId);
        expect(found, 'the streamed entry').toBeDefined();
        return found!;
      }, { timeout: 20_000, interval: 50 });
      expect(entry).toMatchObject({ event: 'site.created', success: true, status_code: 202, response: 'accepted', attempt: 1, reason: null });
      // And in watch: its state gets the entry, and the view renders it as a row.
      await vi.waitFor(() => {
        const found = store.getState().entries.find((e) => e.delivery_id === deliveryId);
        expect(found, 'the watch entry').toBeDefined();
        return found!;
      }, { timeout: 20_000, interval: 50 });
      const view = render(<WatchView state={store.getState()} now={Date.now()} columns={120} rows={20} color={false} />);
      expect(view.lastFrame()).toMatch(/site\.created\s+1\/2\s+202\s+\S+\s+✓ ok/);
    } finally {
      listen.kill('SIGINT');
      stopWatch();
      controller.abort();
      await following;
      await client.close();
    }
    // Ctrl-C ends listen cleanly; the signature verifies with the secret it printed.
    const done = await listen.done;
    expect(done.code).toBe(0);
    const secret = /Signing secret of this session \(X-Webhook-Signature\): ([0-9a-f]{64})/.exec(done.stderr)?.[1];
    expect(secret).toBeDefined();
    expect(got[0].headers['x-webhook-signature']).toBe(`sha256=${createHmac('sha256', secret!).update(got[0].body).digest('hex')}`);
    // The session's endpoint is gone once listen ends.
    await vi.waitFor(
      async () => expect((await cli.json<Array<{ url: string }>>(['webhooks', 'list'])).filter((w) => w.url.startsWith('listen:'))).toEqual([]),
      { timeout: 10_000, interval: 100 },
    );
  });

  // The CLI's side of revocation: a listen whose API key is deleted while it runs stops at once,
  // says why, and exits 4 (authentication refused), not "the daemon stopped".
  it('exits 4 naming the reason when its API key is deleted', async () => {
    const admin = await daemon.login();
    const created = await daemon.request('POST', '/auth/api-keys', { token: admin, body: { name: 'listen key' } });
    expect(created.status, created.text).toBe(201);
    const listen = spawnCli(['--data-dir', daemon.dataDir, '--url', daemon.url, '--token', created.body.data.key, 'listen'], cli.env);
    await listen.waitForStderr(/Ready:/);
    const removed = await daemon.request('DELETE', `/auth/api-keys/${created.body.data.id}`, { token: admin });
    expect(removed.status, removed.text).toBe(200);
    const { code, stderr } = await listen.done;
    expect(code, stderr).toBe(4);
    expect(stderr).toContain('the daemon ended the listen session: authentication required');
  });
});

// The live delivery stream (Server-Sent Events) on the wire and through the CLI's own stream
// engine: new entries arrive, scoped to the caller (admins: all), narrowed by endpoint_id. The
// app in-process, listening on loopback (plain HTTP) so the stream is read as it arrives.
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/cli/api-client.js';
import { followDeliveries } from '../../src/cli/stream/deliveries.js';
import type { DeliveryLogEntry } from '../../src/store/types.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, endpoint, publish, SITE, startAppWorld, waitForEntries, type AppWorld } from './fixtures.js';

/** Follows the stream with the CLI engine, collecting entries until stopped. */
function follow(token: string, endpointId?: number) {
  const client = new ApiClient({ baseUrl, token });
  const controller = new AbortController();
  const received: DeliveryLogEntry[] = [];
  const states: string[] = [];
  let connected!: () => void;
  const ready = new Promise<void>((resolve) => (connected = resolve));
  const done = followDeliveries(client, { endpointId, signal: controller.signal }, {
    onEntry: (entry) => received.push(entry),
    onStatus: (state) => {
      states.push(state);
      if (state === 'connected') connected();
    },
  });
  return {
    received,
    states,
    ready,
    async until(count: number, timeoutMs = 30_000) {
      await vi.waitFor(
        () => {
          if (received.length < count) throw new Error(`stream got ${received.length} of ${count} entries`);
        },
        { timeout: timeoutMs, interval: 50 },
      );
      return received;
    },
    async stop() {
      controller.abort();
      await done;
      await client.close();
    },
  };
}

/** The URL the app listens on. */
let baseUrl: string;

describe('the delivery stream', () => {
  let tls: ReceiverTls;
  let world: AppWorld;
  let hook: Receiver;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    [world, hook] = await Promise.all([startAppWorld(tls), startReceiver(tls)]);
    baseUrl = await world.app.listen();
  });
  afterAll(async () => {
    await world?.app.close();
    await hook?.close();
    await tls?.dispose();
  });

  it('speaks the SSE wire format: event delivery, the entry id, the entry JSON', async () => {
    const { id: ownerId, token } = await customer(world);
    const id = await endpoint(world, token, { url: hook.url, events: 'site.created' });
    const controller = new AbortController();
    const response = await request(`${baseUrl}/api/v1/webhooks/deliveries/stream`, {
      headers: { authorization: `Bearer ${token}` },
      signal: controller.signal,
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/event-stream/);
    response.body.setEncoding('utf8');
    let text = '';
    const frame = (async () => {
      for await (const chunk of response.body) {
        text += chunk;
        const match = /event: delivery\nid: (\d+)\ndata: (.*)\n\n/.exec(text);
        if (match) return match;
      }
      throw new Error(`stream ended: ${text}`);
    })();
    await publish(world, 'site.created', SITE, ownerId);
    const [, entryId, data] = await frame;
    const entry = JSON.parse(data);
    expect(entry.id).toBe(Number(entryId));
    const [logged] = await waitForEntries(world, token, id, 1);
    expect(entry).toEqual(logged);
    expect(entry.request_headers['X-Webhook-Event']).toBe('site.created');
    expect(text.startsWith(': connected\n\n')).toBe(true);
    controller.abort();
  });

  it("gives each customer their own entries, an admin everyone's, and narrows by endpoint_id", async () => {
    const a = await customer(world);
    const b = await customer(world);
    const a1 = await endpoint(world, a.token, { url: hook.url, events: 'domain.created' });
    const a2 = await endpoint(world, a.token, { url: hook.url, events: 'domain.created' });
    const b1 = await endpoint(world, b.token, { url: hook.url, events: 'domain.created' });
    const streamA = follow(a.token);
    const streamA2 = follow(a.token, a2);
    const streamB = follow(b.token);
    const streamAdmin = follow(world.admin);
    await Promise.all([streamA.ready, streamA2.ready, streamB.ready, streamAdmin.ready]);

    await publish(world, 'domain.created', { domain_id: 1, name: 'a.test' }, a.id);
    await publish(world, 'domain.created', { domain_id: 2, name: 'b.test' }, b.id);
    await streamA.until(2);
    await streamB.until(1);
    await streamA2.until(1);
    const adminSees = () => streamAdmin.received.filter((e) => [a1, a2, b1].includes(e.endpoint_id));
    await vi.waitFor(() => expect(adminSees().length).toBeGreaterThanOrEqual(3), { timeout: 30_000, interval: 50 });
    const adminSeen = adminSees();

    // Markers, one per customer, sent after the first entries were streamed: once they are in,
    // anything leaked from the other customer's events would have come before them.
    await publish(world, 'domain.created', { domain_id: 3, name: 'marker-a.test' }, a.id);
    await publish(world, 'domain.created', { domain_id: 4, name: 'marker-b.test' }, b.id);
    await streamA.until(4);
    await streamA2.until(2);
    await streamB.until(2);
    const names = (stream: { received: Array<{ endpoint_id: number; payload: unknown }> }) =>
      stream.received.map((e) => `${e.endpoint_id} ${(e.payload as { data: { name: string } }).data.name}`).sort();
    expect(names(streamA)).toEqual([`${a1} a.test`, `${a1} marker-a.test`, `${a2} a.test`, `${a2} marker-a.test`].sort());
    expect(names(streamB)).toEqual([`${b1} b.test`, `${b1} marker-b.test`]);
    expect(names(streamA2)).toEqual([`${a2} a.test`, `${a2} marker-a.test`]);
    expect(adminSeen.map((e) => e.endpoint_id).sort()).toEqual([a1, a2, b1].sort());
    await Promise.all([streamA.stop(), streamA2.stop(), streamB.stop(), streamAdmin.stop()]);
  });

  it('replays the entries missed since Last-Event-ID on reconnect', async () => {
    const { id: ownerId, token } = await customer(world);
    const id = await endpoint(world, token, { url: hook.url, events: 'ftp.created' });
    await publish(world, 'ftp.created', { ftp_account_id: 1, username: 'one' }, ownerId);
    await publish(world, 'ftp.created', { ftp_account_id: 2, username: 'two' }, ownerId);
    const [newest, oldest] = await waitForEntries(world, token, id, 2);
    const controller = new AbortController();
    const response = await request(`${baseUrl}/api/v1/webhooks/deliveries/stream?endpoint_id=${id}`, {
      headers: { authorization: `Bearer ${token}`, 'last-event-id': String(oldest.id) },
      signal: controller.signal,
    });
    response.body.setEncoding('utf8');
    let text = '';
    for await (const chunk of response.body) {
      text += chunk;
      if (text.includes(`id: ${newest.id}\n`)) break;
    }
    expect(text).not.toContain(`id: ${oldest.id}\n`);
    expect(text).toContain(`id: ${newest.id}\n`);
    controller.abort();
  });

  it('answers errors with the envelope before streaming: 401, 404, 400', async () => {
    const { token } = await customer(world);
    expect((await world.daemon.request('GET', '/webhooks/deliveries/stream')).status).toBe(401);
    const unknown = await world.daemon.request('GET', '/webhooks/deliveries/stream?endpoint_id=999999', { token });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ data: null, error: 'not found' });
    expect((await world.daemon.request('GET', '/webhooks/deliveries/stream?endpoint_id=x', { token })).status).toBe(400);
  });
});

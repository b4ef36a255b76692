// Deliveries as a receiver sees them: a real daemon posting to real HTTPS receivers on loopback
// (trusted through NODE_EXTRA_CA_CERTS), with the signature checked by an independent verifier.
// Retries, caps, fairness and matching are checked in-process in scheduling.test.ts.
import { verify } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { SITE, customer, endpoint, entries, publish, startWorld, waitForEntries, type World } from './fixtures.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.concurrent('webhook delivery', () => {
  let tls: ReceiverTls;
  let world: World;
  const receivers: Receiver[] = [];

  async function receiver(...args: Parameters<typeof startReceiver> extends [unknown, ...infer R] ? R : never) {
    const r = await startReceiver(tls, ...args);
    receivers.push(r);
    return r;
  }

  beforeAll(async () => {
    tls = await makeReceiverTls();
    world = await startWorld(tls);
  });
  afterAll(async () => {
    await world?.daemon.dispose();
    await Promise.all(receivers.map((r) => r.close()));
    await tls?.dispose();
  });

  it('posts the payload with exactly the specified headers, signed over the exact body bytes', async () => {
    const { id: ownerId, token } = await customer(world);
    const hook = await receiver();
    const id = await endpoint(world, token, { url: hook.url, secret: 'whsec-exact-bytes', events: 'site.created' });
    const before = Date.now();
    expect(await publish(world, 'site.created', SITE, ownerId)).toBe(1);
    const [request] = await hook.waitFor(1);

    expect(request.method).toBe('POST');
    expect(request.path).toBe('/hook');
    const { host, connection, 'content-length': length, ...rest } = request.headers;
    expect(host).toBe(`127.0.0.1:${hook.port}`);
    expect(connection).toBe('keep-alive');
    expect(Number(length)).toBe(Buffer.byteLength(request.body));
    expect(rest).toEqual({
      'content-type': 'application/json',
      'user-agent': 'Panel-WebPanel-Webhook/1.0',
      'x-webhook-event': 'site.created',
      'x-webhook-signature': expect.stringMatching(/^sha256=[0-9a-f]{64}$/),
      'x-webhook-delivery': expect.stringMatching(UUID),
    });
    expect(await verify('whsec-exact-bytes', request.body, rest['x-webhook-signature'] as string)).toBe(true);
    expect(await verify('another-secret', request.body, rest['x-webhook-signature'] as string)).toBe(false);

    const payload = JSON.parse(request.body);
    expect(Object.keys(payload)).toEqual(['event', 'timestamp', 'data']);
    expect(payload.event).toBe('site.created');
    expect(payload.data).toEqual(SITE);
    expect(payload.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    expect(Date.parse(payload.timestamp)).toBeGreaterThanOrEqual(before - 1000);

    const [entry] = await waitForEntries(world, token, id, 1);
    expect(entry).toEqual({
      id: expect.any(Number),
      event: 'site.created',
      payload,
      status_code: 200,
      response: 'ok',
      success: true,
      reason: null,
      duration_ms: expect.any(Number),
      created_at: expect.stringMatching(/Z$/),
      attempt: 1,
      delivery_id: rest['x-webhook-delivery'],
      endpoint_id: id,
      // The daemon that made the attempt: hostname:pid.
      daemon: expect.stringMatching(/^.+:\d+$/),
      request_headers: {
        'Content-Type': 'application/json',
        'User-Agent': 'Panel-WebPanel-Webhook/1.0',
        'X-Webhook-Event': 'site.created',
        'X-Webhook-Signature': rest['x-webhook-signature'],
        'X-Webhook-Delivery': rest['x-webhook-delivery'],
      },
    });
    expect(Number.isInteger(entry.duration_ms)).toBe(true);
  });

  it('counts a receiver that answers after 12 s as failed at about 10 s', { timeout: 90_000 }, async () => {
    const { id: ownerId, token } = await customer(world);
    const hook = await receiver((_request, index) => (index === 0 ? { delayMs: 12_000 } : {}));
    const id = await endpoint(world, token, { url: hook.url, events: 'site.created' });
    await publish(world, 'site.created', SITE, ownerId);
    await hook.waitFor(1);
    const [, second] = await hook.waitFor(2, 60_000);
    const log = await waitForEntries(world, token, id, 2);
    const attempt1 = log.find((e) => e.attempt === 1);
    expect(attempt1).toMatchObject({ success: false, status_code: 0, response: expect.stringMatching(/timed out/) });
    // It gave up at its 10 s limit: not sooner, and without waiting for the answer at 12 s.
    expect(attempt1.duration_ms).toBeGreaterThanOrEqual(9_900);
    expect(attempt1.duration_ms).toBeLessThan(12_000);
    // The retry is due 2 s after the failure, and does not come sooner. Measured from the
    // attempt's own start (the daemon's log), not from the first request's arrival, which a
    // busy machine delays by the connection and handshake while the 10 s are already running.
    const failedAt = Date.parse(attempt1.created_at) + attempt1.duration_ms;
    expect(Date.parse(attempt1.next_attempt_at) - failedAt).toBeGreaterThanOrEqual(2_000 - 5);
    expect(second.at).toBeGreaterThanOrEqual(failedAt + 2_000 - 5);
    expect(log.find((e) => e.attempt === 2)).toMatchObject({ success: true, status_code: 200 });
  });

  it('stores at most 4096 bytes of a large answer and does not read an endless one', async () => {
    const { id: ownerId, token } = await customer(world);
    const big = await receiver(() => ({ body: 'é'.repeat(100_000) })); // 200 KB of two-byte characters
    const endless = await receiver(() => ({ endless: true }));
    const bigId = await endpoint(world, token, { url: big.url, events: 'site.created' });
    const endlessId = await endpoint(world, token, { url: endless.url, events: 'site.created' });
    await publish(world, 'site.created', SITE, ownerId);
    const [bigEntry] = await waitForEntries(world, token, bigId, 1);
    expect(bigEntry.success).toBe(true);
    expect(Buffer.byteLength(bigEntry.response)).toBeLessThanOrEqual(4096);
    expect(Buffer.byteLength(bigEntry.response)).toBeGreaterThanOrEqual(4094);
    expect(bigEntry.response).toMatch(/^é+$/);

    const [endlessEntry] = await waitForEntries(world, token, endlessId, 1);
    expect(endlessEntry).toMatchObject({ success: true, status_code: 200 });
    // It stopped reading at 4 KB rather than running into the 10 s limit.
    expect(endlessEntry.duration_ms).toBeLessThan(9_000);
    expect(Buffer.byteLength(endlessEntry.response)).toBe(4096);
    expect(endless.requests).toHaveLength(1);
  });

  it('keeps an answer holding NUL bytes with each NUL as U+FFFD, and makes the delivery once', async () => {
    const { id: ownerId, token } = await customer(world);
    const hook = await receiver(() => ({ body: 'ok\u0000binary\u0000' }));
    const id = await endpoint(world, token, { url: hook.url, events: 'site.created' });
    await publish(world, 'site.created', SITE, ownerId);
    // PostgreSQL keeps no NUL in text: an entry holding one was refused, and the delivery made again.
    const [entry] = await waitForEntries(world, token, id, 1);
    expect(entry).toMatchObject({ success: true, status_code: 200, response: 'ok\uFFFDbinary\uFFFD' });
    expect(hook.requests).toHaveLength(1);
  });

  it('does not follow redirects: a 3xx is a failed attempt', async () => {
    const { id: ownerId, token } = await customer(world);
    const target = await receiver();
    const hook = await receiver(() => ({ status: 307, headers: { location: target.url } }));
    const id = await endpoint(world, token, { url: hook.url, events: 'site.created' });
    await publish(world, 'site.created', SITE, ownerId);
    const [first] = await waitForEntries(world, token, id, 1);
    expect(first).toMatchObject({ success: false, status_code: 307 });
    expect(target.requests).toHaveLength(0);
  });

  it('keeps the last 100 attempts of 105, newest first', async () => {
    const { id: ownerId, token } = await customer(world);
    const hook = await receiver();
    const id = await endpoint(world, token, { url: hook.url, events: 'domain.created' });
    for (let batch = 0; batch < 105; batch += 15) {
      await Promise.all(
        Array.from({ length: 15 }, (_, i) => publish(world, 'domain.created', { domain_id: batch + i + 1, name: `d${batch + i + 1}.test` }, ownerId)),
      );
    }
    await hook.waitFor(105);
    // At most one request per slot, over one shared keep-alive agent: connections are reused.
    // (Not "at most 8 connections": a slot idle past the agent's keep-alive time, as on a loaded
    // machine between two batches, rightly opens a new one.)
    expect(hook.maxConcurrent()).toBeLessThanOrEqual(8);
    expect(hook.connections()).toBeLessThan(hook.requests.length / 2);
    // Arrived is not yet recorded: wait until the ten latest arrivals are in the log (they must
    // be kept), so that every one of the 105 attempts has been recorded.
    const latest = hook.requests.slice(-10).map((r) => r.headers['x-webhook-delivery'] as string);
    const log = await vi.waitFor(
      async () => {
        const list = await entries(world, token, id);
        expect(list).toHaveLength(100);
        expect(new Set(list.map((e) => e.payload.data.domain_id)).size).toBe(100);
        expect(list.every((e) => e.success)).toBe(true);
        const logged = new Set(list.map((e) => e.delivery_id));
        expect(latest.filter((d) => !logged.has(d))).toEqual([]);
        return list;
      },
      { timeout: 30_000, interval: 100 },
    );
    const ids = log.map((e) => e.id);
    expect([...ids].sort((a, b) => b - a)).toEqual(ids);
    // The five oldest recorded attempts are gone, not the newest: none of the ten latest to
    // arrive was dropped, and the newest entry is one of them. (Up to 8 attempts run at once and
    // are recorded in batches, so the order of recording can differ from the order of arrival by
    // dozens of places on a loaded machine; the ids, assigned at recording, are the order kept.)
    const received = hook.requests.map((r) => r.headers['x-webhook-delivery'] as string);
    const kept = new Set(log.map((e) => e.delivery_id));
    const dropped = received.filter((id) => !kept.has(id));
    expect(kept.size).toBe(100);
    expect(dropped).toHaveLength(5);
    for (const id of dropped) expect(received.slice(-10)).not.toContain(id);
    expect(received.slice(-10)).toContain(log[0].delivery_id);

    const limited = await world.daemon.request('GET', `/webhooks/${id}/deliveries?limit=3&success=true`, { token });
    expect(limited.body.data.map((e: any) => e.id)).toEqual(ids.slice(0, 3));
  });

  it('sends a test to an inactive endpoint and answers with the first attempt; a failed test is retried', async () => {
    const { token } = await customer(world);
    const hook = await receiver((_request, index) => (index === 0 ? { status: 500, body: 'not yet' } : {}));
    const id = await endpoint(world, token, { url: hook.url, secret: 'test-secret-x', events: 'site.created', active: false });
    const answer = await world.daemon.request('POST', `/webhooks/${id}/test`, { token, body: { message: 'hello there' } });
    expect(answer.status).toBe(200);
    expect(answer.body.data).toMatchObject({ event: 'webhook.test', attempt: 1, success: false, status_code: 500, response: 'not yet', endpoint_id: id });
    expect(answer.body.data.payload).toMatchObject({ event: 'webhook.test', data: { message: 'hello there' } });
    expect(answer.body.message).toMatch(/retried/);
    const [first, second] = await hook.waitFor(2);
    expect(first.headers['x-webhook-event']).toBe('webhook.test');
    expect(second.headers['x-webhook-delivery']).toBe(answer.body.data.delivery_id);
    expect(await verify('test-secret-x', first.body, first.headers['x-webhook-signature'] as string)).toBe(true);

    // No body at all: the default message.
    const plain = await world.daemon.request('POST', `/webhooks/${id}/test`, { token });
    expect(plain.status).toBe(200);
    expect(plain.body.data).toMatchObject({ success: true, status_code: 200 });
    expect(typeof plain.body.data.payload.data.message).toBe('string');
  });

  it('redelivers a logged payload byte for byte as a new delivery', async () => {
    const { id: ownerId, token } = await customer(world);
    const hook = await receiver();
    const id = await endpoint(world, token, { url: hook.url, events: 'site.deleted' });
    await publish(world, 'site.deleted', SITE, ownerId);
    const [original] = await waitForEntries(world, token, id, 1);
    const again = await world.daemon.request('POST', `/webhooks/${id}/deliveries/${original.id}/redeliver`, { token });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ attempt: 1, success: true, event: 'site.deleted', payload: original.payload });
    expect(again.body.data.delivery_id).not.toBe(original.delivery_id);
    const [first, second] = await hook.waitFor(2);
    expect(second.body).toBe(first.body);
    expect(second.headers['x-webhook-delivery']).toBe(again.body.data.delivery_id);

    // Log entry ids are the store's, increasing over every endpoint: one far past the last is unknown.
    const missing = await world.daemon.request('POST', `/webhooks/${id}/deliveries/${again.body.data.id + 1_000_000}/redeliver`, { token });
    expect(missing.status).toBe(404);
    const other = await customer(world);
    const forbidden = await world.daemon.request('POST', `/webhooks/${id}/deliveries/${original.id}/redeliver`, { token: other.token });
    expect(forbidden.status).toBe(403);
  });

});

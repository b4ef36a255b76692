// Webhook operations through the app in-process (its dispatcher posting with the daemon's sender)
// and real HTTPS receivers on loopback: Standard Webhooks signatures (verified with the
// `standardwebhooks` package), endpoint health and the opt-in auto-disable (GET /webhooks/:id,
// the stream's `endpoint` event read over loopback HTTP, and the app's log line), recovery of
// failed deliveries in a window, and the deliveries filters.
import { Webhook } from 'standardwebhooks';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SseParser, type SseEvent } from '../../src/cli/stream/sse.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, endpoint, publish, startAppWorld, waitForEntries, type AppWorld } from './fixtures.js';

/**
 * One retry a second after a failure: what is tested here counts deliveries failed for good (a
 * retry each, as the default schedule [2] makes), and the waits for them are the schedule's.
 */
const ONE_RETRY = [1];

const WHSEC = `whsec_${Buffer.from('0123456789abcdef0123456789abcdef').toString('base64')}`;

/** Opens the delivery stream and collects its events until closed. */
async function openStream(baseUrl: string, token: string) {
  const controller = new AbortController();
  const response = await request(`${baseUrl}/api/v1/webhooks/deliveries/stream`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  expect(response.statusCode).toBe(200);
  const events: SseEvent[] = [];
  const parser = new SseParser((event) => events.push(event));
  response.body.setEncoding('utf8');
  const reading = (async () => {
    try {
      for await (const chunk of response.body) parser.push(chunk as string);
    } catch {
      // aborted
    }
  })();
  return {
    events,
    async close() {
      controller.abort();
      await reading;
    },
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 20_000): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await probe();
      if (value === undefined) throw new Error(`${what}: not in time`);
      return value;
    },
    { timeout: timeoutMs, interval: 100 },
  );
}

describe('webhook operations', () => {
  let tls: ReceiverTls;
  let receiver: Receiver;
  let world: AppWorld;
  /** Where the app listens (plain HTTP on loopback), for the stream. */
  let baseUrl: string;
  /** How each receiver path answers: `/hook/<name>` → status. */
  const status = new Map<string, number>();

  beforeAll(async () => {
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls, (req) => ({ status: status.get(req.path) ?? 200 }));
    world = await startAppWorld(tls, { log: true });
    baseUrl = await world.app.listen();
  });
  afterAll(async () => {
    await world?.app.close();
    await receiver?.close();
    await tls?.dispose();
  });

  const urlOf = (name: string) => `${receiver.url}/${name}`;
  const received = (name: string) => receiver.requests.filter((r) => r.path === `/hook/${name}`);

  it('signs Standard Webhooks endpoints so the standardwebhooks package verifies them', async () => {
    const alice = await customer(world);
    const bad = await world.daemon.request('POST', '/webhooks', {
      token: alice.token,
      body: { url: urlOf('std'), events: '*', secret: 'plain-secret', signature: 'standard-webhooks' },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.message).toContain('whsec_');
    const created = await world.daemon.request('POST', '/webhooks', {
      token: alice.token,
      body: { url: urlOf('std'), events: 'site.created', secret: WHSEC, signature: 'standard-webhooks' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({ signature: 'standard-webhooks', health: { consecutive_failures: 0, success_rate: null } });
    await publish(world, 'site.created', { site_id: 1, domain: 'std.example' }, alice.id);
    const [got] = await until('the delivery', () => (received('std').length ? received('std') : undefined));
    const headers = Object.fromEntries(Object.entries(got.headers).map(([k, v]) => [k, String(v)]));
    const verified = new Webhook(WHSEC).verify(got.body, headers) as { event: string; data: unknown };
    expect(verified).toMatchObject({ event: 'site.created', data: { site_id: 1, domain: 'std.example' } });
    expect(headers['webhook-id']).toBe(headers['x-webhook-delivery']);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // The description's signature stays, keyed with the secret string as given.
    const { createHmac } = await import('node:crypto');
    expect(headers['x-webhook-signature']).toBe(`sha256=${createHmac('sha256', WHSEC).update(got.body).digest('hex')}`);
    // A tampered body does not verify.
    expect(() => new Webhook(WHSEC).verify(got.body.replace('std.example', 'evil.example'), headers)).toThrow();
    // A seed endpoint gets none of the Standard Webhooks headers.
    const seed = await endpoint(world, alice.token, { url: urlOf('seed'), events: 'site.created' });
    expect((await world.daemon.request('GET', `/webhooks/${seed}`, { token: alice.token })).body.data.signature).toBe('seed');
    await publish(world, 'site.created', { site_id: 2, domain: 'seed.example' }, alice.id);
    const [plain] = await until('the seed delivery', () => (received('seed').length ? received('seed') : undefined));
    expect(plain.headers['webhook-signature']).toBeUndefined();
  });

  it('reports health; auto-disable is off by default, and after N failures in a row sets the endpoint inactive and says so on the stream', async () => {
    const bob = await customer(world);
    status.set('/hook/flaky', 500);
    const id = await endpoint(world, bob.token, { url: urlOf('flaky'), events: 'domain.created', retry_schedule: ONE_RETRY });
    const stream = await openStream(baseUrl, bob.token);
    try {
      for (let i = 1; i <= 3; i++) await publish(world, 'domain.created', { domain_id: i, name: `d${i}.example` }, bob.id);
      await waitForEntries(world, bob.token, id, 6);
      const off = (await world.daemon.request('GET', `/webhooks/${id}`, { token: bob.token })).body.data;
      // Off by default: three failed deliveries in a row, still active.
      expect(off).toMatchObject({ active: true, health: { consecutive_failures: 3, success_rate: 0, last_failure_reason: 'HTTP 500', last_success_at: null } });

      // The count so far is reset by enabling it again (it is active: disable, enable). Reset
      // before the limit is set: a report of the third delivery's last attempt may still be on
      // its way, and it reads the endpoint once it has read the limit.
      await world.daemon.request('PUT', `/webhooks/${id}`, { token: bob.token, body: { active: false } });
      const enabled = await world.daemon.request('PUT', `/webhooks/${id}`, { token: bob.token, body: { active: true } });
      expect(enabled.body.data.health.consecutive_failures).toBe(0);
      expect((await world.daemon.request('PUT', '/admin/settings', { token: world.admin, body: { webhook_disable_after_failures: 2 } })).status).toBe(200);

      await publish(world, 'domain.created', { domain_id: 4, name: 'd4.example' }, bob.id);
      await waitForEntries(world, bob.token, id, 8);
      expect((await world.daemon.request('GET', `/webhooks/${id}`, { token: bob.token })).body.data).toMatchObject({ active: true, health: { consecutive_failures: 1 } });
      await publish(world, 'domain.created', { domain_id: 5, name: 'd5.example' }, bob.id);
      const notice = await until('the endpoint event', () => stream.events.find((e) => e.event === 'endpoint'));
      expect(JSON.parse(notice.data)).toMatchObject({
        type: 'disabled',
        endpoint: { id, active: false },
        consecutive_failures: 2,
        last_failure_reason: 'HTTP 500',
        reason: expect.stringContaining('2 failed deliveries in a row'),
      });
      const disabled = (await world.daemon.request('GET', `/webhooks/${id}`, { token: bob.token })).body.data;
      expect(disabled).toMatchObject({ active: false, health: { consecutive_failures: 2 } });
      expect(world.daemon.output()).toContain(`webhook endpoint ${id} disabled after 2 failed deliveries in a row`);
      // Inactive: a new event is not delivered to it.
      const before = received('flaky').length;
      expect(await publish(world, 'domain.created', { domain_id: 6, name: 'd6.example' }, bob.id)).toBe(0);
      expect(received('flaky').length).toBe(before);
    } finally {
      await stream.close();
      await world.daemon.request('PUT', '/admin/settings', { token: world.admin, body: { webhook_disable_after_failures: 0 } });
    }
  });

  it('recovers the deliveries that failed in the window (and only those); another customer gets 403', async () => {
    const carol = await customer(world);
    status.set('/hook/recover', 503);
    const id = await endpoint(world, carol.token, { url: urlOf('recover'), events: 'database.created', retry_schedule: ONE_RETRY });
    for (const n of [1, 2]) await publish(world, 'database.created', { database_id: n, name: `outside_${n}` }, carol.id);
    const outside = await waitForEntries(world, carol.token, id, 4);
    // The window starts just after the newest of those attempts, so the first two are outside.
    const since = new Date(Math.max(...outside.map((e) => Date.parse(e.created_at))) + 1).toISOString();
    for (const n of [3, 4, 5, 6, 7]) await publish(world, 'database.created', { database_id: n, name: `inside_${n}` }, carol.id);
    await waitForEntries(world, carol.token, id, 14);
    status.set('/hook/recover', 200);
    const before = received('recover').length;

    const dave = await customer(world);
    const forbidden = await world.daemon.request('POST', `/webhooks/${id}/recover`, { token: dave.token, body: { since } });
    expect(forbidden.status).toBe(403);
    const badTime = await world.daemon.request('POST', `/webhooks/${id}/recover`, { token: carol.token, body: { since: '2h ago' } });
    expect([400, 422]).toContain(badTime.status);

    const recovered = await world.daemon.request('POST', `/webhooks/${id}/recover`, { token: carol.token, body: { since } });
    expect(recovered.status, recovered.text).toBe(200);
    expect(recovered.body.data).toEqual({ count: 5 });
    const got = await until('the five re-sent deliveries', () => (received('recover').length >= before + 5 ? received('recover').slice(before) : undefined));
    // Exactly those five: nothing more arrives once their successes are logged.
    await waitForEntries(world, carol.token, id, 19);
    expect(received('recover').length).toBe(before + 5);
    const names = got.map((r) => JSON.parse(r.body).data.name).sort();
    expect(names).toEqual(['inside_3', 'inside_4', 'inside_5', 'inside_6', 'inside_7']);

    // Filters of the log: by event and by time.
    const recent = await world.daemon.request('GET', `/webhooks/${id}/deliveries?success=true&since=${encodeURIComponent(since)}&event=database.created`, { token: carol.token });
    expect(recent.status).toBe(200);
    expect(recent.body.data).toHaveLength(5);
    const none = await world.daemon.request('GET', `/webhooks/${id}/deliveries?event=site.created`, { token: carol.token });
    expect(none.body.data).toEqual([]);
  });
});

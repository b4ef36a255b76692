// Deliveries survive the daemon: a retry pending at SIGKILL is made after the restart (not
// earlier than it was due, same X-Webhook-Delivery), an attempt cut off by SIGKILL is
// made again, and SIGTERM lets an attempt in flight finish and does not wait on open streams.
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { waitForExit } from '../helpers/daemon.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, endpoint, entries, publish, SHORT_LEASE_MS, SITE, startWorld, waitForEntries, waitForRetryWritten, type World } from './fixtures.js';

describe.concurrent('deliveries across daemon restarts', () => {
  let tls: ReceiverTls;
  const cleanup: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    tls = await makeReceiverTls();
  });
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    await tls?.dispose();
  });

  /** `leaseMs`: a short lease for the SIGKILL tests, whose attempts are instant or end with the kill. */
  async function setUp(leaseMs?: number): Promise<{ world: World; hook: Receiver }> {
    const [world, hook] = await Promise.all([startWorld(tls, { leaseMs }), startReceiver(tls)]);
    cleanup.push(() => hook.close(), () => world.daemon.dispose());
    return { world, hook };
  }

  it('makes a retry pending at SIGKILL after the restart, with the same delivery id', { timeout: 60_000 }, async () => {
    const { world, hook } = await setUp(SHORT_LEASE_MS);
    hook.handle((_request, index) => (index === 0 ? { status: 500, body: 'down' } : {}));
    const { id: ownerId, token } = await customer(world);
    // The retry 4 s after the failure (the default is 2 s): the kill must come before it is sent,
    // however slow the machine.
    const id = await endpoint(world, token, { url: hook.url, events: 'site.created', retry_schedule: [4] });
    await publish(world, 'site.created', SITE, ownerId);
    const [first] = await hook.waitFor(1);
    const [failed] = await waitForEntries(world, token, id, 1);
    await waitForRetryWritten(world, first.headers['x-webhook-delivery'] as string, 1);
    await world.daemon.kill();
    expect(hook.requests).toHaveLength(1); // the retry was still pending

    const restarted = await world.daemon.restart();
    cleanup.push(() => restarted.dispose());
    const again: World = { daemon: restarted, admin: await restarted.login() };
    const [, retry] = await hook.waitFor(2);
    expect(retry.headers['x-webhook-delivery']).toBe(first.headers['x-webhook-delivery']);
    expect(retry.body).toBe(first.body);
    // Not before it was due (the receiver's clock is the daemon's: one machine).
    expect(Date.parse(failed.next_attempt_at) - Date.parse(failed.created_at)).toBeGreaterThanOrEqual(4_000);
    expect(retry.at).toBeGreaterThanOrEqual(Date.parse(failed.next_attempt_at));
    const log = await waitForEntries(again, token, id, 2);
    expect(log.map((e) => [e.attempt, e.success])).toEqual([
      [2, true],
      [1, false],
    ]);
    expect(hook.requests).toHaveLength(2);
  });

  it('makes an attempt cut off by SIGKILL again after the restart', { timeout: 60_000 }, async () => {
    const { world, hook } = await setUp(SHORT_LEASE_MS);
    hook.handle((_request, index) => (index === 0 ? { delayMs: 60_000 } : {}));
    const { id: ownerId, token } = await customer(world);
    const id = await endpoint(world, token, { url: hook.url, events: 'site.created' });
    await publish(world, 'site.created', SITE, ownerId);
    const [first] = await hook.waitFor(1);
    await world.daemon.kill();
    const restarted = await world.daemon.restart();
    cleanup.push(() => restarted.dispose());
    const [, second] = await hook.waitFor(2);
    expect(second.headers['x-webhook-delivery']).toBe(first.headers['x-webhook-delivery']);
    const log = await waitForEntries({ daemon: restarted, admin: '' }, token, id, 1);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ attempt: 1, success: true, delivery_id: first.headers['x-webhook-delivery'] });
  });

  it('a daemon restarted after SIGKILL gives up its predecessor\'s leases and holds: its attempts and endpoints are served at once, not when they would end', { timeout: 60_000 }, async () => {
    // A lease far longer than the waits below: only giving it up lets the attempts out in time.
    const { world, hook } = await setUp(10 * 60_000);
    let hung = false;
    hook.handle((request) => {
      if (request.headers['x-webhook-event'] !== 'site.created' || hung) return {};
      hung = true;
      return { delayMs: 60_000 };
    });
    const { id: ownerId, token } = await customer(world);
    await endpoint(world, token, { url: hook.url, events: 'site.created' });
    await endpoint(world, token, { url: hook.url, events: 'site.deleted' });
    // The site.deleted endpoint is served once (on a shared store its daemon then holds it for
    // its cap), the site.created one is cut off by the kill.
    await publish(world, 'site.deleted', SITE, ownerId);
    await hook.waitFor(1);
    await publish(world, 'site.created', SITE, ownerId);
    const [, cut] = await hook.waitFor(2);
    await world.daemon.kill();
    const restarted = await world.daemon.restart();
    cleanup.push(() => restarted.dispose());
    // (The JSON store may also send the site.deleted delivery again: its final outcome need not
    // be durable before the kill, at-least-once.)
    const sent = (id: unknown) => hook.requests.filter((r) => r.headers['x-webhook-delivery'] === id).length;
    await vi.waitFor(() => expect(sent(cut.headers['x-webhook-delivery'])).toBe(2), { timeout: 20_000, interval: 50 });
    const before = new Set(hook.requests.map((r) => r.headers['x-webhook-delivery']));
    await publish({ daemon: restarted, admin: await restarted.login() }, 'site.deleted', SITE, ownerId);
    await vi.waitFor(
      () => expect(hook.requests.some((r) => !before.has(r.headers['x-webhook-delivery']) && r.headers['x-webhook-event'] === 'site.deleted')).toBe(true),
      { timeout: 20_000, interval: 50 },
    );
  });

  it('on SIGTERM lets the attempt in flight finish, ends open streams and exits 0', { timeout: 60_000 }, async () => {
    const { world, hook } = await setUp();
    hook.handle(() => ({ delayMs: 1_500 }));
    const { id: ownerId, token } = await customer(world);
    const id = await endpoint(world, token, { url: hook.url, events: 'site.created' });

    const agent = new Agent({ connect: { ca: world.daemon.ca } });
    const stream = await request(`${world.daemon.url}/api/v1/webhooks/deliveries/stream`, {
      headers: { authorization: `Bearer ${token}` },
      dispatcher: agent,
    });
    expect(stream.statusCode).toBe(200);
    const streamText = stream.body.text();

    await publish(world, 'site.created', SITE, ownerId);
    await hook.waitFor(1);
    const stopping = Date.now();
    world.daemon.proc.kill('SIGTERM');
    const code = await waitForExit(world.daemon.proc);
    expect(code).toBe(0);
    // Bounded by the attempt in flight (1.5 s), not by the open stream; generous for a busy machine.
    expect(Date.now() - stopping).toBeLessThan(20_000);
    // The stream ended (it did not hold the shutdown open) after carrying the finished attempt.
    expect(await streamText).toMatch(/event: delivery\n/);
    await agent.destroy();

    const restarted = await world.daemon.restart();
    cleanup.push(() => restarted.dispose());
    const log = await entries({ daemon: restarted, admin: '' }, token, id);
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ attempt: 1, success: true, status_code: 200 });
    // Nothing is sent again: the next event (the marker) is the next request the receiver gets.
    await publish({ daemon: restarted, admin: await restarted.login() }, 'site.created', { site_id: 8, domain: 'marker.example' }, ownerId);
    const [, next] = await hook.waitFor(2);
    expect(JSON.parse(next.body).data.domain).toBe('marker.example');
  });
});

// Pause and resume, and the operational events, in-process (test/helpers/dispatcher-harness.ts):
// a paused endpoint's deliveries are kept and not attempted, and go out in publish order once
// resumed, ahead of newer ones; delivery.failed reaches only the owner's endpoints that name it,
// and a failed operational delivery emits nothing.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RETRY_DELAY_MS } from '../../src/shared/webhook-protocol.js';
import { startDispatcherHarness, type DispatcherHarness } from '../helpers/dispatcher-harness.js';

const WAIT = { timeout: 20_000, interval: 10 };

let harness: DispatcherHarness | null = null;

afterEach(async () => {
  await harness?.close();
  harness = null;
});

/** Counts the harness's claims (not claims by id), so a test can wait for the loop to have looked. */
function countClaims(h: DispatcherHarness): () => number {
  let claims = 0;
  const claim = h.store.outbox.claim.bind(h.store.outbox);
  h.store.outbox.claim = (options) => {
    if (options.ids === undefined) claims++;
    return claim(options);
  };
  return () => claims;
}

const siteOf = (body: string) => (JSON.parse(body) as { data: { site_id: number } }).data.site_id;

describe('pause and resume', () => {
  it('keeps five events while paused and sends them in publish order after resume, before a newer one', async () => {
    const h = (harness = await startDispatcherHarness());
    const claims = countClaims(h);
    const owner = await h.user();
    const paused = await h.endpoint(owner);
    const running = await h.endpoint(owner);
    await h.store.webhooks.update(paused.id, { paused: true, updated_at: new Date(h.now()).toISOString() });
    for (let site = 1; site <= 5; site++) {
      expect(await h.publish(owner, { site_id: site, domain: `s${site}.example` })).toBe(2);
      h.advance(1);
    }
    // The running endpoint has all five, and the loop has claimed twice since: nothing went to the paused one.
    await vi.waitFor(() => expect(h.sender.to(running.url)).toHaveLength(5), WAIT);
    const from = claims();
    await vi.waitFor(() => expect(claims()).toBeGreaterThanOrEqual(from + 2), WAIT);
    expect(h.sender.to(paused.url)).toHaveLength(0);
    expect(await h.store.outbox.pendingByEndpoint([paused.id])).toEqual(new Map([[paused.id, 5]]));

    // Long overdue by now; resumed, then a sixth event at once: the kept five go first, oldest first.
    h.advance(60_000);
    await h.store.webhooks.update(paused.id, { paused: false, updated_at: new Date(h.now()).toISOString() });
    await h.publish(owner, { site_id: 6, domain: 's6.example' });
    await vi.waitFor(() => expect(h.sender.to(paused.url)).toHaveLength(6), WAIT);
    expect(h.sender.to(paused.url).map((r) => siteOf(r.body))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('holds a retry that falls due while paused until resumed', async () => {
    const h = (harness = await startDispatcherHarness());
    const claims = countClaims(h);
    const owner = await h.user();
    const hook = await h.endpoint(owner);
    h.sender.handle(() => ({ status: 500 }));
    await h.publish(owner);
    await vi.waitFor(async () => expect(await h.log(hook.id)).toHaveLength(1), WAIT);
    await h.store.webhooks.update(hook.id, { paused: true, updated_at: new Date(h.now()).toISOString() });
    h.advance(RETRY_DELAY_MS * 10);
    const from = claims();
    await vi.waitFor(() => expect(claims()).toBeGreaterThanOrEqual(from + 2), WAIT);
    expect(h.sender.requests).toHaveLength(1);
    h.sender.handle(() => ({ status: 200 }));
    await h.store.webhooks.update(hook.id, { paused: false, updated_at: new Date(h.now()).toISOString() });
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(2), WAIT);
    expect(h.sender.requests[1].deliveryId).toBe(h.sender.requests[0].deliveryId);
  });
});

describe('operational events', () => {
  it('delivery.failed reaches the owner\'s endpoint naming it, not a `*` one nor another customer\'s', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const stranger = await h.user();
    const failing = await h.endpoint(owner, { events: 'site.created' });
    const watcher = await h.endpoint(owner, { events: 'delivery.failed' });
    const everything = await h.endpoint(owner, { events: '*' });
    const elsewhere = await h.endpoint(stranger, { events: 'delivery.failed' });
    h.sender.handle(() => ({ status: 500, body: 'down' }), failing.url);
    expect(await h.publish(owner)).toBe(2);
    await vi.waitFor(async () => expect(await h.log(failing.id)).toHaveLength(1), WAIT);
    h.advance(RETRY_DELAY_MS);
    await vi.waitFor(() => expect(h.sender.to(watcher.url)).toHaveLength(1), WAIT);
    const [failed] = h.sender.to(failing.url);
    const sent = JSON.parse(h.sender.to(watcher.url)[0].body);
    expect(sent).toEqual({
      event: 'delivery.failed',
      timestamp: expect.any(String),
      data: { endpoint_id: failing.id, delivery_id: failed.deliveryId, event: 'site.created', reason: 'HTTP 500', attempts: 2 },
    });
    // Everything the outbox held is out: the `*` endpoint had the site.created only, the stranger nothing.
    await vi.waitFor(async () => expect(await h.pending()).toBe(0), WAIT);
    await h.dispatcher.stop();
    expect(h.sender.to(everything.url).map((r) => JSON.parse(r.body).event)).toEqual(['site.created']);
    expect(h.sender.to(elsewhere.url)).toHaveLength(0);
  });

  it('a failed delivery of delivery.failed emits nothing more (no loop)', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const failing = await h.endpoint(owner, { events: 'site.created' });
    const watcher = await h.endpoint(owner, { events: 'delivery.failed' });
    h.sender.handle(() => ({ status: 503 }));
    await h.publish(owner);
    await vi.waitFor(async () => expect(await h.log(failing.id)).toHaveLength(1), WAIT);
    h.advance(RETRY_DELAY_MS);
    await vi.waitFor(async () => expect(await h.log(watcher.id)).toHaveLength(1), WAIT);
    h.advance(RETRY_DELAY_MS);
    await vi.waitFor(async () => expect(await h.log(watcher.id)).toHaveLength(2), WAIT);
    // stop() waits for every attempt's job, the publishing of operational events included.
    await h.dispatcher.stop();
    expect(await h.pending()).toBe(0);
    expect(h.sender.to(watcher.url)).toHaveLength(2);
    expect(new Set(h.sender.to(watcher.url).map((r) => r.deliveryId)).size).toBe(1);
  });
});

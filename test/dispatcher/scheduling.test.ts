// The dispatcher in-process (test/helpers/dispatcher-harness.ts): a real store, a fake sender
// and a clock the test moves. What is checked here is scheduling, retries, fairness, matching
// and the log relay; the wire (headers, TLS, time-outs, SSRF) is checked against real
// receivers in delivery.test.ts and the others.
import { verify } from '@octokit/webhooks-methods';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_IN_FLIGHT_PER_ENDPOINT, RETRY_DELAY_MS } from '../../src/shared/webhook-protocol.js';
import type { DeliveryLogEntry, WebhookRecord } from '../../src/store/types.js';
import { startDispatcherHarness, type DispatcherHarness } from '../helpers/dispatcher-harness.js';

const WAIT = { timeout: 20_000, interval: 10 };

let harness: DispatcherHarness | null = null;

async function start(options?: Parameters<typeof startDispatcherHarness>[0]): Promise<DispatcherHarness> {
  harness = await startDispatcherHarness(options);
  return harness;
}

afterEach(async () => {
  await harness?.close();
  harness = null;
});

describe('the dispatcher in-process', () => {
  it('hands back, rather than sends, what a claim answered after its leases ran out: each delivery goes once', async () => {
    // The loop is idle until the publish; its first claim then answers only after the clock has
    // moved a whole lease on (a statement held up that long): the leases it took have ended, and
    // the next claim may take the same deliveries again.
    const h = await start({ idle: true });
    const owner = await h.user();
    const hook = await h.endpoint(owner);
    const claim = h.store.outbox.claim.bind(h.store.outbox);
    let claims = 0;
    h.store.outbox.claim = async (options) => {
      const answer = await claim(options);
      if (options.ids === undefined && ++claims === 1) h.advance(60_000);
      return answer;
    };
    await h.publish(owner, { site_id: 1, domain: 's1.example' });
    await h.publish(owner, { site_id: 2, domain: 's2.example' });
    h.dispatcher.start();
    await vi.waitFor(() => expect(h.sender.to(hook.url)).toHaveLength(2), WAIT);
    await vi.waitFor(async () => expect(await h.pending()).toBe(0), WAIT);
    // Both recorded, and nothing more claimed or sent after that.
    const sent = h.sender.to(hook.url).map((r) => r.deliveryId);
    expect(new Set(sent).size).toBe(2);
    const from = claims;
    await vi.waitFor(() => expect(claims).toBeGreaterThanOrEqual(from + 2), WAIT);
    expect(h.sender.to(hook.url)).toHaveLength(2);
  });

  it('retries a failed delivery once, the retry delay after the failure, with the same delivery id, and never a third time', async () => {
    const h = await start();
    let claims = 0;
    const claim = h.store.outbox.claim.bind(h.store.outbox);
    h.store.outbox.claim = (options) => {
      claims++;
      return claim(options);
    };
    const owner = await h.user();
    const hook = await h.endpoint(owner);
    h.sender.handle(() => ({ status: 500, body: 'receiver broke' }));
    expect(await h.publish(owner)).toBe(1);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(1), WAIT);
    const [first] = h.sender.requests;
    // Recorded with its retry due RETRY_DELAY_MS after the failure: not before the clock gets there.
    await vi.waitFor(async () => expect(await h.log(hook.id)).toHaveLength(1), WAIT);
    const failedAt = h.now();
    h.advance(RETRY_DELAY_MS - 1);
    // The loop has claimed twice since (claims that come back empty): still one request.
    const from = claims;
    await vi.waitFor(() => expect(claims).toBeGreaterThanOrEqual(from + 2), WAIT);
    expect(h.sender.requests).toHaveLength(1);
    h.advance(1);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(2), WAIT);
    const [, second] = h.sender.requests;
    expect(second.at - failedAt).toBe(RETRY_DELAY_MS);
    expect(second.deliveryId).toBe(first.deliveryId);
    expect(second.body).toBe(first.body);
    expect(second.headers['X-Webhook-Signature']).toBe(first.headers['X-Webhook-Signature']);
    await vi.waitFor(async () => expect(await h.store.outbox.get(first.deliveryId)).toBeUndefined(), WAIT);
    const log = await h.log(hook.id);
    expect(log.map((e) => [e.attempt, e.success, e.status_code, e.response, e.delivery_id])).toEqual([
      [2, false, 500, 'receiver broke', first.deliveryId],
      [1, false, 500, 'receiver broke', first.deliveryId],
    ]);
    // Failed for good: nothing is pending, however far the clock moves.
    h.advance(10 * RETRY_DELAY_MS);
    expect(await h.pending()).toBe(0);
    expect(h.sender.requests).toHaveLength(2);
  });

  it('succeeds on the retry when the receiver recovers, signing the retry with the rotated secret', async () => {
    const h = await start();
    const owner = await h.user();
    const hook = await h.endpoint(owner, { secret: 'old-secret' });
    h.sender.handle((request) => (h.sender.to(request.url).length === 1 ? { status: 503 } : { status: 204, body: '' }));
    await h.publish(owner);
    await vi.waitFor(async () => expect(await h.log(hook.id)).toHaveLength(1), WAIT);
    const [first] = h.sender.requests;
    expect(await verify('old-secret', first.body, first.headers['X-Webhook-Signature'])).toBe(true);
    await h.store.webhooks.update(hook.id, { secret: 'new-secret' });
    h.advance(RETRY_DELAY_MS);
    await vi.waitFor(async () => expect(await h.log(hook.id)).toHaveLength(2), WAIT);
    const [, second] = h.sender.requests;
    expect(second.deliveryId).toBe(first.deliveryId);
    expect(await verify('new-secret', second.body, second.headers['X-Webhook-Signature'])).toBe(true);
    expect((await h.log(hook.id)).map((e) => [e.attempt, e.success, e.status_code])).toEqual([
      [2, true, 204],
      [1, false, 503],
    ]);
  });

  it('keeps an endpoint to its cap of attempts at once, and a slow one to its own slots', async () => {
    const h = await start();
    const owner = await h.user();
    const slow = await h.endpoint(owner);
    const fast = await h.endpoint(owner);
    h.sender.handle(() => 'hold', slow.url);
    for (let i = 0; i < 20; i++) await h.publish(owner, { site_id: i + 1, domain: `s${i}.test` });
    await vi.waitFor(async () => expect(await h.log(fast.id)).toHaveLength(20), WAIT);
    // Its answers held, the slow one has had its cap and no more.
    expect(h.sender.heldTo(slow.url)).toBe(MAX_IN_FLIGHT_PER_ENDPOINT);
    expect(h.sender.to(slow.url)).toHaveLength(MAX_IN_FLIGHT_PER_ENDPOINT);
    // Answered one at a time, each answer frees one slot.
    h.sender.handle(() => ({ status: 200 }), slow.url);
    h.sender.releaseAll({ status: 200 }, slow.url);
    await vi.waitFor(async () => expect(await h.log(slow.id)).toHaveLength(20), WAIT);
    expect(h.sender.peakHeld.get(slow.url)).toBe(MAX_IN_FLIGHT_PER_ENDPOINT);
  });

  it("keeps a customer's hanging endpoints to their share: another customer's deliveries and test sends go out meanwhile", async () => {
    const ownerShare = 16;
    const h = await start({ ownerShare });
    const a = await h.user();
    const b = await h.user();
    const ofA: WebhookRecord[] = [];
    for (let i = 0; i < 24; i++) ofA.push(await h.endpoint(a));
    const ofB = await h.endpoint(b);
    for (const hook of ofA) h.sender.handle(() => 'hold', hook.url);
    for (let i = 0; i < 5; i++) expect(await h.publish(a, { site_id: i + 1, domain: `a${i}.test` })).toBe(24);
    await vi.waitFor(() => expect(h.sender.held.size).toBe(ownerShare), WAIT);

    // B's deliveries go out while A's attempts hang.
    for (let i = 0; i < 10; i++) expect(await h.publish(b, { site_id: 100 + i, domain: `b${i}.test` })).toBe(1);
    await vi.waitFor(async () => expect(await h.log(ofB.id)).toHaveLength(10), WAIT);
    // A manual send to one of A's endpoints goes out at once, outside the limits.
    const manual = await h.events.publishTo(ofA[0], { event: 'webhook.test', data: {}, owner_id: a }, { deliveryId: crypto.randomUUID() });
    h.dispatcher.sendNow(manual.id);
    await vi.waitFor(() => expect(h.sender.requests.some((r) => r.deliveryId === manual.id)).toBe(true), WAIT);
    // A never had more than its share (plus the manual send) in flight.
    expect(h.sender.held.size).toBe(ownerShare + 1);
    expect(h.sender.peakHeldTotal).toBe(ownerShare + 1);
    // Released, A's 120 deliveries are all made.
    for (const hook of ofA) h.sender.handle(() => ({ status: 200 }), hook.url);
    h.sender.releaseAll({ status: 200 });
    await vi.waitFor(async () => expect(await h.pending()).toBe(0), WAIT);
    expect(h.sender.requests.filter((r) => ofA.some((hook) => hook.url === r.url))).toHaveLength(5 * 24 + 1);
  });

  it('gives an endpoint that does not answer one attempt at a time until it answers again', async () => {
    const h = await start();
    const owner = await h.user();
    const hook = await h.endpoint(owner);
    // No answer at all (a refused connection) for the first attempt; the next ones are held.
    h.sender.handle((request) => (h.sender.to(request.url).length === 1 ? { status: 0 } : 'hold'), hook.url);
    await h.publish(owner);
    await vi.waitFor(async () => expect(await h.log(hook.id)).toHaveLength(1), WAIT);
    for (let i = 0; i < 10; i++) await h.publish(owner, { site_id: i + 2, domain: `p${i}.test` });
    await vi.waitFor(() => expect(h.sender.held.size).toBe(1), WAIT);
    // Answered: it is open again and gets its cap at once.
    h.sender.held.values().next().value!.answer!({ status: 200 });
    await vi.waitFor(() => expect(h.sender.held.size).toBe(MAX_IN_FLIGHT_PER_ENDPOINT), WAIT);
    expect(h.sender.peakHeld.get(hook.url)).toBe(MAX_IN_FLIGHT_PER_ENDPOINT);
    h.sender.handle(() => ({ status: 200 }), hook.url);
    h.sender.releaseAll({ status: 200 });
    // The first delivery's retry falls due.
    h.advance(RETRY_DELAY_MS);
    await vi.waitFor(async () => expect(await h.pending()).toBe(0), WAIT);
  });

  it('sends nothing to inactive or unsubscribed endpoints, nor one customer\'s events to another; admins get every customer\'s', async () => {
    const h = await start();
    const a = await h.user();
    const b = await h.user();
    const admin = await h.user('admin');
    const subscribed = await h.endpoint(a, { events: 'domain.deleted,site.created' });
    const inactive = await h.endpoint(a, { active: false });
    const other = await h.endpoint(a, { events: 'domain.created,site.deleted' });
    const ofB = await h.endpoint(b);
    const ofAdmin = await h.endpoint(admin, { events: 'site.created' });
    expect(await h.publish(a)).toBe(2);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(2), WAIT);
    expect(h.sender.requests.map((r) => r.url).sort()).toEqual([subscribed.url, ofAdmin.url].sort());
    // A panel-wide event (no owner) reaches admins only; B's event reaches B only.
    expect(await h.publish(null, { site_id: 4, domain: 'panel.test' })).toBe(1);
    expect(await h.publish(b, { site_id: 5, domain: 'b.test' })).toBe(2);
    await vi.waitFor(async () => expect(await h.pending()).toBe(0), WAIT);
    const domains = (url: string) => h.sender.to(url).map((r) => JSON.parse(r.body).data.domain);
    expect(domains(inactive.url)).toEqual([]);
    expect(domains(other.url)).toEqual([]);
    expect(domains(ofB.url)).toEqual(['b.test']);
    expect(domains(subscribed.url)).toEqual(['example.org']);
    expect(domains(ofAdmin.url).sort()).toEqual(['b.test', 'example.org', 'panel.test'].sort());
  });

  it('cancels, without sending, a delivery whose endpoint was deactivated or deleted after its event was queued', async () => {
    const h = await start({ idle: true });
    const owner = await h.user();
    const deactivated = await h.endpoint(owner);
    const deleted = await h.endpoint(owner);
    expect(await h.publish(owner)).toBe(2);
    await h.store.webhooks.update(deactivated.id, { active: false });
    await h.store.webhooks.remove(deleted.id);
    expect(await h.pending()).toBe(1);
    h.dispatcher.start();
    await vi.waitFor(async () => expect(await h.pending()).toBe(0), WAIT);
    expect(h.sender.requests).toEqual([]);
    expect(await h.log(deactivated.id)).toEqual([]);
  });

  it('tells each log entry once, with its owner, and answers a first-attempt waiter', async () => {
    const h = await start();
    const owner = await h.user();
    const hook = await h.endpoint(owner);
    const told: Array<[DeliveryLogEntry, number | null]> = [];
    h.dispatcher.onEntry((entry, ownerId) => told.push([entry, ownerId]));
    const manual = await h.events.publishTo(hook, { event: 'webhook.test', data: {}, owner_id: owner }, { deliveryId: crypto.randomUUID() });
    const first = h.dispatcher.firstAttempt(manual.id);
    h.dispatcher.sendNow(manual.id);
    expect(await first).toMatchObject({ delivery_id: manual.id, attempt: 1, success: true, endpoint_id: hook.id });
    for (let i = 0; i < 5; i++) await h.publish(owner, { site_id: i, domain: `e${i}.test` });
    await vi.waitFor(() => expect(told).toHaveLength(6), WAIT);
    const ids = told.map(([entry]) => entry.id);
    expect(new Set(ids).size).toBe(6);
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    expect(told.every(([, ownerId]) => ownerId === owner)).toBe(true);
    expect((await h.dispatcher.entriesSince(ids[2])).map(({ entry }) => entry.id)).toEqual(ids.slice(3));
  });

  it('on stop, finishes and records the attempts in flight and hands back what it claimed ahead', async () => {
    const h = await start();
    const owner = await h.user();
    const hook = await h.endpoint(owner);
    h.sender.handle(() => 'hold');
    for (let i = 0; i < 20; i++) await h.publish(owner, { site_id: i, domain: `x${i}.test` });
    await vi.waitFor(() => expect(h.sender.held.size).toBe(MAX_IN_FLIGHT_PER_ENDPOINT), WAIT);
    const stopped = h.dispatcher.stop();
    h.sender.releaseAll({ status: 200 });
    await stopped;
    expect(await h.log(hook.id)).toHaveLength(MAX_IN_FLIGHT_PER_ENDPOINT);
    // The rest is pending and free for another claimer now.
    const rest = await h.store.outbox.claim({ owner: 'another', now: h.now(), leaseMs: 60_000, limit: 100, perEndpoint: 100 });
    expect(rest).toHaveLength(20 - MAX_IN_FLIGHT_PER_ENDPOINT);
  });
});

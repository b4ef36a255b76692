// Per-endpoint delivery policies (issue 33): a retry schedule (`retry_schedule`, whole seconds
// before each retry) and a cap of attempts at once (`max_in_flight`). The timing is checked in
// process (a fake sender and a clock the test moves); surviving a SIGKILL between attempts
// against a real daemon and receiver; the API's bounds through the app in process. The CLI's
// flags are in test/cli/run-webhooks.test.ts.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startDispatcherHarness, type DispatcherHarness } from '../helpers/dispatcher-harness.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, publish, SHORT_LEASE_MS, SITE, startWorld, waitForEntries, waitForRetryWritten, type World } from './fixtures.js';

const WAIT = { timeout: 20_000, interval: 10 };

describe('retry schedules and caps in process', () => {
  let harness: DispatcherHarness | null = null;
  afterEach(async () => {
    await harness?.close();
    harness = null;
  });

  it('makes four attempts at a [1, 1, 2] schedule against a failing receiver, each logged with its number', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const hook = await h.endpoint(owner, { retry_schedule: [1, 1, 2] });
    h.sender.handle(() => ({ status: 500, body: 'down' }));
    await h.publish(owner);
    const failedAt: number[] = [];
    for (const [n, delaySeconds] of [1, 1, 2, null].entries()) {
      // Attempt n+1 is made, and logged, before the clock moves on.
      await vi.waitFor(() => expect(h.sender.requests).toHaveLength(n + 1), WAIT);
      await vi.waitFor(async () => expect(await h.log(hook.id)).toHaveLength(n + 1), WAIT);
      failedAt.push(h.now());
      if (delaySeconds === null) break;
      // Not a moment early: the clock stops one ms short of the delay before it reaches it, so a
      // retry made early carries that time (the attempts' times are compared exactly below).
      h.advance(delaySeconds * 1000 - 1);
      const [entry] = await h.log(hook.id);
      expect(entry.next_attempt_at).toBe(new Date(failedAt[n] + delaySeconds * 1000).toISOString());
      h.advance(1);
    }
    const requests = h.sender.requests;
    expect(requests.slice(1).map((r, i) => r.at - failedAt[i])).toEqual([1000, 1000, 2000]);
    expect(new Set(requests.map((r) => r.deliveryId)).size).toBe(1);
    const log = await h.log(hook.id);
    expect(log.map((e) => [e.attempt, e.success])).toEqual([
      [4, false],
      [3, false],
      [2, false],
      [1, false],
    ]);
    // The last attempt says no retry is left, and the delivery is failed for good.
    expect(log[0].next_attempt_at).toBeNull();
    await vi.waitFor(async () => expect(await h.store.outbox.get(requests[0].deliveryId)).toBeUndefined(), WAIT);
    h.advance(60_000);
    expect(await h.pending()).toBe(0);
    expect(h.sender.requests).toHaveLength(4);
  });

  it('makes one attempt and no retry with an empty schedule', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const hook = await h.endpoint(owner, { retry_schedule: [] });
    h.sender.handle(() => ({ status: 503 }));
    await h.publish(owner);
    await vi.waitFor(async () => expect(await h.log(hook.id)).toHaveLength(1), WAIT);
    await vi.waitFor(async () => expect(await h.pending()).toBe(0), WAIT);
    const [entry] = await h.log(hook.id);
    expect(entry.next_attempt_at).toBeNull();
    // Nothing is left pending (checked above), so no later attempt can come.
    expect(h.sender.requests).toHaveLength(1);
  });

  it('never lets an endpoint with max_in_flight 1 hold two requests, while another endpoint is not held back', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const capped = await h.endpoint(owner, { max_in_flight: 1 });
    const other = await h.endpoint(await h.user());
    h.sender.handle(() => 'hold', capped.url);
    h.sender.handle(() => 'hold', other.url);
    for (let i = 0; i < 6; i++) {
      await h.publish(owner, { site_id: i, domain: `s${i}.example.org` });
      await h.events.publish({ event: 'site.created', data: { site_id: i }, owner_id: other.user_id });
    }
    // The other endpoint gets its default eight at once (six here); the capped one one.
    await vi.waitFor(() => expect(h.sender.heldTo(other.url)).toBe(6), WAIT);
    await vi.waitFor(() => expect(h.sender.heldTo(capped.url)).toBe(1), WAIT);
    // Answered one at a time, each next request comes only after the one before was answered.
    for (let n = 1; n <= 6; n++) {
      await vi.waitFor(() => expect(h.sender.to(capped.url)).toHaveLength(n), WAIT);
      expect(h.sender.heldTo(capped.url)).toBe(1);
      h.sender.releaseAll({ status: 200 }, capped.url);
    }
    await vi.waitFor(async () => expect(await h.log(capped.id)).toHaveLength(6), WAIT);
    expect(h.sender.peakHeld.get(capped.url)).toBe(1);
    h.sender.releaseAll({ status: 200 }, other.url);
  });
});

describe('a retry schedule across a SIGKILL', () => {
  let tls: ReceiverTls;
  const cleanup: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    tls = await makeReceiverTls();
  });
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    await tls?.dispose();
  });

  it('makes the rest of a [3, 1, 2] schedule after a kill -9 between attempts, and shows the next attempt in health', { timeout: 90_000 }, async () => {
    // The first retry 3 s after the failure: the kill must come before it is sent (an attempt
    // cut off by the kill is made again, which is another test's), however slow the machine.
    const [world, hook]: [World, Receiver] = await Promise.all([startWorld(tls, { leaseMs: SHORT_LEASE_MS }), startReceiver(tls)]);
    cleanup.push(() => hook.close(), () => world.daemon.dispose());
    hook.handle(() => ({ status: 500, body: 'down' }));
    const { id: ownerId, token } = await customer(world);
    const created = await world.daemon.request('POST', '/webhooks', {
      token,
      body: { url: hook.url, secret: 'test-secret', events: 'site.created', retry_schedule: [3, 1, 2] },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({ retry_schedule: [3, 1, 2], max_in_flight: 8 });
    const id = created.body.data.id;
    await publish(world, 'site.created', SITE, ownerId);
    const [first] = await hook.waitFor(1);
    const [entry] = await waitForEntries(world, token, id, 1);
    expect(entry.attempt).toBe(1);
    expect(Date.parse(entry.next_attempt_at)).toBeGreaterThanOrEqual(Date.parse(entry.created_at) + 3000);
    // Killed once a retry is pending in the outbox (health reads it there): the attempts made
    // so far are recorded, and the rest of the schedule is the restarted daemon's.
    const due = await vi.waitFor(async () => {
      const read = await world.daemon.request('GET', `/webhooks/${id}`, { token });
      expect(read.body.data.health.next_attempt_at).toEqual(expect.any(String));
      return read.body.data.health.next_attempt_at as string;
    }, 10_000);
    await waitForRetryWritten(world, first.headers['x-webhook-delivery'] as string, 1);
    await world.daemon.kill();
    const madeBeforeKill = hook.requests.length;
    expect(madeBeforeKill).toBeLessThan(4);
    if (madeBeforeKill === 1) expect(due).toBe(entry.next_attempt_at);

    const restarted = await world.daemon.restart();
    cleanup.push(() => restarted.dispose());
    const again: World = { daemon: restarted, admin: await restarted.login() };
    const requests = await hook.waitFor(4);
    expect(new Set(requests.map((r) => r.headers['x-webhook-delivery']))).toEqual(new Set([first.headers['x-webhook-delivery']]));
    const log = await waitForEntries(again, token, id, 4);
    expect(log.map((e) => [e.attempt, e.success])).toEqual([
      [4, false],
      [3, false],
      [2, false],
      [1, false],
    ]);
    // Each retry was due its step of the schedule after the attempt before it, and reached the
    // receiver no earlier (the receiver's clock is the daemon's: one machine).
    const byAttempt = [...log].reverse();
    for (const [n, step] of [3, 1, 2].entries()) {
      expect(Date.parse(byAttempt[n].next_attempt_at) - Date.parse(byAttempt[n].created_at)).toBeGreaterThanOrEqual(step * 1000);
      expect(requests[n + 1].at).toBeGreaterThanOrEqual(Date.parse(byAttempt[n].next_attempt_at));
    }
    const after = await again.daemon.request('GET', `/webhooks/${id}`, { token });
    expect(after.body.data.health).toMatchObject({ next_attempt_at: null, consecutive_failures: 1 });
    expect(hook.requests).toHaveLength(4);
  });
});

describe('retry schedule and cap validation', () => {
  let api: TestApp;
  let token: string;
  beforeAll(async () => {
    api = await buildTestApp();
    token = await api.login();
  });
  afterAll(async () => {
    await api?.close();
  });

  const create = (body: Record<string, unknown>) =>
    api.request('POST', '/webhooks', { token, body: { url: 'https://hooks.example.invalid/r', secret: 'test-secret', events: '*', ...body } });

  it('keeps the defaults ([2], 8) unless given, and takes a schedule and cap on create and update', async () => {
    const plain = await create({});
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body.data).toMatchObject({ retry_schedule: [2], max_in_flight: 8, health: { next_attempt_at: null } });
    const set = await create({ retry_schedule: [1, 1, 2], max_in_flight: 1 });
    expect(set.status, set.text).toBe(201);
    expect(set.body.data).toMatchObject({ retry_schedule: [1, 1, 2], max_in_flight: 1 });
    const id = set.body.data.id;
    const none = await api.request('PUT', `/webhooks/${id}`, { token, body: { retry_schedule: [] } });
    expect(none.status, none.text).toBe(200);
    expect(none.body.data).toMatchObject({ retry_schedule: [], max_in_flight: 1 });
    const read = await api.request('GET', `/webhooks/${id}`, { token });
    expect(read.body.data).toMatchObject({ retry_schedule: [], max_in_flight: 1 });
    const longest = await create({ retry_schedule: [86400, 86400, 86400] });
    expect(longest.status, longest.text).toBe(201);
  });

  it.each([
    ['eleven entries', { retry_schedule: Array(11).fill(1) }, /retry_schedule/],
    ['a zero delay', { retry_schedule: [1, 0] }, /retry_schedule/],
    ['a delay over a day', { retry_schedule: [86401] }, /retry_schedule/],
    ['more than three days in all', { retry_schedule: [86400, 86400, 86400, 1] }, /retry_schedule: the delays add up to 259201 s/],
    ['max_in_flight 0', { max_in_flight: 0 }, /max_in_flight/],
    ['max_in_flight 65', { max_in_flight: 65 }, /max_in_flight/],
  ])('refuses %s with a 422 envelope, on create and update', async (_name, body, message) => {
    const created = await create(body);
    expect(created.status, created.text).toBe(422);
    expect(created.body).toMatchObject({ data: null, error: 'validation failed', message: expect.stringMatching(message) });
    const ok = await create({});
    const updated = await api.request('PUT', `/webhooks/${ok.body.data.id}`, { token, body });
    expect(updated.status, updated.text).toBe(422);
    expect(updated.body.message).toMatch(message);
  });
});

// Rate limits per endpoint (`rate_limit_per_second`, issue 33) and caps held across dispatchers.
// In process, with the clock the test moves: the clock moves only when the test moves it, and
// each request records the clock when it was sent, so an attempt made before its turn shows in
// the times the test compares. On PostgreSQL, also two dispatchers on one database (two store
// handles): one rate schedule and one cap between them.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Dispatcher } from '../../src/daemon/dispatcher/dispatcher.js';
import { EventBus } from '../../src/daemon/dispatcher/bus.js';
import { openStore } from '../../src/store/factory.js';
import type { Store } from '../../src/store/store.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { TEST_STORE } from '../helpers/daemon.js';
import { FakeSender, insertUser, startDispatcherHarness, type DispatcherHarness, type SentRequest } from '../helpers/dispatcher-harness.js';
import { createMigratedDatabase, pgAdminUrl } from '../helpers/postgres-db.js';

const WAIT = { timeout: 20_000, interval: 5 };

/** Gaps between consecutive requests' clock times. */
const gaps = (requests: SentRequest[]) => {
  const times = requests.map((r) => r.at).sort((a, b) => a - b);
  return times.slice(1).map((at, i) => at - times[i]);
};

describe('rate limits in process', () => {
  let harness: DispatcherHarness | null = null;
  afterEach(async () => {
    await harness?.close();
    harness = null;
  });

  it('spaces a rate-limited endpoint 1000 / rate ms apart, while another endpoint of the same owner is not held back', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const limited = await h.endpoint(owner, { rate_limit_per_second: 4 });
    const free = await h.endpoint(owner);
    for (let i = 0; i < 8; i++) await h.publish(owner, { site_id: i, domain: `s${i}.example.org` });
    // The unlimited endpoint takes all eight at the clock they were published at.
    await vi.waitFor(() => expect(h.sender.to(free.url)).toHaveLength(8), WAIT);
    expect(new Set(h.sender.to(free.url).map((r) => r.at))).toEqual(new Set([h.now()]));
    // The limited one: one now, then one per 250 ms the clock moves (never two at one time).
    await vi.waitFor(() => expect(h.sender.to(limited.url)).toHaveLength(1), WAIT);
    for (let n = 2; n <= 8; n++) {
      h.advance(250);
      await vi.waitFor(() => expect(h.sender.to(limited.url).length).toBeGreaterThanOrEqual(n), WAIT);
    }
    expect(h.sender.to(limited.url)).toHaveLength(8);
    expect(gaps(h.sender.to(limited.url))).toEqual([250, 250, 250, 250, 250, 250, 250]);
    expect(new Set(h.sender.to(limited.url).map((r) => r.deliveryId)).size).toBe(8);
  });

  it('keeps the schedule when the clock jumps: one attempt per turn, none caught up in a burst after an idle spell', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const limited = await h.endpoint(owner, { rate_limit_per_second: 2 });
    await h.publish(owner);
    await vi.waitFor(() => expect(h.sender.to(limited.url)).toHaveLength(1), WAIT);
    // Idle for a minute, then three at once: the first goes now, the others a step apart.
    h.advance(60_000);
    for (let i = 0; i < 3; i++) await h.publish(owner, { site_id: i, domain: `s${i}.example.org` });
    await vi.waitFor(() => expect(h.sender.to(limited.url)).toHaveLength(2), WAIT);
    h.advance(500);
    await vi.waitFor(() => expect(h.sender.to(limited.url)).toHaveLength(3), WAIT);
    h.advance(500);
    await vi.waitFor(() => expect(h.sender.to(limited.url)).toHaveLength(4), WAIT);
    expect(gaps(h.sender.to(limited.url))).toEqual([60_000, 500, 500]);
  });
});

describe('rate_limit_per_second through the API', () => {
  let api: TestApp | null = null;
  afterEach(async () => {
    await api?.close();
    api = null;
  });

  it('defaults to null, takes 1-1000 on create and update, null lifts it; out of bounds is a 422 envelope, not an integer a 400', async () => {
    api = await buildTestApp();
    const token = await api.login();
    const create = (body: Record<string, unknown>) =>
      api!.request('POST', '/webhooks', { token, body: { url: 'https://hooks.example.invalid/r', secret: 'test-secret', events: '*', ...body } });
    const plain = await create({});
    expect(plain.status, plain.text).toBe(201);
    expect(plain.body.data).toMatchObject({ rate_limit_per_second: null, max_in_flight: 8 });
    const set = await create({ rate_limit_per_second: 5 });
    expect(set.status, set.text).toBe(201);
    expect(set.body.data.rate_limit_per_second).toBe(5);
    const id = set.body.data.id;
    const raised = await api.request('PUT', `/webhooks/${id}`, { token, body: { rate_limit_per_second: 1000 } });
    expect(raised.status, raised.text).toBe(200);
    expect(raised.body.data.rate_limit_per_second).toBe(1000);
    const lifted = await api.request('PUT', `/webhooks/${id}`, { token, body: { rate_limit_per_second: null } });
    expect(lifted.status, lifted.text).toBe(200);
    expect(lifted.body.data.rate_limit_per_second).toBeNull();
    expect((await api.request('GET', `/webhooks/${id}`, { token })).body.data.rate_limit_per_second).toBeNull();
    // Out of bounds: well-formed but invalid (422); not an integer at all: malformed (400), as every field.
    for (const [bad, status] of [[0, 422], [1001, 422], [2.5, 400], ['5', 400]] as const) {
      const created = await create({ rate_limit_per_second: bad });
      expect(created.status, `${bad}: ${created.text}`).toBe(status);
      expect(created.body).toMatchObject({ data: null, message: expect.stringMatching(/^rate_limit_per_second: /) });
      const updated = await api.request('PUT', `/webhooks/${id}`, { token, body: { rate_limit_per_second: bad } });
      expect(updated.status, `${bad}: ${updated.text}`).toBe(status);
      expect(updated.body.message).toMatch(/^rate_limit_per_second: /);
    }
  });
});

/** Two dispatchers on one PostgreSQL database, each with its own store handle and sender, one clock. */
async function twoDispatchers() {
  const { url } = pgAdminUrl();
  const databaseUrl = await createMigratedDatabase(url!, 'panelctl_rates');
  const dirs = [await mkdtemp(join(tmpdir(), 'panelctl-rates-')), await mkdtemp(join(tmpdir(), 'panelctl-rates-'))];
  const stores: Store[] = [];
  for (const dir of dirs) stores.push(await openStore({ dataDir: dir, databaseUrl, create: true }));
  let clock = Date.now();
  const now = () => clock;
  const senders = [new FakeSender(now), new FakeSender(now)];
  const dispatchers = stores.map((store, i) => new Dispatcher({ pollMs: 10, store, clock: now, sender: senders[i], allowPrivate: async () => true }));
  for (const d of dispatchers) d.start();
  const store = stores[0];
  const user = await insertUser(store, `rates-${process.pid}`, 'customer', clock);
  const at = user.created_at;
  const events = new EventBus(store, now);
  return {
    store,
    senders,
    dispatchers,
    now,
    advance: (ms: number) => void (clock += ms),
    requests: () => [...senders[0].requests, ...senders[1].requests],
    endpoint: (input: Record<string, unknown>) =>
      store.webhooks.insert({ user_id: user.id, url: 'https://receiver.test/shared', secret: 's', events: '*', active: true, created_at: at, updated_at: at, ...input }),
    publish: (n: number) => events.publish({ event: 'site.created', data: { site_id: n, domain: `s${n}.example.org` }, owner_id: user.id }),
    async close() {
      for (const s of senders) s.releaseAll();
      // Stopped ones stop again at once.
      await Promise.all(dispatchers.map((d) => d.stop()));
      await Promise.all(stores.map((s) => s.close()));
      await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    },
  };
}

describe.skipIf(TEST_STORE !== 'postgres')('two dispatchers on one PostgreSQL database', () => {
  let world: Awaited<ReturnType<typeof twoDispatchers>> | null = null;
  afterEach(async () => {
    await world?.close();
    world = null;
  });

  it('share one rate schedule: one attempt per turn over both', async () => {
    const w = (world = await twoDispatchers());
    await w.endpoint({ rate_limit_per_second: 4 });
    for (let i = 0; i < 12; i++) await w.publish(i);
    await vi.waitFor(() => expect(w.requests()).toHaveLength(1), WAIT);
    for (let n = 2; n <= 12; n++) {
      w.advance(250);
      await vi.waitFor(() => expect(w.requests().length).toBeGreaterThanOrEqual(n), WAIT);
    }
    expect(w.requests()).toHaveLength(12);
    expect(gaps(w.requests())).toEqual(Array(11).fill(250));
  });

  /**
   * Publishes `events` to the world's one endpoint with both senders holding every request, and
   * answers them one at a time once `cap` (or all that are left) are open: answers the most
   * requests open to it at once over both, counted as each arrives (before it is held).
   */
  async function peakOpen(w: NonNullable<typeof world>, events: number, cap: number): Promise<number> {
    const open = () => w.senders[0].held.size + w.senders[1].held.size;
    let peak = 0;
    for (const s of w.senders) {
      s.handle(() => {
        peak = Math.max(peak, open() + 1);
        return 'hold';
      });
    }
    for (let i = 0; i < events; i++) await w.publish(i);
    for (let answered = 0; answered < events; answered++) {
      await vi.waitFor(() => expect(open()).toBeGreaterThanOrEqual(Math.min(cap, events - answered)), WAIT);
      // Answer one: the next may go out through either dispatcher.
      const [first] = [...w.senders[0].held, ...w.senders[1].held];
      first.answer!({ status: 200 });
    }
    await vi.waitFor(() => expect(w.requests()).toHaveLength(events), WAIT);
    expect(new Set(w.requests().map((r) => r.deliveryId)).size).toBe(events);
    return peak;
  }

  it('hold an endpoint max_in_flight over both: never more requests open to it at once', async () => {
    const w = (world = await twoDispatchers());
    await w.endpoint({ max_in_flight: 2 });
    expect(await peakOpen(w, 12, 2)).toBe(2);
  });

  it('hold the default cap (8) over both for an endpoint that sets no max_in_flight: never more than 8 requests open to it', async () => {
    const w = (world = await twoDispatchers());
    const { id } = await w.endpoint({});
    expect((await w.store.webhooks.get(id))?.max_in_flight).toBeUndefined();
    // More than both dispatchers claim ahead at once (3 × 8 each), so each would hold some.
    expect(await peakOpen(w, 60, 8)).toBe(8);
  });

  it("hands a capped endpoint to the other dispatcher when its holder stops, without waiting for the hold to end", async () => {
    const w = (world = await twoDispatchers());
    await w.endpoint({ max_in_flight: 1 });
    await w.publish(0);
    await vi.waitFor(() => expect(w.requests()).toHaveLength(1), WAIT);
    const holder = w.senders[0].requests.length === 1 ? 0 : 1;
    const other = 1 - holder;
    // The holder stops (its attempt made and recorded); the clock does not move, so the hold
    // would still be live had it not been given up.
    await w.dispatchers[holder].stop();
    for (let i = 1; i <= 3; i++) await w.publish(i);
    await vi.waitFor(() => expect(w.senders[other].requests).toHaveLength(3), WAIT);
    expect(w.senders[holder].requests).toHaveLength(1);
  });
});

describe.skipIf(TEST_STORE !== 'postgres')('endpoint holds on PostgreSQL (two store handles, claims at chosen times)', () => {
  const LEASE = 10_000;
  let stores: Store[] = [];
  let dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
    stores = [];
    dirs = [];
  });

  it("keeps an endpoint on the default cap to its holder until its last claim's leases end, then hands it to another", async () => {
    const { url } = pgAdminUrl();
    const databaseUrl = await createMigratedDatabase(url!, 'panelctl_holds');
    dirs = [await mkdtemp(join(tmpdir(), 'panelctl-holds-')), await mkdtemp(join(tmpdir(), 'panelctl-holds-'))];
    for (const dir of dirs) stores.push(await openStore({ dataDir: dir, databaseUrl, create: true }));
    const [a, b] = stores;
    const t = Date.now();
    const user = await insertUser(a, `holds-${process.pid}`, 'customer', t);
    const stamp = new Date(t).toISOString();
    await a.webhooks.insert({ user_id: user.id, url: 'https://receiver.test/held', secret: 's', events: '*', active: true, created_at: stamp, updated_at: stamp });
    const events = new EventBus(a, () => t);
    for (let i = 0; i < 10; i++) await events.publish({ event: 'site.created', data: { site_id: i, domain: `s${i}.example.org` }, owner_id: user.id });
    const claim = (store: Store, owner: string, now: number) => store.outbox.claim({ owner, now, leaseMs: LEASE, limit: 2, perEndpoint: 2 });

    // A takes the endpoint; B gets nothing of it while A's hold lasts, whatever A leased.
    expect(await claim(a, 'daemon-a', t)).toHaveLength(2);
    expect(await claim(b, 'daemon-b', t)).toHaveLength(0);
    // A claims again within its hold (the hold is only read: it ends within a tenth of a lease
    // of the new leases) and later (the hold is extended to that claim's leases: t + 12 s).
    expect(await claim(a, 'daemon-a', t + 500)).toHaveLength(2);
    expect(await claim(a, 'daemon-a', t + 2_000)).toHaveLength(2);
    // A stops claiming (it died): its hold ends with its last leases, not earlier.
    expect(await claim(b, 'daemon-b', t + LEASE + 500)).toHaveLength(0);
    expect(await claim(b, 'daemon-b', t + 2_000 + LEASE - 1)).toHaveLength(0);
    // Then B takes the endpoint, A's expired leases included (the first of it in due order).
    expect(await claim(b, 'daemon-b', t + 2_000 + LEASE)).toHaveLength(2);
    // Now B's: A, back, gets nothing of the endpoint.
    expect(await claim(a, 'daemon-a', t + 2_000 + LEASE)).toHaveLength(0);
  });
});

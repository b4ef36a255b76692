// The scheduler keeps ready deliveries in a queue per endpoint: finding what may start looks at
// each endpoint with ready work once, however many deliveries its cap or rate holds back, and
// an endpoint held back delays no other. Pure: no store, no clock but the numbers given.
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY, Scheduler, type EndpointPolicy } from '../../src/daemon/dispatcher/scheduler.js';
import type { DeliveryRecord } from '../../src/store/types.js';

const delivery = (id: number, endpointId: number, ownerId = endpointId): DeliveryRecord => ({
  id: `d${id}`,
  endpoint_id: endpointId,
  owner_id: ownerId,
  event: 'site.created',
  body: '{}',
  state: 'pending',
  attempts: 0,
  next_attempt_at: 0,
  created_at: '2026-01-01T00:00:00.000Z',
});

function scheduler(policies: Record<number, Partial<EndpointPolicy>>) {
  let reads = 0;
  const s = new Scheduler<null>({
    concurrency: 256,
    ownerShare: 64,
    holdMs: 30_000,
    policyOf: (endpointId) => {
      reads++;
      return { ...DEFAULT_POLICY, ...policies[endpointId] };
    },
  });
  return { s, reads: () => reads };
}

describe('the scheduler’s ready queues', () => {
  it('looks at a held-back endpoint once per pass, not once per delivery it holds', () => {
    // Cap 64, a rate of 1000/s: a window of 192 ready, started one per ms.
    const { s, reads } = scheduler({ 1: { maxInFlight: 64, ratePerSecond: 1000 }, 2: {} });
    const held = Array.from({ length: 192 }, (_, i) => delivery(i, 1));
    expect(s.hold(held, null, 0)).toEqual([]);
    const first = s.launchable(0);
    expect(first.start.map((h) => h.delivery.id)).toEqual(['d0']);
    expect(s.nextLaunchAt).toBe(1);
    // The rest wait for their turns: a pass costs a few policy reads, not 191.
    const before = reads();
    expect(s.launchable(0).start).toEqual([]);
    expect(reads() - before).toBeLessThanOrEqual(4);
    // Another endpoint's delivery, claimed after all of those, starts at once.
    s.hold([delivery(1000, 2)], null, 0);
    expect(s.launchable(0).start.map((h) => h.delivery.id)).toEqual(['d1000']);
    // One ms later, the next turn of the rate-limited endpoint, and only one.
    expect(s.launchable(1).start.map((h) => h.delivery.id)).toEqual(['d1']);
  });

  it('serves endpoints in turn when the slots over all endpoints are short', () => {
    const s = new Scheduler<null>({ concurrency: 2, ownerShare: 64, holdMs: 30_000 });
    s.hold([delivery(1, 1), delivery(2, 1), delivery(3, 1), delivery(4, 2), delivery(5, 2)], null, 0);
    const first = s.launchable(0).start.map((h) => h.delivery.id);
    expect(first).toEqual(['d1', 'd2']);
    s.finished('d1', 'success');
    s.finished('d2', 'success');
    // Endpoint 1 was served: endpoint 2 goes first now.
    expect(s.launchable(0).start.map((h) => h.delivery.id)).toEqual(['d4', 'd5']);
  });

  it('hands back a delivery held ready too long, and drains the rest on stop', () => {
    const { s } = scheduler({ 1: { maxInFlight: 1 } });
    s.hold([delivery(1, 1), delivery(2, 1), delivery(3, 1)], null, 0);
    expect(s.launchable(0).start.map((h) => h.delivery.id)).toEqual(['d1']);
    const later = s.launchable(30_000);
    expect(later.stale.map((d) => d.id)).toEqual(['d2', 'd3']);
    expect(s.readyCount).toBe(0);
    s.hold([delivery(4, 1)], null, 30_000);
    expect(s.drainReady().map((d) => d.id)).toEqual(['d4']);
    expect(s.readyCount).toBe(0);
  });

  it('asks no claim for more than the fullest owner still claimed for has room for', () => {
    // One owner with ten endpoints (8 at once each): its share (64 at once) binds, so it may hold 192.
    const { s } = scheduler({});
    const ownerWide = (id: number, endpointId: number) => delivery(id, endpointId, 7);
    let next = 0;
    const claimFor = (count: number) => Array.from({ length: count }, () => ownerWide(next, 1 + (next++ % 10)));
    expect(s.hold(claimFor(100), null, 0)).toEqual([]);
    const shape = s.nextClaim()!;
    expect(shape.skipOwners).toEqual([]);
    expect(shape.limit).toBe(92);
    // What a claim of that size brings of that owner is held, none handed back.
    expect(s.hold(claimFor(shape.limit), null, 0)).toEqual([]);
  });

  it("leaves a full owner's endpoints out of the claim by endpoint as well as by owner", () => {
    const { s } = scheduler({});
    // Owner 7 holds 130 over endpoints 1 to 6 (more than two shares of 64 held ahead): full.
    const held = Array.from({ length: 130 }, (_, i) => delivery(i, 1 + (i % 6), 7));
    expect(s.hold(held, null, 0)).toEqual([]);
    s.hold([delivery(500, 9, 8)], null, 0);
    const shape = s.nextClaim()!;
    expect(shape.skipOwners).toEqual([7]);
    // Owner 8's endpoint is still claimed for, within owner 8's room.
    expect(shape.skipEndpoints).toEqual([1, 2, 3, 4, 5, 6]);
    expect(shape.limit).toBe(Math.min(256, 3 * 64 - 1));
    // Once owner 7's deliveries are handed back, its endpoints are claimed for again.
    s.drainReady();
    s.hold([delivery(501, 9, 8)], null, 0);
    s.announce();
    const after = s.nextClaim()!;
    expect(after.skipOwners).toEqual([]);
    expect(after.skipEndpoints).toEqual([]);
  });
});

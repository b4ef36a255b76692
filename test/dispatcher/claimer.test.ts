// The claim loop against a store and a scheduler that stand in for the real ones: what it gives
// back is back in the outbox before it claims again.
import { describe, expect, it } from 'vitest';
import { Claimer, type BatchRead, type ClaimerOptions } from '../../src/daemon/dispatcher/claimer.js';
import type { ClaimShape, Scheduler } from '../../src/daemon/dispatcher/scheduler.js';
import type { ClaimOptions, Store } from '../../src/store/store.js';
import type { DeliveryRecord } from '../../src/store/types.js';

const delivery = (n: number): DeliveryRecord => ({
  id: `d${n}`,
  endpoint_id: 1,
  owner_id: 1,
  event: 'site.created',
  body: '{}',
  state: 'pending',
  attempts: 0,
  next_attempt_at: n,
  created_at: '2026-01-01T00:00:00.000Z',
});

const shape: ClaimShape = { kind: 'ahead', announced: 0, limit: 64, perEndpoint: 24, skipEndpoints: [], skipOwners: [] };

/**
 * A claim loop over `batches` (one per claim, then nothing), asking for two claims in all, whose
 * scheduler holds at most `room` deliveries. `pendingHandBack()` tells whether a hand-back was
 * out when each claim was made.
 */
function claimLoop(options: { batches: DeliveryRecord[][]; room: number; pendingHandBack: () => boolean } & Partial<ClaimerOptions<BatchRead>>) {
  const claims: Array<{ options: ClaimOptions; handBackPending: boolean }> = [];
  const store = {
    outbox: {
      claim: async (claimOptions: ClaimOptions) => {
        claims.push({ options: claimOptions, handBackPending: options.pendingHandBack() });
        return options.batches.shift() ?? [];
      },
      nextDueAt: async () => null,
    },
  } as unknown as Store;
  let held = 0;
  const scheduler = {
    nextClaim: () => (claims.length < 2 ? shape : null),
    foundNothing: () => undefined,
    hold: (deliveries: DeliveryRecord[]) => {
      const room = Math.max(0, options.room - held);
      held += Math.min(room, deliveries.length);
      return deliveries.slice(room);
    },
    announce: () => undefined,
    nextLaunchAt: null,
  } as unknown as Scheduler<BatchRead>;
  const claimer = new Claimer<BatchRead>({
    store,
    clock: () => 0,
    scheduler,
    owner: 'me',
    leaseMs: 60_000,
    pollMs: 60_000,
    read: () => ({ endpoints: Promise.resolve() }),
    knows: () => true,
    beforeTurn: () => undefined,
    launchReady: () => undefined,
    launch: () => undefined,
    handBack: async () => undefined,
    handingBack: () => null,
    failed: (error) => {
      throw error;
    },
    ...options,
  });
  return { claimer, claims };
}

describe('the claim loop', () => {
  it('gives back what the scheduler has no room for before it claims again', async () => {
    // The first claim brings six deliveries of one endpoint; the scheduler holds three and hands
    // back the rest. Claimed again while still leased, those three would be stepped over.
    let handBackPending = false;
    let finishHandBack: () => void = () => undefined;
    let handedBack: DeliveryRecord[] = [];
    const { claimer, claims } = claimLoop({
      batches: [[1, 2, 3, 4, 5, 6].map(delivery)],
      room: 3,
      pendingHandBack: () => handBackPending,
      handBack: (deliveries) => {
        handedBack = deliveries;
        handBackPending = true;
        return new Promise<void>((resolve) => {
          finishHandBack = () => {
            handBackPending = false;
            resolve();
          };
        });
      },
    });
    claimer.start();
    await expect.poll(() => handedBack.map((d) => d.id)).toEqual(['d4', 'd5', 'd6']);
    finishHandBack();
    await expect.poll(() => claims.length).toBe(2);
    expect(claims.map((c) => c.handBackPending)).toEqual([false, false]);
    await claimer.stop();
  });

  it('waits for the deliveries given back as held too long before it claims again', async () => {
    // A finished attempt's turn gave back deliveries held past their time (the dispatcher's
    // hand-back, not the loop's): the next claim waits until they are back in the outbox.
    let handBackPending = false;
    let finishHandBack: () => void = () => undefined;
    const staleHandBack = new Promise<void>((resolve) => {
      finishHandBack = () => {
        handBackPending = false;
        resolve();
      };
    });
    let launches = 0;
    const { claimer, claims } = claimLoop({
      batches: [[1, 2].map(delivery)],
      room: 64,
      pendingHandBack: () => handBackPending,
      launchReady: () => {
        // The second turn's launch finds deliveries held too long and gives them back.
        if (++launches === 2) handBackPending = true;
      },
      handingBack: () => (handBackPending ? staleHandBack : null),
    });
    claimer.start();
    await expect.poll(() => launches).toBeGreaterThanOrEqual(2);
    expect(claims).toHaveLength(1);
    finishHandBack();
    await expect.poll(() => claims.length).toBe(2);
    expect(claims.map((c) => c.handBackPending)).toEqual([false, false]);
    await claimer.stop();
  });
});

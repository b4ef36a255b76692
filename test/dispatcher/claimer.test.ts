// The claim loop against a store and a scheduler that stand in for the real ones: what it gives
// back is back in the outbox before it claims again.
import { describe, expect, it } from 'vitest';
import { Claimer, type BatchRead } from '../../src/daemon/dispatcher/claimer.js';
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

describe('the claim loop', () => {
  it('gives back what the scheduler has no room for before it claims again', async () => {
    // The first claim brings six deliveries of one endpoint; the scheduler holds three and hands
    // back the rest. Claimed again while still leased, those three would be stepped over.
    const claims: Array<{ options: ClaimOptions; handBackPending: boolean }> = [];
    let handBackPending = false;
    let finishHandBack: () => void = () => undefined;
    let handedBack: DeliveryRecord[] = [];
    const batches = [[1, 2, 3, 4, 5, 6].map(delivery)];
    const store = {
      outbox: {
        claim: async (options: ClaimOptions) => {
          claims.push({ options, handBackPending });
          return batches.shift() ?? [];
        },
        nextDueAt: async () => null,
      },
    } as unknown as Store;
    const shape: ClaimShape = { kind: 'ahead', announced: 0, limit: 64, perEndpoint: 24, skipEndpoints: [], skipOwners: [] };
    let held = 0;
    const scheduler = {
      nextClaim: () => (claims.length < 2 ? shape : null),
      foundNothing: () => undefined,
      hold: (deliveries: DeliveryRecord[]) => {
        const room = Math.max(0, 3 - held);
        held += Math.min(room, deliveries.length);
        return deliveries.slice(room);
      },
      announce: () => undefined,
      nextLaunchAt: null,
    } as unknown as Scheduler<BatchRead>;
    const claimer: Claimer<BatchRead> = new Claimer<BatchRead>({
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
      failed: (error) => {
        throw error;
      },
    });
    claimer.start();
    await expect.poll(() => handedBack.map((d) => d.id)).toEqual(['d4', 'd5', 'd6']);
    finishHandBack();
    await expect.poll(() => claims.length).toBe(2);
    expect(claims.map((c) => c.handBackPending)).toEqual([false, false]);
    await claimer.stop();
  });
});

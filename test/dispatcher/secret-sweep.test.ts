// An endpoint that gets no delivery still loses its previous signing secret once the rotation's
// overlap has ended: the dispatcher sweeps the store on its clock (the test moves it), on both
// backends. The sweep itself (which endpoints it forgets) is in rotation.test.ts.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SWEEP_EVERY_MS } from '../../src/daemon/dispatcher/secret-sweep.js';
import { startDispatcherHarness, type DispatcherHarness } from '../helpers/dispatcher-harness.js';

const WAIT = { timeout: 20_000, interval: 5 };

describe('expired previous secrets of idle endpoints', () => {
  let harness: DispatcherHarness | null = null;
  afterEach(async () => {
    await harness?.close();
    harness = null;
  });

  it('are gone from the store within a sweep of the overlap ending, with no delivery to the endpoint', async () => {
    const h = (harness = await startDispatcherHarness({ idle: true }));
    const owner = await h.user();
    const expires = h.now() + 90_000;
    const idle = await h.endpoint(owner, { secret: 'new-secret', previous_secret: 'old-secret', previous_secret_expires_at: new Date(expires).toISOString() });
    h.dispatcher.start();
    // The first sweep runs at the loop's first turn, within the overlap: the secret stays.
    h.advance(SWEEP_EVERY_MS);
    const stillKept = await h.store.webhooks.get(idle.id);
    expect(stillKept).toMatchObject({ previous_secret: 'old-secret' });
    // Past the expiry and a sweep's interval: gone, though nothing was delivered.
    h.advance(expires - h.now() + SWEEP_EVERY_MS);
    await vi.waitFor(async () => expect((await h.store.webhooks.get(idle.id))?.previous_secret ?? null).toBeNull(), WAIT);
    const stored = await h.store.webhooks.get(idle.id);
    expect(stored?.previous_secret_expires_at ?? null).toBeNull();
    expect(stored?.secret).toBe('new-secret');
    expect(h.sender.requests).toHaveLength(0);
  });
});

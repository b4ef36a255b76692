// Secret rotation with an overlap and custom headers, in the dispatcher in-process (a real store,
// a fake sender, a moved clock): during the overlap every attempt (retries too) verifies for a
// receiver holding only the old secret and for one holding only the new; past it the previous
// secret is neither sent nor kept. The API, the wire and the CLI are in endpoint-options.test.ts.
import { verify } from '@octokit/webhooks-methods';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RETRY_DELAY_MS } from '../../src/shared/webhook-protocol.js';
import { startDispatcherHarness, type DispatcherHarness, type SentRequest } from '../helpers/dispatcher-harness.js';

const WAIT = { timeout: 20_000, interval: 10 };
const OLD = 'old-secret-of-the-receiver';
const NEW = 'new-secret-after-rotation';
const whsec = (byte: number) => `whsec_${Buffer.alloc(32, byte).toString('base64')}`;

let harness: DispatcherHarness | null = null;
afterEach(async () => {
  await harness?.close();
  harness = null;
});

/** What a receiver holding only `secret` accepts: either signature header verifying with it. */
async function seedReceiverAccepts(secret: string, request: SentRequest): Promise<boolean> {
  const { body, headers } = request;
  const current = headers['X-Webhook-Signature'];
  const previous = headers['X-Webhook-Signature-Previous'];
  return (await verify(secret, body, current)) || (previous !== undefined && (await verify(secret, body, previous)));
}

/** The Standard Webhooks library's verdict for a receiver holding only `secret`. */
function standardReceiverAccepts(secret: string, request: SentRequest): boolean {
  try {
    new Webhook(secret).verify(request.body, request.headers);
    return true;
  } catch {
    return false;
  }
}

describe('secret rotation with an overlap', () => {
  it('signs every attempt during the overlap with both secrets, then drops the previous one from the store', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const hook = await h.endpoint(owner, { secret: OLD });
    const expires = h.now() + 60_000;
    await h.store.webhooks.update(hook.id, { secret: NEW, previous_secret: OLD, previous_secret_expires_at: new Date(expires).toISOString() });

    // Every first attempt fails once, so retries are covered too.
    const seen = new Set<string>();
    h.sender.handle((request) => {
      if (seen.has(request.deliveryId)) return { status: 200 };
      seen.add(request.deliveryId);
      return { status: 500 };
    });
    for (let i = 0; i < 3; i++) expect(await h.publish(owner, { n: i })).toBe(1);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(3), WAIT);
    await vi.waitFor(async () => expect((await h.log(hook.id)).length).toBe(3), WAIT);
    h.advance(RETRY_DELAY_MS);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(6), WAIT);

    for (const request of h.sender.requests) {
      expect(await verify(NEW, request.body, request.headers['X-Webhook-Signature'])).toBe(true);
      expect(await verify(OLD, request.body, request.headers['X-Webhook-Signature-Previous'])).toBe(true);
      expect(await seedReceiverAccepts(OLD, request)).toBe(true);
      expect(await seedReceiverAccepts(NEW, request)).toBe(true);
      expect(await seedReceiverAccepts('a-third-secret', request)).toBe(false);
    }

    // Past the expiry: one signature, and the first delivery drops the previous secret from the store.
    h.advance(expires - h.now());
    expect(await h.publish(owner, { n: 'after' })).toBe(1);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(7), WAIT);
    const after = h.sender.requests[6];
    expect(after.headers).not.toHaveProperty('X-Webhook-Signature-Previous');
    expect(await seedReceiverAccepts(NEW, after)).toBe(true);
    expect(await seedReceiverAccepts(OLD, after)).toBe(false);
    await vi.waitFor(async () => {
      const stored = await h.store.webhooks.get(hook.id);
      expect(stored?.previous_secret ?? null).toBeNull();
      expect(stored?.previous_secret_expires_at ?? null).toBeNull();
      expect(stored?.secret).toBe(NEW);
    }, WAIT);
  });

  it('lists both signatures in webhook-signature for Standard Webhooks endpoints, verified by the standardwebhooks library', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const [old, fresh] = [whsec(1), whsec(2)];
    const hook = await h.endpoint(owner, { secret: old, signature: 'standard-webhooks' });
    // The library checks the timestamp against the real time: the harness clock starts there.
    await h.store.webhooks.update(hook.id, {
      secret: fresh,
      previous_secret: old,
      previous_secret_expires_at: new Date(h.now() + 3_600_000).toISOString(),
    });
    for (let i = 0; i < 4; i++) expect(await h.publish(owner, { n: i })).toBe(1);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(4), WAIT);
    for (const request of h.sender.requests) {
      expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/=]+ v1,[A-Za-z0-9+/=]+$/);
      expect(standardReceiverAccepts(old, request)).toBe(true);
      expect(standardReceiverAccepts(fresh, request)).toBe(true);
      expect(standardReceiverAccepts(whsec(3), request)).toBe(false);
      expect(await seedReceiverAccepts(old, request)).toBe(true);
      expect(await seedReceiverAccepts(fresh, request)).toBe(true);
    }
  });

  it('sends no extra signature without a rotation (the defaults unchanged)', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    await h.endpoint(owner, { secret: OLD });
    await h.endpoint(owner, { secret: whsec(4), signature: 'standard-webhooks' });
    expect(await h.publish(owner)).toBe(2);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(2), WAIT);
    for (const request of h.sender.requests) {
      expect(request.headers).not.toHaveProperty('X-Webhook-Signature-Previous');
      if (request.headers['webhook-signature']) expect(request.headers['webhook-signature']).not.toContain(' ');
    }
  });

  it("forgets only the previous secrets whose overlap ended (housekeeping's sweep)", async () => {
    const h = (harness = await startDispatcherHarness({ idle: true }));
    const owner = await h.user();
    const now = h.now();
    const ended = await h.endpoint(owner, { secret: NEW, previous_secret: OLD, previous_secret_expires_at: new Date(now - 1).toISOString() });
    const running = await h.endpoint(owner, { secret: NEW, previous_secret: OLD, previous_secret_expires_at: new Date(now + 60_000).toISOString() });
    const none = await h.endpoint(owner, { secret: NEW });
    expect(await h.store.webhooks.forgetExpiredSecrets(new Date(now).toISOString())).toBe(1);
    const forgotten = await h.store.webhooks.get(ended.id);
    expect(forgotten?.secret).toBe(NEW);
    expect([forgotten?.previous_secret ?? null, forgotten?.previous_secret_expires_at ?? null]).toEqual([null, null]);
    expect(await h.store.webhooks.get(running.id)).toMatchObject({ secret: NEW, previous_secret: OLD });
    expect((await h.store.webhooks.get(none.id))?.previous_secret ?? null).toBeNull();
  });
});

describe('custom headers', () => {
  it('sends them with every attempt and keeps their values out of the delivery log', async () => {
    const h = (harness = await startDispatcherHarness());
    const owner = await h.user();
    const hook = await h.endpoint(owner, { headers: { Authorization: 'Bearer receiver-token-123', 'X-Tenant': 'acme' } });
    expect(await h.publish(owner)).toBe(1);
    await vi.waitFor(() => expect(h.sender.requests).toHaveLength(1), WAIT);
    expect(h.sender.requests[0].headers).toMatchObject({ Authorization: 'Bearer receiver-token-123', 'X-Tenant': 'acme' });
    const [entry] = await vi.waitFor(async () => {
      const log = await h.log(hook.id);
      expect(log).toHaveLength(1);
      return log;
    }, WAIT);
    expect(entry.request_headers).toMatchObject({ Authorization: '********', 'X-Tenant': '********' });
    expect(JSON.stringify(entry)).not.toContain('receiver-token-123');
  });
});

// The request limits' windows, in process (src/daemon/plugins/rate-limit.ts): a request that
// leaves room in its window does not wait for its count (the count goes on beside the handler),
// the one that reaches the limit waits for the store's count, and every request is counted once.
// The limits against a real daemon (headers, scopes, restarts) are in limits.test.ts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StoreUnavailableError } from '../../src/store/store.js';
import type { LimiterRecord } from '../../src/store/types.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

describe('request windows', () => {
  let t: TestApp;
  let user: { id: number; token: string };

  const me = () =>
    t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${user.token}` } }).then((res) => ({
      status: res.statusCode,
      remaining: Number(res.headers['x-ratelimit-remaining']),
    }));

  beforeEach(async () => {
    t = await buildTestApp();
    user = await t.addUser('u@example.com', 'customer');
    await t.store.settings.update({ rate_limit_user_per_minute: 4 });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await t.close();
  });

  it('answers while the window leaves room without waiting for the count, waits at the limit, and counts every request once', async () => {
    expect(await me()).toEqual({ status: 200, remaining: 3 });

    // From here the store's counts are held until the test lets them go.
    const count = t.store.limiter.countRequest.bind(t.store.limiter);
    const held: Array<() => void> = [];
    vi.spyOn(t.store.limiter, 'countRequest').mockImplementation(
      (key, windowMs, now) => new Promise<LimiterRecord>((resolve, reject) => held.push(() => count(key, windowMs, now).then(resolve, reject))),
    );
    expect(await me()).toEqual({ status: 200, remaining: 2 });
    expect(await me()).toEqual({ status: 200, remaining: 1 });
    expect(held).toHaveLength(2);

    // The fourth request reaches the limit: it is decided by the store's count, which is held.
    let settled = false;
    const fourth = me().finally(() => (settled = true));
    await vi.waitFor(() => expect(held).toHaveLength(3));
    expect(settled).toBe(false);
    for (const release of held.splice(0)) release();
    expect(await fourth).toEqual({ status: 200, remaining: 0 });
    vi.restoreAllMocks();

    const fifth = await me();
    expect(fifth).toEqual({ status: 429, remaining: 0 });
    expect((await t.store.limiter.get(`rl:user:${user.id}`))?.count).toBe(5);
  });

  it('a request admitted at once whose count fails is still answered; the next one waits for the store and gets its 503', async () => {
    expect((await me()).status).toBe(200);
    const failing = vi.spyOn(t.store.limiter, 'countRequest').mockRejectedValue(new StoreUnavailableError());
    expect((await me()).status).toBe(200);
    const refused = await t.app.inject({ method: 'GET', url: '/api/v1/auth/me', headers: { authorization: `Bearer ${user.token}` } });
    expect(failing).toHaveBeenCalledTimes(2);
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({ data: null, error: expect.any(String) });
  });
});

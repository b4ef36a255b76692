// Variant B of section 8: a failure counter per client IP. `login_max_attempts` failed logins or
// password-reset attempts within `login_lockout_minutes` lock the IP out of the routes marked
// `config: { lockout: true }` for that many minutes. Counters are durable writes, so a lockout
// survives a restart (even a crash). Active when `rate_limit_mode` is `lockout` or `both`.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import type { LimiterRecord } from '../../store/types.js';
import { KeyedLock } from '../auth/keyed-lock.js';

export interface Lockout {
  /** Counts a failed login or reset attempt of the request's IP, locking it at the threshold. */
  recordFailure(request: FastifyRequest): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    lockout: Lockout;
  }
  interface FastifyContextConfig {
    /** Refuse the route with 429 `too_many_attempts` while the client's IP is locked. */
    lockout?: boolean;
  }
}

export const LOCKOUT_KEY_PREFIX = 'lock:';

export function tooManyAttempts(remainingMs: number): ApiError {
  const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
  const minutes = Math.ceil(seconds / 60);
  return new ApiError(
    'TOO_MANY_ATTEMPTS',
    `too many failed attempts from your address: try again in ${minutes} minute${minutes === 1 ? '' : 's'}`,
    { data: { remaining_seconds: seconds }, headers: { 'retry-after': String(seconds) } },
  );
}

export default fp(
  async function lockout(app: FastifyInstance) {
    const serial = new KeyedLock();
    const keyOf = (request: FastifyRequest) => `${LOCKOUT_KEY_PREFIX}${request.ip}`;

    app.decorate<Lockout>('lockout', {
      async recordFailure(request) {
        const settings = await app.store.settings.get();
        if (settings.rate_limit_mode === 'requests') return;
        const key = keyOf(request);
        await serial.run(key, async () => {
          const now = app.clock();
          const periodMs = settings.login_lockout_minutes * 60_000;
          const previous = await app.store.limiter.get(key);
          if (previous && previous.locked_until > now) return; // already locked (a request that raced the lock)
          // A counting period starts with its first failure and lasts the lockout duration; a lock
          // that has ended starts a new one.
          const fresh = !previous || previous.locked_until !== 0 || now - previous.window_start >= periodMs;
          const record: LimiterRecord = fresh
            ? { key, count: 1, window_start: now, locked_until: 0 }
            : { ...previous, count: previous.count + 1 };
          if (record.count >= settings.login_max_attempts) record.locked_until = now + periodMs;
          await app.store.limiter.put(record, true);
        });
      },
    });

    const refuseLocked = async (request: FastifyRequest) => {
      const settings = await app.store.settings.get();
      if (settings.rate_limit_mode === 'requests') return;
      const record = await app.store.limiter.get(keyOf(request));
      const now = app.clock();
      if (record && record.locked_until > now) throw tooManyAttempts(record.locked_until - now);
    };
    // Only the routes marked `lockout` carry the check (after the global auth and limit hooks),
    // so every other request skips it entirely.
    app.addHook('onRoute', (route) => {
      if (!route.config?.lockout) return;
      route.onRequest = [...(route.onRequest ? [route.onRequest].flat() : []), refuseLocked] as typeof route.onRequest;
    });
  },
  { name: 'lockout', dependencies: ['errors'] },
);

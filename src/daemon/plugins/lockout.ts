// Variant B of section 8: an attempt counter per client IP. Every login or password-reset
// attempt is counted (one atomic hit in the store) BEFORE it is evaluated, so concurrent
// attempts cannot all pass a check that none of them has recorded yet: at most
// `login_max_attempts` are evaluated within `login_lockout_minutes`, and the attempt that fails
// at the threshold locks the IP out of the routes marked `config: { lockout: true }` for that
// many minutes. An attempt that turns out not to count (a good login) is taken back. Counters
// live in the store, so a lockout survives a restart and is shared by every daemon of a
// database. Active when `rate_limit_mode` is `lockout` or `both`.
//
// Second factors are counted per account as well (`secondFactor`): with the password known, many
// addresses could otherwise share out the guesses of a six-digit code. The same count-first rule
// holds, keyed by the user, in every `rate_limit_mode` (`totp_max_failures` 0 turns it off).
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors.js';

/** One counted attempt, to be settled once its outcome is known. */
export interface LockoutAttempt {
  /** It did not count after all (a good login, a request for the second factor). */
  release(): Promise<void>;
  /** It failed: the IP is locked once its attempts reached `login_max_attempts`. */
  fail(): Promise<void>;
}

export interface Lockout {
  /** Counts an attempt of the request's IP; throws 429 `too_many_attempts` when it may not be evaluated. */
  begin(request: FastifyRequest): Promise<LockoutAttempt>;
  /**
   * Counts a second-factor attempt of the account, whatever address it comes from; throws 429
   * `too_many_attempts` while the account's second factor is locked. `release` on a good code
   * clears the account's count; `fail` locks it once `totp_max_failures` codes were wrong.
   */
  secondFactor(request: FastifyRequest, userId: number): Promise<LockoutAttempt>;
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
/** Second-factor counters, one per account: `totp:<user id>`. */
export const TOTP_LOCKOUT_KEY_PREFIX = 'totp:';

export function totpLockoutKey(userId: number): string {
  return `${TOTP_LOCKOUT_KEY_PREFIX}${userId}`;
}

export function tooManyAttempts(remainingMs: number, what = 'too many failed attempts from your address'): ApiError {
  const seconds = Math.max(1, Math.ceil(remainingMs / 1000));
  const minutes = Math.ceil(seconds / 60);
  return new ApiError(
    'TOO_MANY_ATTEMPTS',
    `${what}: try again in ${minutes} minute${minutes === 1 ? '' : 's'}`,
    { data: { remaining_seconds: seconds }, headers: { 'retry-after': String(seconds) } },
  );
}

const ACCOUNT_LOCKED = 'too many wrong two-factor codes for this account';

const UNCOUNTED: LockoutAttempt = { release: async () => undefined, fail: async () => undefined };

/** A failure counter in the store: an address's logins, or an account's second factors. */
interface Counter {
  key: string;
  /** Attempts evaluated within a period; the one that fails at this count locks the key. */
  max: number;
  /** A counting period starts with its first attempt and lasts this long, as does a lock. */
  periodMs: number;
  refuse(remainingMs: number): ApiError;
  /** Told when the key is locked. */
  locked?(): void;
  /** How an attempt that did not count is taken back. */
  takeBack(key: string): Promise<unknown>;
  takeBackFailed: string;
}

/**
 * Counts one attempt before it is evaluated (one atomic hit), refusing it while the key is
 * locked or once the period's attempts are used up (failed, or still being evaluated).
 */
async function countAttempt(app: FastifyInstance, request: FastifyRequest, counter: Counter): Promise<LockoutAttempt> {
  const { key, max, periodMs } = counter;
  const now = app.clock();
  const record = await app.store.limiter.hit(key, periodMs, now);
  if (record.locked_until > now) throw counter.refuse(record.locked_until - now);
  if (record.count > max) {
    const locked = await app.store.limiter.lock(key, now + periodMs);
    counter.locked?.();
    throw counter.refuse(locked.locked_until - now);
  }
  const count = record.count;
  let settled = false;
  return {
    async release() {
      if (settled) return;
      settled = true;
      await counter.takeBack(key).catch((error: unknown) => request.log.error({ err: error }, counter.takeBackFailed));
    },
    async fail() {
      if (settled) return;
      settled = true;
      if (count >= max) {
        await app.store.limiter.lock(key, app.clock() + periodMs);
        counter.locked?.();
      }
    },
  };
}

export default fp(
  async function lockout(app: FastifyInstance) {
    const keyOf = (request: FastifyRequest) => `${LOCKOUT_KEY_PREFIX}${request.ip}`;
    const refused = (remainingMs: number) => {
      app.metrics.rateLimited('lockout');
      return tooManyAttempts(remainingMs);
    };

    app.decorate<Lockout>('lockout', {
      async begin(request) {
        const settings = app.settings.current();
        if (settings.rate_limit_mode === 'requests') return UNCOUNTED;
        return countAttempt(app, request, {
          key: keyOf(request),
          max: settings.login_max_attempts,
          periodMs: settings.login_lockout_minutes * 60_000,
          refuse: refused,
          locked: () => app.metrics.lockout(),
          // One attempt fewer: the address's other attempts of the period still count.
          takeBack: (key) => app.store.limiter.release(key),
          takeBackFailed: 'login attempt could not be taken back',
        });
      },

      async secondFactor(request, userId) {
        const settings = app.settings.current();
        if (settings.totp_max_failures === 0) return UNCOUNTED;
        return countAttempt(app, request, {
          key: totpLockoutKey(userId),
          max: settings.totp_max_failures,
          periodMs: settings.totp_lockout_minutes * 60_000,
          refuse: (remainingMs) => tooManyAttempts(remainingMs, ACCOUNT_LOCKED),
          // A good code: the wrong ones before it no longer count.
          takeBack: (key) => app.store.limiter.remove(key),
          takeBackFailed: 'second-factor count could not be cleared',
        });
      },
    });

    const refuseLocked = async (request: FastifyRequest) => {
      if (app.settings.current().rate_limit_mode === 'requests') return;
      const record = await app.store.limiter.get(keyOf(request));
      const now = app.clock();
      if (record && record.locked_until > now) throw refused(record.locked_until - now);
    };
    // Only the routes marked `lockout` carry the check (after the global auth and limit hooks),
    // so every other request skips it entirely. It refuses a locked IP before the body is read;
    // the attempt itself is counted by the route (begin) once the request is valid.
    app.addHook('onRoute', (route) => {
      if (!route.config?.lockout) return;
      route.onRequest = [...(route.onRequest ? [route.onRequest].flat() : []), refuseLocked] as typeof route.onRequest;
    });
  },
  { name: 'lockout', dependencies: ['errors', 'metrics'] },
);

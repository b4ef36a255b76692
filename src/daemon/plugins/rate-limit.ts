// Variant A of section 8, with @fastify/rate-limit: fixed one-minute windows for /auth/login
// (per IP), password reset (forgot + reset, one window per IP) and everything else under /api/v1
// (per user, per IP when unauthenticated). Limits are read from the settings on every request,
// so a change applies at once. Windows live in the store's limiter repository, counted by one
// atomic hit each (so several daemons of one database share them), and survive a restart.
// Active when `rate_limit_mode` is `requests` or `both`. Also prunes ended windows and lockouts
// of both variants.
import rateLimit, { type FastifyRateLimitStore } from '@fastify/rate-limit';
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import type { Settings } from '../../shared/settings.js';
import { routeOf } from './auth.js';

export type LimitScope = 'login' | 'reset' | 'user';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Which request-rate window the route counts against; `user` when absent. */
    limit?: LimitScope;
  }
}

export const WINDOW_MS = 60_000;
const PRUNE_EVERY_MS = 60_000;
/** Liveness and readiness checks (monitoring, `daemon start` waiting for the API) are not counted. */
export const EXEMPT_ROUTES = new Set(['/api/v1/health', '/api/v1/health/ready']);

const LIMIT_SETTING: Record<LimitScope, keyof Settings> = {
  login: 'rate_limit_login_per_minute',
  reset: 'rate_limit_reset_per_minute',
  user: 'rate_limit_user_per_minute',
};

/** A @fastify/rate-limit store over the limiter repository: one fixed window per key. */
function limiterStoreFor(app: FastifyInstance) {
  return class LimiterStore implements FastifyRateLimitStore {
    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow = WINDOW_MS): void {
      const now = app.clock();
      // The time left is taken when the count arrives: the reset header adds it to the clock
      // then, and time left as of the hit (before a database round trip) put the reset a second
      // late whenever the window ended within that round trip of a whole second.
      app.store.limiter.hit(key, timeWindow, now, { durable: false }).then(
        (record) => callback(null, { current: record.count, ttl: Math.max(0, record.window_start + timeWindow - app.clock()) }),
        (error: Error) => callback(error),
      );
    }

    child(): FastifyRateLimitStore {
      return this;
    }
  };
}

function clientKey(request: FastifyRequest, scope: LimitScope): string {
  if (scope !== 'user') return `rl:${scope}:${request.ip}`;
  return request.principal ? `rl:user:${request.principal.userId}` : `rl:ip:${request.ip}`;
}

export default fp(
  async function requestLimits(app: FastifyInstance) {
    await app.register(rateLimit, { global: false, store: limiterStoreFor(app) as never });

    const limiters = Object.fromEntries(
      (Object.keys(LIMIT_SETTING) as LimitScope[]).map((scope) => [
        scope,
        app.createRateLimit({
          timeWindow: WINDOW_MS,
          keyGenerator: (request) => clientKey(request, scope),
          max: () => app.settings.current()[LIMIT_SETTING[scope]] as number,
        }),
      ]),
    ) as Record<LimitScope, ReturnType<FastifyInstance['createRateLimit']>>;

    const limit = async (request: FastifyRequest, reply: FastifyReply) => {
      const scope = (!request.is404 && routeOf(request).config.limit) || 'user';
      const result = await limiters[scope](request);
      if (result.isAllowed) return;
      // The plugin's own headers give seconds until the reset; section 8 wants the Unix time.
      const resetAt = Math.ceil((app.clock() + result.ttl) / 1000);
      reply.header('x-ratelimit-limit', result.max);
      reply.header('x-ratelimit-remaining', result.remaining);
      reply.header('x-ratelimit-reset', resetAt);
      if (result.isExceeded) {
        app.metrics.rateLimited(scope);
        throw new ApiError('RATE_LIMITED', `too many requests: at most ${result.max} per minute here; retry in ${result.ttlInSeconds} s`, {
          headers: { 'retry-after': String(Math.max(1, result.ttlInSeconds)) },
        });
      }
    };
    // Every request passes here; in `lockout` mode (and for exempt routes) it goes on at once,
    // without a promise or a turn of the microtask queue.
    app.addHook('onRequest', (request, reply, done) => {
      if (!request.url.startsWith('/api/v1/') || EXEMPT_ROUTES.has(routeOf(request).url ?? '')) return done();
      if (app.settings.current().rate_limit_mode === 'lockout') return done();
      limit(request, reply).then(() => done(), done);
    });

    const prune = async () => {
      const settings = app.settings.current();
      const keepMs = Math.max(WINDOW_MS, settings.login_lockout_minutes * 60_000, settings.totp_lockout_minutes * 60_000);
      await app.store.limiter.prune(app.clock(), keepMs);
    };
    const timer = setInterval(() => void prune().catch(() => undefined), PRUNE_EVERY_MS);
    timer.unref();
    app.addHook('onClose', async () => clearInterval(timer));
  },
  { name: 'rate-limit', dependencies: ['errors', 'auth', 'metrics'] },
);

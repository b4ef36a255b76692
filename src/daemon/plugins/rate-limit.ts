// Variant A of section 8: fixed one-minute windows for /auth/login (per IP), password reset
// (forgot + reset, one window per IP) and everything else under /api/v1 (per user, per IP when
// unauthenticated). Limits are read from the settings on every request, so a change applies at
// once. Windows live in the store's limiter repository, counted by one atomic `countRequest`
// each (so several daemons of one database share them; written lazily, they survive a restart
// less the last second), and a request that leaves room in its window does not wait for it.
// Active when `rate_limit_mode` is `requests` or `both`. Also prunes ended windows and lockouts
// of both variants.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import type { Settings } from '../../shared/settings.js';
import type { LimiterRecord } from '../../store/types.js';
import { isUnavailable, UnavailableLog } from '../unavailable-log.js';
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

/** How old this daemon's view of a window may be to admit a request without waiting for its count. */
const VIEW_FRESH_MS = 1_000;

/**
 * A window as this daemon last heard of it from the store, and its hits the store has not
 * answered yet. Its reactions to the store's answers are made once per window, not per request.
 */
class WindowState {
  /** The store's newest answer: its count, the window's start and when it came (epoch ms); null before one. */
  view: { count: number; windowStart: number; answeredAt: number } | null = null;
  /** This daemon's hits of the window sent and not answered yet. */
  out = 0;
  /** The store counted a hit of ours (see RequestWindows.answered). */
  readonly answered: (record: LimiterRecord) => void;
  /** A hit failed (see RequestWindows.failed). */
  readonly failed: () => void;
  /** A hit admitted at once failed: failed, and said in the log. */
  readonly admittedFailed: (error: unknown) => void;
  /** `X-RateLimit-Limit` and `X-RateLimit-Reset` as sent, for #textsMax and #textsStart. */
  limitText = '';
  resetText = '';
  #textsMax = Number.NaN;
  #textsStart = Number.NaN;

  constructor(windows: RequestWindows) {
    this.answered = (record) => windows.answered(this, record);
    this.failed = () => windows.failed(this);
    this.admittedFailed = (error) => {
      windows.failed(this);
      windows.admittedUncounted(error);
    };
  }

  /**
   * Makes limitText and resetText those of `max` and the window starting at `windowStart`: made
   * again only when either changed, not for every request of the window.
   */
  textsFor(max: number, windowStart: number): this {
    if (max !== this.#textsMax || windowStart !== this.#textsStart) {
      this.#textsMax = max;
      this.#textsStart = windowStart;
      this.limitText = String(max);
      this.resetText = String(Math.ceil((windowStart + WINDOW_MS) / 1000));
    }
    return this;
  }
}

/** A request's place in its window: the count with it, and when the window started (epoch ms). */
interface Counted {
  count: number;
  windowStart: number;
  /** The window's state (for its header texts). */
  window: WindowState;
}

/** Windows known at most; past it they start over (each key's next request waits once). */
const WINDOWS_MOST = 10_000;

/**
 * Counts requests in the store's request windows (`limiter.countRequest`), every request
 * exactly once, and decides without waiting for the count when it can.
 *
 * While this daemon's view of a window is fresh (answered by the store within VIEW_FRESH_MS, in
 * the same window) and leaves room for the request after every hit of ours still out, the
 * request is admitted at once, and its hit is counted beside the handler. At the limit, with no
 * view or a stale one, the request waits for the store's count: the request that decides a 429
 * is decided by the shared count. On one daemon the view is exact (each hit of its own is in the
 * answered count or still out); with several daemons on one database it lacks the other
 * daemons' hits since the last answer (a round trip under load, VIEW_FRESH_MS at most), so a
 * client spread over them can pass the limit by that many requests before it gets 429.
 * @example
 * const windows = new RequestWindows(app);
 * const counted = windows.count('rl:user:7', 120);
 * const count = counted instanceof Promise ? (await counted).count : counted.view!.count + counted.out;
 */
class RequestWindows {
  readonly #windows = new Map<string, WindowState>();
  /** A store that is down fails every count admitted early: said once per interval. */
  readonly #unavailable = new UnavailableLog();

  constructor(private readonly app: FastifyInstance) {}

  /** Counts a request of `key`'s window: its window's state when admitted at once (its view holds the count), else the store's count. */
  count(key: string, max: number): WindowState | Promise<Counted> {
    const now = this.app.clock();
    let state = this.#windows.get(key);
    if (!state) {
      if (this.#windows.size >= WINDOWS_MOST) this.#windows.clear();
      this.#windows.set(key, (state = new WindowState(this)));
    }
    const { view } = state;
    const fresh = view !== null && now < view.windowStart + WINDOW_MS && now - view.answeredAt <= VIEW_FRESH_MS;
    const room = fresh && view.count + state.out + 1 < max;
    state.out++;
    const counting = this.app.store.limiter.countRequest(key, WINDOW_MS, now);
    if (!room) {
      const window = state;
      return counting.then(
        (record) => {
          this.answered(window, record);
          return { count: record.count, windowStart: record.window_start, window };
        },
        (error: unknown) => {
          this.failed(window);
          throw error;
        },
      );
    }
    // Admitted at once: one reaction (the window's own), and nothing waits for it. Its count is
    // the view's with every hit still out, this one included (read before anything else runs).
    counting.then(state.answered, state.admittedFailed);
    return state;
  }

  /** The store counted a hit of ours: its answer becomes the view when it is newer. */
  answered(window: WindowState, record: LimiterRecord): void {
    window.out--;
    const { view } = window;
    if (view === null) window.view = { count: record.count, windowStart: record.window_start, answeredAt: this.app.clock() };
    else if (view.windowStart !== record.window_start || view.count < record.count) {
      // The view is this window's own object (never handed out): updated in place.
      view.count = record.count;
      view.windowStart = record.window_start;
      view.answeredAt = this.app.clock();
    }
  }

  /** A hit failed: the view no longer says where the window is, so the next request waits for the store. */
  failed(window: WindowState): void {
    window.out--;
    window.view = null;
  }

  /** A hit admitted at once could not be counted: said in the log (a store that is down, once per interval). */
  admittedUncounted(error: unknown): void {
    const message = 'a request admitted at once could not be counted in its window';
    if (isUnavailable(error)) this.#unavailable.note(error, message, (details, line) => this.app.log.warn(details, line));
    else this.app.log.error({ err: error }, message);
  }
}

/** Window keys of users by id, kept so a request's key is not built (and hashed) again. */
const userKeys = new Map<number, string>();

function clientKey(request: FastifyRequest, scope: LimitScope): string {
  if (scope !== 'user') return `rl:${scope}:${request.ip}`;
  if (!request.principal) return `rl:ip:${request.ip}`;
  const { userId } = request.principal;
  let key = userKeys.get(userId);
  if (key === undefined) {
    if (userKeys.size >= WINDOWS_MOST) userKeys.clear();
    userKeys.set(userId, (key = `rl:user:${userId}`));
  }
  return key;
}

export default fp(
  async function requestLimits(app: FastifyInstance) {
    const windows = new RequestWindows(app);

    /**
     * Sets the headers of section 8 and refuses the request when it is over the limit. The limit
     * and reset texts are the window's (made once per window); only the remaining count is new.
     */
    const answer = (reply: FastifyReply, scope: LimitScope, max: number, count: number, windowStart: number, window: WindowState) => {
      const { limitText, resetText } = window.textsFor(max, windowStart);
      reply.header('x-ratelimit-limit', limitText);
      reply.header('x-ratelimit-remaining', String(count < max ? max - count : 0));
      reply.header('x-ratelimit-reset', resetText);
      if (count <= max) return;
      const resetMs = windowStart + WINDOW_MS;
      app.metrics.rateLimited(scope);
      const retryIn = Math.max(1, Math.ceil((resetMs - app.clock()) / 1000));
      throw new ApiError('RATE_LIMITED', `too many requests: at most ${max} per minute here; retry in ${retryIn} s`, {
        headers: { 'retry-after': String(retryIn) },
      });
    };

    // Every request passes here; in `lockout` mode, for exempt routes and while the window's view
    // leaves room, it goes on at once, without a promise or a turn of the microtask queue.
    app.addHook('onRequest', (request, reply, done) => {
      if (!request.url.startsWith('/api/v1/') || EXEMPT_ROUTES.has(routeOf(request).url ?? '')) return done();
      const settings = app.settings.current();
      if (settings.rate_limit_mode === 'lockout') return done();
      const scope = (!request.is404 && routeOf(request).config.limit) || 'user';
      const max = settings[LIMIT_SETTING[scope]] as number;
      const counted = windows.count(clientKey(request, scope), max);
      if (!(counted instanceof Promise)) {
        const view = counted.view!;
        try {
          answer(reply, scope, max, view.count + counted.out, view.windowStart, counted);
        } catch (error) {
          return done(error as Error);
        }
        return done();
      }
      counted.then((known) => answer(reply, scope, max, known.count, known.windowStart, known.window)).then(() => done(), done);
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

// Keeps an open stream's caller honest: the delivery stream and `listen` sessions were authorised
// once, when they opened, and may stay open for days. A watch re-checks the stream's credential
// whenever the change feed says something it depends on changed (its user, its key, a logout;
// on PostgreSQL every daemon hears these through LISTEN/NOTIFY) and when it expires, and ends
// the stream once the credential would no longer open it, or would open it with another role.
// Frames that come while a re-check is out wait for its answer, so a revoked caller gets none.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import type { Change } from '../../store/store.js';
import { presentedCredential, principalOf } from '../plugins/auth.js';
import { lookUpCaller } from './callers.js';
import type { Principal } from '../services.js';

/**
 * How often an expiring credential's end is looked for, by the daemon's clock (which tests move):
 * a key or token that expires ends its streams within this.
 */
export const EXPIRY_CHECK_MS = 1_000;

/** Frames held while a re-check is out, at most; past this the stream ends rather than buffers. */
const MAX_HELD_FRAMES = 10_000;

/**
 * Waits before asking the store again when a re-check could not be answered (a connection cut or
 * a database restarting): a blip does not end every open stream, and a store that stays down
 * ends them within about two seconds. Frames stay held meanwhile.
 */
const RECHECK_RETRY_MS = [100, 400, 1_500];

export interface CallerWatch {
  /** Runs `send` now if the caller is known to be valid, else once the re-check in flight confirms it (never if it fails). */
  pass(send: () => void): void;
  stop(): void;
}

/** Whether `change` may affect `principal`'s access: its user, its key, a logout, or a feed that reconnected. */
function concerns(change: Change, principal: Principal): boolean {
  if (change.kind !== 'record') return false;
  switch (change.collection) {
    case 'users':
      return change.id === null || change.id === principal.userId;
    case 'api_keys':
      return principal.via === 'api_key' && (change.id === null || change.id === principal.keyId);
    case 'revoked_tokens':
      return principal.via === 'jwt';
    case 'settings':
      // A PostgreSQL feed that reconnects announces settings: notices sent meanwhile were lost.
      return true;
    default:
      return false;
  }
}

/**
 * Watches the request's caller for as long as its stream is open; `end(reason)` is called once
 * when the caller no longer authenticates (the reason is the 401's message) or its role changed.
 *
 * @example
 * const watch = watchCaller(app, request, (reason) => endStream(reason));
 * app.dispatcher.onEntry((entry) => watch.pass(() => res.write(frame(entry))));
 */
export function watchCaller(app: FastifyInstance, request: FastifyRequest, end: (reason: string) => void): CallerWatch {
  const principal = principalOf(request);
  const credential = presentedCredential(request);
  let stopped = false;
  let checking: Promise<void> | null = null;
  let again = false;
  let held: Array<() => void> = [];
  let expiresAt = principal.session ? principal.session.exp * 1000 : Infinity;
  let expiryTimer: NodeJS.Timeout | undefined;

  const finish = (reason: string) => {
    if (stopped) return;
    watch.stop();
    end(reason);
  };

  const armExpiry = () => {
    if (expiryTimer || !Number.isFinite(expiresAt)) return;
    expiryTimer = setInterval(() => {
      if (app.clock() >= expiresAt) finish(principal.via === 'api_key' ? 'the API key has expired' : 'the token has expired');
    }, EXPIRY_CHECK_MS);
    expiryTimer.unref();
  };

  const check = (): Promise<void> =>
    (async () => {
      let failures = 0;
      do {
        again = false;
        if (!credential) return finish('authentication required');
        try {
          // Past the cache: the change that asked for this check may not have reached it yet.
          const fresh = await lookUpCaller(app, credential);
          if (fresh.principal.userId !== principal.userId || fresh.principal.role !== principal.role) {
            return finish(`the account's role changed to ${fresh.principal.role}; open the stream again`);
          }
          expiresAt = fresh.expiresAt;
          failures = 0;
        } catch (error) {
          if (error instanceof ApiError) return finish(error.message);
          if (failures < RECHECK_RETRY_MS.length) {
            await new Promise((resolve) => setTimeout(resolve, RECHECK_RETRY_MS[failures++]));
            again = true;
            continue;
          }
          // The store could not answer: the caller cannot be vouched for, so the stream ends and
          // its client reconnects (with Last-Event-ID, missing nothing) once it can be.
          request.log.warn({ err: error }, 'an open stream could not re-check its caller and was ended');
          return finish('the credential could not be checked again');
        }
      } while (again && !stopped);
      if (stopped) return;
      armExpiry();
      const ready = held;
      held = [];
      for (const send of ready) send();
    })().finally(() => {
      checking = null;
    });

  const recheck = () => {
    if (stopped) return;
    if (checking) {
      again = true;
      return;
    }
    checking = check();
  };

  const unsubscribe = app.store.changes.subscribe((change) => {
    if (concerns(change, principal)) recheck();
  });

  const watch: CallerWatch = {
    pass(send) {
      if (stopped) return;
      if (!checking) return send();
      if (held.length >= MAX_HELD_FRAMES) return finish('the stream fell too far behind');
      held.push(send);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      held = [];
      unsubscribe();
      clearInterval(expiryTimer);
    },
  };
  armExpiry();
  // An API key's expiry is known only from its record: one look at the start.
  if (principal.via === 'api_key') recheck();
  return watch;
}

// Whether the store's change feed has caught up with a request: every change committed before the
// request came has reached this daemon's caches. Asked at most once per request, however many
// caches it reads (its caller, then a listing): one answer given after the request came serves
// them all, so a request waits for one question to the database, not one per cache.
import type { FastifyRequest } from 'fastify';
import type { Store } from '../store/store.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's question to the feed (see caughtUpFor): null before it is asked, true once answered so. */
    caughtUp: Promise<boolean> | true | null;
  }
}

/**
 * `true` at once where the feed publishes before its writes resolve (the JSON store), or once
 * the request's question was answered so; else the request's one question (see
 * ChangeFeed.caughtUp).
 * @example
 * const fresh = caughtUpFor(app.store, request);
 * if (fresh === true || (await fresh)) return memo.get(view);
 */
export function caughtUpFor(store: Store, request: FastifyRequest): true | Promise<boolean> {
  const asked = request.caughtUp;
  if (asked) return asked;
  return (request.caughtUp = store.changes.caughtUp());
}

/** The request's question was answered true: later readers of the request need not wait for it. */
export function caughtUpAnswered(request: FastifyRequest): void {
  request.caughtUp = true;
}

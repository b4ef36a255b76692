// Whether the store's change feed has caught up with a request: every change committed before the
// request came has reached this daemon's caches. Asked at most once per request, however many
// caches it reads (its caller, then a listing): one answer given after the request came serves
// them all, so a request waits for one question to the database, not one per cache.
import type { FastifyRequest } from 'fastify';
import type { Store } from '../store/store.js';

const answers = new WeakMap<FastifyRequest, Promise<boolean>>();

/**
 * `true` at once where the feed publishes before its writes resolve (the JSON store); else the
 * request's one question (see ChangeFeed.caughtUp).
 * @example
 * const fresh = caughtUpFor(app.store, request);
 * if (fresh === true || (await fresh)) return memo.get(view);
 */
export function caughtUpFor(store: Store, request: FastifyRequest): true | Promise<boolean> {
  let answer = answers.get(request);
  if (answer) return answer;
  const asked = store.changes.caughtUp();
  if (asked === true) return true;
  answers.set(request, (answer = asked));
  return answer;
}

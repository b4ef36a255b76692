// The subscription context of section 2.7/4.2: which subscription a request works in, from
// `?subscription_id=` or a body field, else the customer's default. Shared by the routes of
// every hosted feature (sites today).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import type { Repositories } from '../../../store/store.js';
import type { SubscriptionRecord } from '../../../store/types.js';
import type { Principal } from '../../services.js';

/**
 * Resolves the subscription a request works in.
 * - `requested` given: that subscription; 404 when unknown, 403 when another customer's.
 * - absent, customer: their default subscription, or null when they have none.
 * - absent, admin: null (no narrowing: an admin works across all subscriptions).
 */
export async function resolveSubscription(
  store: Repositories,
  principal: Principal,
  requested: number | undefined,
): Promise<SubscriptionRecord | null> {
  if (requested !== undefined) {
    const subscription = await store.subscriptions.get(requested);
    if (!subscription) throw new ApiError('NOT_FOUND', `subscription ${requested} not found`);
    if (principal.role !== 'admin' && subscription.customer_id !== principal.userId) {
      throw new ApiError('FORBIDDEN', `subscription ${requested} belongs to another customer`);
    }
    return subscription;
  }
  if (principal.role === 'admin') return null;
  // The one marked default, else the oldest (the store's rule).
  return (await store.subscriptions.defaultFor(principal.userId)) ?? null;
}

/**
 * preValidation hook: the named query parameters must be written as plain decimal integers.
 * The schema alone would coerce `0x10`, `1e1` or ` 7` into numbers; section 2.7 wants an
 * integer, so anything else is a 400 before the schema runs.
 */
export function decimalQuery(...names: string[]) {
  // Callback style: the check is synchronous, so the request goes on in the same turn.
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void => {
    const query = request.query as Record<string, unknown>;
    for (const name of names) {
      const raw = query[name];
      if (raw === undefined) continue;
      if (typeof raw !== 'string' || !/^-?[0-9]{1,15}$/.test(raw)) {
        done(new ApiError('BAD_REQUEST', `query parameter ${name}: must be a single decimal integer`));
        return;
      }
    }
    done();
  };
}

// Contract rows of subscriptions and sites.
import { op, type Row } from './harness.js';

const SUBSCRIPTIONS = 'admin/subscriptions';
const SUSPEND = 'admin/subscriptions/{id}/suspend';

/** Subscriptions and sites. */
export const SOURCES_ROWS: Row[] = [
  // subscriptions
  { op: op('GET', 'subscriptions'), status: 200, case: "customer's own", as: 'customer' },
  { op: op('GET', 'subscriptions'), status: 200, case: 'admin sees all', as: 'admin' },
  { op: op('GET', 'subscriptions'), status: 422, case: 'limit out of range', as: 'customer', error: 'validation failed', query: { limit: 0 } },
  { op: op('GET', 'subscriptions'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('POST', SUBSCRIPTIONS), status: 201, case: 'for a customer', as: 'admin', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.domain() }) },
  { op: op('POST', SUBSCRIPTIONS), status: 400, case: 'main_domain missing', as: 'admin', error: 'bad request', body: (ctx) => ({ customer_id: ctx.customerId }) },
  { op: op('POST', SUBSCRIPTIONS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.domain() }) },
  { op: op('POST', SUBSCRIPTIONS), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.domain() }) },
  { op: op('POST', SUBSCRIPTIONS), status: 409, case: 'main domain taken', as: 'admin', error: 'conflict', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.ownMainDomain }) },
  { op: op('POST', SUBSCRIPTIONS), status: 422, case: 'customer_id is an admin', as: 'admin', error: 'validation failed', body: (ctx) => ({ customer_id: ctx.adminId, main_domain: ctx.domain() }) },
  { op: op('POST', SUSPEND), status: 200, case: 'an active subscription', as: 'admin', params: async (ctx) => ({ id: await ctx.newSubscription() }) },
  { op: op('POST', SUSPEND), status: 400, case: 'id not a number', as: 'admin', error: 'bad request', params: { id: 'abc' } },
  { op: op('POST', SUSPEND), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: (ctx) => ({ id: ctx.ownSubscriptionId }) },
  { op: op('POST', SUSPEND), status: 403, case: 'customer', as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.ownSubscriptionId }) },
  { op: op('POST', SUSPEND), status: 404, case: 'unknown id', as: 'admin', error: 'not found', params: { id: 999999 } },
  {
    op: op('POST', SUSPEND), status: 409, case: 'already suspended', as: 'admin', error: 'conflict',
    params: async (ctx) => {
      const id = await ctx.newSubscription();
      const first = await ctx.daemon.request('POST', `/admin/subscriptions/${id}/suspend`, { token: ctx.tokens.admin });
      if (first.status !== 200) throw new Error(`suspend failed: ${first.text}`);
      return { id };
    },
  },
  { op: op('POST', SUSPEND), status: 400, case: 'id 0', as: 'admin', error: 'bad request', params: { id: 0 } },

  // sites
  { op: op('GET', 'sites'), status: 200, case: "customer's default subscription", as: 'customer' },
  { op: op('GET', 'sites'), status: 200, case: 'a named subscription', as: 'customer', query: (ctx) => ({ subscription_id: ctx.ownSubscriptionId }) },
  { op: op('GET', 'sites'), status: 400, case: 'subscription_id not a number', as: 'customer', error: 'bad request', query: { subscription_id: 'abc' } },
  { op: op('GET', 'sites'), status: 422, case: 'limit out of range', as: 'customer', error: 'validation failed', query: { limit: 0 } },
  { op: op('GET', 'sites'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', 'sites'), status: 403, case: "another customer's subscription", as: 'customer', error: 'forbidden', query: (ctx) => ({ subscription_id: ctx.otherSubscriptionId }) },
  { op: op('GET', 'sites'), status: 404, case: 'unknown subscription', as: 'customer', error: 'not found', query: { subscription_id: 999999 } },
  { op: op('POST', 'sites'), status: 201, case: 'in the default subscription', as: 'customer', body: (ctx) => ({ domain: ctx.domain() }) },
  { op: op('POST', 'sites'), status: 400, case: 'admin without subscription_id', as: 'admin', error: 'bad request', body: (ctx) => ({ domain: ctx.domain() }) },
  { op: op('POST', 'sites'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: (ctx) => ({ domain: ctx.domain() }) },
  { op: op('POST', 'sites'), status: 403, case: "another customer's subscription", as: 'customer', error: 'forbidden', body: (ctx) => ({ domain: ctx.domain(), subscription_id: ctx.otherSubscriptionId }) },
  { op: op('POST', 'sites'), status: 404, case: 'unknown subscription', as: 'customer', error: 'not found', body: (ctx) => ({ domain: ctx.domain(), subscription_id: 999999 }) },
  { op: op('POST', 'sites'), status: 409, case: 'domain taken', as: 'customer', error: 'conflict', body: (ctx) => ({ domain: ctx.takenSiteDomain }) },
  { op: op('POST', 'sites'), status: 422, case: 'not a host name', as: 'customer', error: 'validation failed', body: { domain: 'not a host!' } },
  { op: op('DELETE', 'sites/{id}'), status: 200, case: 'own site', as: 'customer', params: async (ctx) => ({ id: await ctx.newSite(ctx.ownSubscriptionId) }) },
  { op: op('DELETE', 'sites/{id}'), status: 400, case: 'id not a number', as: 'customer', error: 'bad request', params: { id: 'abc' } },
  { op: op('DELETE', 'sites/{id}'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: (ctx) => ({ id: ctx.otherSiteId }) },
  { op: op('DELETE', 'sites/{id}'), status: 403, case: "another customer's site", as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.otherSiteId }) },
  { op: op('DELETE', 'sites/{id}'), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 } },
  { op: op('DELETE', 'sites/{id}'), status: 400, case: 'id 0', as: 'customer', error: 'bad request', params: { id: 0 } },
];

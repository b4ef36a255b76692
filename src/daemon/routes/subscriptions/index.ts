// Subscriptions (CONTRACT section 4): GET /subscriptions (own; admin: all), and for admins
// POST /admin/subscriptions and POST /admin/subscriptions/:id/suspend, which publish
// subscription.created and subscription.suspended owned by the customer.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { normaliseHostname } from '../../../shared/hostname.js';
import { CreateSubscriptionBody, Subscription } from '../../../shared/api/subscriptions.js';
import { StoreConflictError } from '../../../store/store.js';
import type { SubscriptionRecord } from '../../../store/types.js';
import { principalOf } from '../../plugins/auth.js';
import { pageOf, sendLink } from '../pages.js';
import { PageQuery } from '../../../shared/api/pages.js';

export function subscriptionView(s: SubscriptionRecord): Subscription {
  return {
    id: s.id,
    customer_id: s.customer_id,
    main_domain: s.main_domain,
    is_default: s.is_default,
    status: s.status,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}

export default async function subscriptionRoutes(app: FastifyInstance) {
  app.get<{ Querystring: PageQuery }>(
    '/subscriptions',
    {
      schema: {
        tags: ['subscriptions'],
        summary: "The caller's subscriptions (admin: every customer's), oldest first, a page at a time",
        security,
        querystring: PageQuery,
        response: { 200: EnvelopeOf(Type.Array(Subscription)), ...errorResponses(400, 401, 422) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const list =
        principal.role === 'admin' ? await app.store.subscriptions.list() : await app.store.subscriptions.listByCustomer(principal.userId);
      const { items, next } = pageOf(request, list, request.query);
      sendLink(reply, next);
      return ok(items.map(subscriptionView));
    },
  );

  app.post<{ Body: CreateSubscriptionBody }>(
    '/admin/subscriptions',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin', 'subscriptions'],
        summary: 'Create a subscription for a customer; publishes subscription.created',
        description:
          "A customer's first subscription, or one created with `is_default: true`, becomes their default; " +
          'the previous default loses the mark. `main_domain` is unique across subscriptions and may not be ' +
          "another customer's site (409).",
        security,
        body: CreateSubscriptionBody,
        response: { 201: EnvelopeOf(Subscription), ...errorResponses(400, 401, 403, 409, 422, 503) },
      },
    },
    async (request, reply) => {
      const { customer_id: customerId, is_default: wantsDefault = false } = request.body;
      const domain = normaliseHostname(request.body.main_domain);
      if ('error' in domain) throw new ApiError('VALIDATION_FAILED', `main_domain: ${domain.error}`);
      // The whole write goes to the store in one call: the subscription (with the customer's
      // default mark moved; their first is the default whatever was asked) and its
      // subscription.created event commit together. The store keeps main domains unique and
      // apart from other customers' sites, and takes only a customer.
      const now = new Date(app.clock()).toISOString();
      const subscription = await app.store.subscriptions
        .create(
          { customer_id: customerId, main_domain: domain.value, is_default: wantsDefault, status: 'active', created_at: now, updated_at: now },
          app.events.created('subscription.created', 'subscription_id', { main_domain: domain.value }),
        )
        .catch(async (error: unknown) => {
          if (error instanceof StoreConflictError) {
            if (error.constraint === 'subscriptions.main_domain') {
              throw new ApiError('CONFLICT', `a subscription with main domain ${domain.value} already exists`);
            }
            if (error.constraint === 'domains.owner') throw new ApiError('CONFLICT', `${domain.value} is a site of another customer`);
            if (error.constraint === 'users.customer') {
              // Refused before anything was written; one read words why.
              const user = await app.store.users.get(customerId);
              if (!user) throw new ApiError('VALIDATION_FAILED', `customer_id: user ${customerId} does not exist`);
              throw new ApiError('VALIDATION_FAILED', `customer_id: user ${customerId} has role ${user.role}, not customer`);
            }
          }
          throw error;
        });
      reply.code(201);
      return ok(subscriptionView(subscription), 'subscription created');
    },
  );

  app.post<{ Params: IdParam }>(
    '/admin/subscriptions/:id/suspend',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin', 'subscriptions'],
        summary: 'Suspend a subscription; publishes subscription.suspended',
        description: 'A suspended subscription keeps its sites (they can be listed and deleted) but accepts no new ones. Suspending it again is a 409.',
        security,
        params: IdParam,
        response: { 200: EnvelopeOf(Subscription), ...errorResponses(400, 401, 403, 404, 409, 503) },
      },
    },
    async (request) => {
      const { id } = request.params;
      // The status and its subscription.suspended event commit together, in one store call; of
      // several suspensions at once, one suspends and the others answer 409.
      const subscription = await app.store.subscriptions
        .setStatus(id, 'suspended', new Date(app.clock()).toISOString(), app.events.created('subscription.suspended', 'subscription_id', {}, ['main_domain']))
        .catch((error: unknown) => {
          if (error instanceof StoreConflictError) {
            if (error.constraint === 'subscriptions.missing') throw new ApiError('NOT_FOUND', `subscription ${id} not found`);
            if (error.constraint === 'subscriptions.status') throw new ApiError('CONFLICT', `subscription ${id} is already suspended`);
          }
          throw error;
        });

      return ok(subscriptionView(subscription), 'subscription suspended');
    },
  );
}

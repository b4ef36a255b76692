// Subscriptions (CONTRACT section 4): GET /subscriptions (own; admin: all), and for admins
// POST /admin/subscriptions and POST /admin/subscriptions/:id/suspend, which publish
// subscription.created and subscription.suspended owned by the customer.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { normaliseHostname } from '../../../shared/hostname.js';
import { CreateSubscriptionBody, Subscription } from '../../../shared/api/subscriptions.js';
import type { SubscriptionRecord } from '../../../store/types.js';
import { principalOf } from '../../plugins/auth.js';
import { domainChanges, publishChange } from './changes.js';

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
  app.get(
    '/subscriptions',
    {
      schema: {
        tags: ['subscriptions'],
        summary: "The caller's subscriptions (admin: every customer's), oldest first",
        security,
        response: { 200: EnvelopeOf(Type.Array(Subscription)), ...errorResponses(401) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const list =
        principal.role === 'admin'
          ? await app.store.subscriptions.list()
          : await app.store.subscriptions.list((s) => s.customer_id === principal.userId);
      return ok(list.sort((a, b) => a.id - b.id).map(subscriptionView));
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
      const { subscription, previousDefault } = await domainChanges.run(async () => {
        const customer = await app.store.users.get(customerId);
        if (!customer) throw new ApiError('VALIDATION_FAILED', `customer_id: user ${customerId} does not exist`);
        if (customer.role !== 'customer') {
          throw new ApiError('VALIDATION_FAILED', `customer_id: user ${customerId} has role ${customer.role}, not customer`);
        }
        const taken = await app.store.subscriptions.find((s) => s.main_domain === domain.value);
        if (taken) throw new ApiError('CONFLICT', `a subscription with main domain ${domain.value} already exists (subscription ${taken.id})`);
        const site = await app.store.sites.find((s) => s.domain === domain.value);
        const siteOwner = site && (await app.store.subscriptions.get(site.subscription_id))?.customer_id;
        if (site && siteOwner !== customerId) throw new ApiError('CONFLICT', `${domain.value} is a site of another customer`);

        const own = await app.store.subscriptions.list((s) => s.customer_id === customerId);
        const isDefault = own.length === 0 || wantsDefault;
        // A copy taken before the change, for the undo below.
        const previous = own.find((s) => s.is_default);
        const previousDefault = isDefault && previous ? { ...previous } : undefined;
        const now = new Date(app.clock()).toISOString();
        const subscription = await app.store.subscriptions.create({
          customer_id: customerId,
          main_domain: domain.value,
          is_default: isDefault,
          status: 'active',
          created_at: now,
          updated_at: now,
        });
        return { subscription, previousDefault };
      });

      await publishChange(
        request,
        { event: 'subscription.created', data: { subscription_id: subscription.id, main_domain: subscription.main_domain }, owner_id: customerId },
        `subscription ${subscription.id}`,
        () =>
          domainChanges.run(async () => {
            await app.store.subscriptions.remove(subscription.id);
            if (previousDefault) {
              await app.store.subscriptions.update(previousDefault.id, { is_default: true, updated_at: previousDefault.updated_at });
            }
          }),
      );
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
      const { subscription, before } = await domainChanges.run(async () => {
        const current = await app.store.subscriptions.get(id);
        if (!current) throw new ApiError('NOT_FOUND', `subscription ${id} not found`);
        if (current.status === 'suspended') throw new ApiError('CONFLICT', `subscription ${id} is already suspended`);
        const before = { status: current.status, updated_at: current.updated_at };
        const updated = await app.store.subscriptions.update(id, { status: 'suspended', updated_at: new Date(app.clock()).toISOString() });
        return { subscription: updated!, before };
      });

      await publishChange(
        request,
        { event: 'subscription.suspended', data: { subscription_id: id, main_domain: subscription.main_domain }, owner_id: subscription.customer_id },
        `subscription ${id}`,
        () => domainChanges.run(() => app.store.subscriptions.update(id, before)),
      );
      return ok(subscriptionView(subscription), 'subscription suspended');
    },
  );
}

// Websites (section 4.2, CONTRACT section 4): GET /sites in the subscription context,
// POST /sites and DELETE /sites/:id, which publish site.created and site.deleted owned by the
// subscription's customer.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { normaliseHostname } from '../../../shared/hostname.js';
import { CreateSiteBody, Site, SubscriptionContextQuery } from '../../../shared/api/sites.js';
import type { SiteRecord } from '../../../store/types.js';
import { principalOf } from '../../plugins/auth.js';
import { domainChanges, publishChange } from '../subscriptions/changes.js';
import { resolveSubscription } from '../subscriptions/context.js';
import { ListMemo } from '../list-memo.js';

function siteView(s: SiteRecord): Site {
  return { id: s.id, subscription_id: s.subscription_id, domain: s.domain, created_at: s.created_at };
}

export default async function siteRoutes(app: FastifyInstance) {
  const lists = new ListMemo();

  app.get<{ Querystring: SubscriptionContextQuery }>(
    '/sites',
    {
      schema: {
        tags: ['sites'],
        summary: 'Websites of a subscription',
        description:
          'With `subscription_id`: that subscription\'s sites (another customer\'s: 403; unknown: 404; not a decimal integer: 400). ' +
          'Without it, a customer gets the sites of their default subscription (the one marked default, else the oldest; ' +
          'none when they have no subscription) and an admin gets every site.',
        security,
        querystring: SubscriptionContextQuery,
        response: { 200: EnvelopeOf(Type.Array(Site)), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      // Authorisation and the choice of subscription run on every request; only the listing
      // itself is memoised, per subscription (or "all" for an admin), until a site changes.
      const subscription = await resolveSubscription(app.store, principal, request.query.subscription_id);
      const view = subscription ? `subscription:${subscription.id}` : principal.role === 'admin' ? 'all' : 'none';
      return lists.send(reply, () => app.store.sites.revision(), view, async () => {
        let sites: SiteRecord[];
        if (subscription) sites = await app.store.sites.list((s) => s.subscription_id === subscription.id);
        else if (principal.role === 'admin') sites = await app.store.sites.list();
        else sites = [];
        return ok(sites.sort((a, b) => a.id - b.id).map(siteView));
      });
    },
  );

  app.post<{ Body: CreateSiteBody }>(
    '/sites',
    {
      schema: {
        tags: ['sites'],
        summary: 'Create a website; publishes site.created',
        description:
          'The subscription is chosen as for GET /sites: `subscription_id`, else the customer\'s default ' +
          '(422 when they have none). Admins must name the subscription (400 without it). A suspended subscription ' +
          'accepts no new sites (409). `domain` is unique across sites (409) and may not be the main domain of another ' +
          'customer\'s subscription (409).',
        security,
        body: CreateSiteBody,
        response: { 201: EnvelopeOf(Site), ...errorResponses(400, 401, 403, 404, 409, 422, 503) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const domain = normaliseHostname(request.body.domain);
      if ('error' in domain) throw new ApiError('VALIDATION_FAILED', `domain: ${domain.error}`);
      if (principal.role === 'admin' && request.body.subscription_id === undefined) {
        throw new ApiError('BAD_REQUEST', 'subscription_id: is required when an admin creates a site');
      }

      const { site, customerId } = await domainChanges.run(async () => {
        const subscription = await resolveSubscription(app.store, principal, request.body.subscription_id);
        if (!subscription) {
          throw new ApiError('VALIDATION_FAILED', 'subscription_id: you have no subscription to create the site in; ask an admin for one');
        }
        if (subscription.status !== 'active') {
          throw new ApiError('CONFLICT', `subscription ${subscription.id} is ${subscription.status} and accepts no new sites`);
        }
        const taken = await app.store.sites.find((s) => s.domain === domain.value);
        if (taken) throw new ApiError('CONFLICT', `a site with domain ${domain.value} already exists`);
        const claimed = await app.store.subscriptions.find((s) => s.main_domain === domain.value && s.customer_id !== subscription.customer_id);
        if (claimed) throw new ApiError('CONFLICT', `${domain.value} is the main domain of another customer's subscription`);
        const site = await app.store.sites.insert({
          subscription_id: subscription.id,
          domain: domain.value,
          created_at: new Date(app.clock()).toISOString(),
        });
        return { site, customerId: subscription.customer_id };
      });

      await publishChange(
        request,
        { event: 'site.created', data: { site_id: site.id, domain: site.domain }, owner_id: customerId },
        `site ${site.id}`,
        () => domainChanges.run(() => app.store.sites.remove(site.id)),
      );
      reply.code(201);
      return ok(siteView(site), 'site created');
    },
  );

  app.delete<{ Params: IdParam }>(
    '/sites/:id',
    {
      schema: {
        tags: ['sites'],
        summary: 'Delete a website; publishes site.deleted',
        security,
        params: IdParam,
        response: { 200: EnvelopeOf(Type.Object({ id: Type.Integer() })), ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const { id } = request.params;
      const { site, customerId } = await domainChanges.run(async () => {
        const site = await app.store.sites.get(id);
        if (!site) throw new ApiError('NOT_FOUND', `site ${id} not found`);
        const subscription = await app.store.subscriptions.get(site.subscription_id);
        // Sites of a deleted customer go with their subscriptions, so a site always has one.
        const customerId = subscription?.customer_id ?? null;
        if (principal.role !== 'admin' && customerId !== principal.userId) {
          throw new ApiError('FORBIDDEN', `site ${id} belongs to another customer`);
        }
        await app.store.sites.remove(id);
        return { site, customerId };
      });

      // A removed record cannot be put back under its id, so a failed publish is reported, not undone.
      await publishChange(request, { event: 'site.deleted', data: { site_id: site.id, domain: site.domain }, owner_id: customerId }, `site ${id} deletion`);
      return ok({ id }, 'site deleted');
    },
  );
}

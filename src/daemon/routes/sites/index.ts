// Websites (section 4.2, CONTRACT section 4): GET /sites in the subscription context,
// POST /sites and DELETE /sites/:id, which publish site.created and site.deleted owned by the
// subscription's customer.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { normaliseHostname } from '../../../shared/hostname.js';
import { CreateSiteBody, Site, ListSitesQuery } from '../../../shared/api/sites.js';
import { StoreConflictError } from '../../../store/store.js';
import type { SiteRecord } from '../../../store/types.js';
import { principalOf } from '../../plugins/auth.js';
import type { Principal } from '../../services.js';
import { resolveSubscription } from '../subscriptions/context.js';
import { ListMemo } from '../list-memo.js';
import { pageOf } from '../pages.js';

function siteView(s: SiteRecord): Site {
  return { id: s.id, subscription_id: s.subscription_id, domain: s.domain, created_at: s.created_at };
}

/** The store's rules that a new site can break, as the messages users get. */
function siteConflict(error: unknown, domain: string, subscriptionId: number | undefined): never {
  if (error instanceof StoreConflictError) {
    switch (error.constraint) {
      case 'sites.domain':
        throw new ApiError('CONFLICT', `a site with domain ${domain} already exists`);
      case 'domains.owner':
        throw new ApiError('CONFLICT', `${domain} is the main domain of another customer's subscription`);
      case 'subscriptions.missing':
        throw new ApiError('NOT_FOUND', `subscription ${subscriptionId} not found`);
      case 'subscriptions.forbidden':
        throw new ApiError('FORBIDDEN', `subscription ${subscriptionId} belongs to another customer`);
      case 'subscriptions.none':
        throw new ApiError('VALIDATION_FAILED', 'subscription_id: you have no subscription to create the site in; ask an admin for one');
      case 'subscriptions.inactive':
        // The store names the subscription and its status.
        throw new ApiError('CONFLICT', error.message);
    }
  }
  throw error;
}

/** Whose view a listing is: every admin sees the same one, a customer their own. */
function callerView(principal: Principal): string {
  return principal.role === 'admin' ? 'admin' : `customer:${principal.userId}`;
}

/** Views without a query (the usual `GET /sites`) by customer id, kept so the key is not built (and hashed) again. */
const plainViews = new Map<number, string>();
const PLAIN_VIEWS_MOST = 10_000;

/** The memo key of the caller's listing without a query: callerView with three empty parts. */
function plainView(principal: Principal): string {
  if (principal.role === 'admin') return 'admin:::';
  let view = plainViews.get(principal.userId);
  if (view === undefined) {
    if (plainViews.size >= PLAIN_VIEWS_MOST) plainViews.clear();
    plainViews.set(principal.userId, (view = `${callerView(principal)}:::`));
  }
  return view;
}

export default async function siteRoutes(app: FastifyInstance) {
  // Answers per caller's view, dropped on every change of sites or subscriptions (which decide
  // the subscription a view shows and who may see it) the store reports.
  const lists = new ListMemo(app.store, (change) => change.kind === 'record' && (change.collection === 'sites' || change.collection === 'subscriptions'));
  app.addHook('onClose', async () => lists.close());

  app.get<{ Querystring: ListSitesQuery }>(
    '/sites',
    {
      schema: {
        tags: ['sites'],
        summary: 'Websites of a subscription',
        description:
          'With `subscription_id`: that subscription\'s sites (another customer\'s: 403; unknown: 404; not a decimal integer: 400). ' +
          'Without it, a customer gets the sites of their default subscription (the one marked default, else the oldest; ' +
          'none when they have no subscription) and an admin gets every site. In id order, a page at a time ' +
          '(`limit`, `after`; the next page in the `Link` header).',
        security,
        querystring: ListSitesQuery,
        response: { 200: EnvelopeOf(Type.Array(Site)), ...errorResponses(400, 401, 403, 404) },
      },
    },
    (request, reply) => {
      const principal = principalOf(request);
      // The whole answer is memoised per caller and query: the choice of subscription and the
      // authorisation (an answer of 403 or 404 is thrown, never kept) depend on the caller's id
      // and role and on subscriptions, whose changes drop the memo as site changes do.
      const { subscription_id: subscriptionId, after, limit } = request.query;
      const view =
        subscriptionId === undefined && after === undefined && limit === undefined
          ? plainView(principal)
          : `${callerView(principal)}:${subscriptionId ?? ''}:${after ?? ''}:${limit ?? ''}`;
      const build = async () => {
        const subscription = await resolveSubscription(app.store, principal, request.query.subscription_id);
        let sites: SiteRecord[];
        if (subscription) sites = await app.store.sites.listBySubscription(subscription.id);
        else if (principal.role === 'admin') sites = await app.store.sites.list();
        else sites = [];
        const { items, next } = pageOf(request, sites, request.query);
        return { envelope: ok(items.map(siteView)), next };
      };
      // A memoised answer is sent in this turn: nothing is returned then (the reply is sent).
      const sent = lists.send(reply, view, build);
      return sent instanceof Promise ? sent : undefined;
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

      // The whole write goes to the store in one call: the subscription chosen and checked, the
      // site inserted (the store keeps domains unique and apart between customers) and its
      // site.created event, committed together (one round trip on PostgreSQL).
      const site = await app.store.sites
        .create(
          {
            subscription_id: request.body.subscription_id,
            customer_id: principal.role === 'admin' ? null : principal.userId,
            domain: domain.value,
            created_at: new Date(app.clock()).toISOString(),
          },
          app.events.created('site.created', 'site_id', { domain: domain.value }),
        )
        .catch((error: unknown) => siteConflict(error, domain.value, request.body.subscription_id));
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
      // The whole write goes to the store in one call: the site removed if the caller may, and
      // its site.deleted event (owned by the site's customer), committed together.
      await app.store.sites
        .delete(id, principal.role === 'admin' ? null : principal.userId, app.events.created('site.deleted', 'site_id', {}, ['domain']))
        .catch((error: unknown) => {
          if (error instanceof StoreConflictError) {
            if (error.constraint === 'sites.missing') throw new ApiError('NOT_FOUND', `site ${id} not found`);
            if (error.constraint === 'sites.forbidden') throw new ApiError('FORBIDDEN', `site ${id} belongs to another customer`);
          }
          throw error;
        });
      return ok({ id }, 'site deleted');
    },
  );
}

// Webhook endpoints: POST/GET /webhooks, GET/PUT/DELETE /webhooks/:id. Owner-scoped (another
// customer's endpoint is 403; admins manage all). The secret is stored to sign deliveries and
// never leaves the daemon.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { normaliseEventList } from '../../../shared/events.js';
import {
  CreateWebhookBody,
  DeletedWebhook,
  ListWebhooksQuery,
  UpdateWebhookBody,
  WebhookEndpoint,
} from '../../../shared/api/webhooks.js';
import type { WebhookRecord } from '../../../store/types.js';
import { customHeadersProblem, secretProblem, type SignatureScheme } from '../../dispatcher/headers.js';
import { privateTargetsAllowed } from '../../dispatcher/plugin.js';
import { blockedLiteral } from '../../dispatcher/ssrf.js';
import { assertOwnership, principalOf } from '../../plugins/auth.js';
import { endpointView, endpointViews } from './endpoint-view.js';
import { PAGE_MAX } from '../../../shared/api/pages.js';
import { pageOf, sendLink } from '../pages.js';
import { RETRY_SCHEDULE_MAX_TOTAL_SECONDS } from '../../../shared/webhook-protocol.js';

const tags = ['webhooks'];

/** 422 unless `raw` is an absolute https: URL whose host is not a blocked literal address. */
export async function checkTargetUrl(app: FastifyInstance, raw: string): Promise<string> {
  const value = raw.trim();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ApiError('VALIDATION_FAILED', 'url: must be an absolute https: URL');
  }
  if (url.protocol !== 'https:') throw new ApiError('VALIDATION_FAILED', `url: must use the https: scheme, not ${url.protocol}`);
  if (!url.hostname) throw new ApiError('VALIDATION_FAILED', 'url: must name a host');
  // The URL is shown in answers, logs and the TUI: it must not carry a password.
  if (url.username || url.password) {
    throw new ApiError('VALIDATION_FAILED', 'url: must not contain credentials (user:password@); authenticate receivers with the signature');
  }
  const blocked = blockedLiteral(url);
  if (blocked && !privateTargetsAllowed(app)) {
    throw new ApiError(
      'VALIDATION_FAILED',
      `url: ${blocked.address} is a ${blocked.reason} address; webhook targets in private networks are not allowed ` +
        '(admin setting webhook_allow_private_networks). For a receiver on this machine, start the daemon with ' +
        '--allow-private-webhooks and let it trust the receiver\'s certificate: ' +
        'NODE_EXTRA_CA_CERTS=receiver-cert.pem panelctl daemon start --allow-private-webhooks',
    );
  }
  return value;
}

/** 422 when the secret cannot sign with the scheme (standard-webhooks needs a whsec_ secret). */
export function checkSecret(scheme: SignatureScheme, secret: string): void {
  const problem = secretProblem(scheme, secret);
  if (problem) throw new ApiError('VALIDATION_FAILED', problem);
}

/** 422 when the schedule's delays add up to more than the contract allows (the schema checks the rest). */
function checkRetrySchedule(schedule: number[]): number[] {
  const total = schedule.reduce((sum, seconds) => sum + seconds, 0);
  if (total > RETRY_SCHEDULE_MAX_TOTAL_SECONDS) {
    throw new ApiError('VALIDATION_FAILED', `retry_schedule: the delays add up to ${total} s; at most ${RETRY_SCHEDULE_MAX_TOTAL_SECONDS} s (3 days) in all`);
  }
  return schedule;
}

/** 422 when the custom headers cannot be sent (reserved names, CR/LF, too many); {} becomes null. */
function checkHeaders(headers: Record<string, string>): Record<string, string> | null {
  const problem = customHeadersProblem(headers);
  if (problem) throw new ApiError('VALIDATION_FAILED', problem);
  return Object.keys(headers).length > 0 ? headers : null;
}

/**
 * The endpoint's headers after an update's `headers`: null removes them all, a name with null
 * removes that one, a name with a value sets it (replacing the same name in any case). The
 * values are never shown, so a client changes one header without sending the others again.
 */
function mergeHeaders(current: Record<string, string> | null | undefined, patch: Record<string, string | null> | null): Record<string, string> | null {
  if (patch === null) return null;
  const merged: Record<string, string> = { ...current };
  for (const [name, value] of Object.entries(patch)) {
    for (const existing of Object.keys(merged)) if (existing.toLowerCase() === name.toLowerCase()) delete merged[existing];
    if (value !== null) merged[name] = value;
  }
  return checkHeaders(merged);
}

function checkEvents(raw: string): string {
  const result = normaliseEventList(raw);
  if ('error' in result) throw new ApiError('VALIDATION_FAILED', result.error);
  return result.value;
}

export default async function endpointRoutes(app: FastifyInstance) {
  app.post<{ Body: CreateWebhookBody }>(
    '/webhooks',
    {
      schema: {
        tags,
        summary: 'Register a webhook endpoint',
        security,
        body: CreateWebhookBody,
        response: { 201: EnvelopeOf(WebhookEndpoint), ...errorResponses(400, 401, 422, 503) },
      },
    },
    async (request, reply) => {
      const { url, secret, events, active = true, signature = 'seed', headers, paused, retry_schedule, max_in_flight, rate_limit_per_second } = request.body;
      checkSecret(signature, secret);
      const custom = headers === undefined ? null : checkHeaders(headers);
      const record: Omit<WebhookRecord, 'id'> = {
        user_id: principalOf(request).userId,
        url: await checkTargetUrl(app, url),
        secret,
        events: checkEvents(events),
        active,
        signature,
        created_at: new Date(app.clock()).toISOString(),
        updated_at: '',
      };
      if (paused) record.paused = true;
      // Kept only when given: a record without them keeps the defaults.
      if (retry_schedule !== undefined) record.retry_schedule = checkRetrySchedule(retry_schedule);
      if (max_in_flight !== undefined) record.max_in_flight = max_in_flight;
      if (rate_limit_per_second != null) record.rate_limit_per_second = rate_limit_per_second;
      record.updated_at = record.created_at;
      if (custom) record.headers = custom;
      const created = await app.store.webhooks.insert(record);
      reply.code(201);
      return ok(await endpointView(app, created), 'webhook endpoint created');
    },
  );

  app.get<{ Querystring: ListWebhooksQuery }>(
    '/webhooks',
    {
      schema: {
        tags,
        summary: "The caller's endpoints (admins: `user_id` for a user's, `all` for everyone's), a page at a time",
        security,
        querystring: ListWebhooksQuery,
        response: { 200: EnvelopeOf(Type.Array(WebhookEndpoint)), ...errorResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { user_id: userId, all } = request.query;
      const admin = principal.role === 'admin';
      if ((all || (userId !== undefined && userId !== principal.userId)) && !admin) {
        throw new ApiError('FORBIDDEN', "only admins may list other users' webhook endpoints");
      }
      const owner = userId ?? principal.userId;
      // The store reads the page and one more endpoint (whose presence means a next page); only
      // the page's endpoints get their health read.
      const range = { after: request.query.after, limit: (request.query.limit ?? PAGE_MAX) + 1 };
      const records = all ? await app.store.webhooks.list(range) : await app.store.webhooks.listByUser(owner, range);
      const { items, next } = pageOf(request, records, request.query);
      sendLink(reply, next);
      return ok(await endpointViews(app, items));
    },
  );

  app.get<{ Params: IdParam }>(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'One endpoint',
        security,
        params: IdParam,
        response: { 200: EnvelopeOf(WebhookEndpoint), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      return ok(await endpointView(app, assertOwnership(request, await app.store.webhooks.get(id), 'webhook', id)));
    },
  );

  app.put<{ Params: IdParam; Body: UpdateWebhookBody }>(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Change an endpoint (partial: any of url, events, active, secret, signature, headers, paused, retry_schedule, max_in_flight, rate_limit_per_second)',
        security,
        params: IdParam,
        body: UpdateWebhookBody,
        response: { 200: EnvelopeOf(WebhookEndpoint), ...errorResponses(400, 401, 403, 404, 422, 503) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const current = assertOwnership(request, await app.store.webhooks.get(id), 'webhook', id);
      const { url, secret, events, active, signature, headers, paused, retry_schedule, max_in_flight, rate_limit_per_second } = request.body;
      if (Object.values(request.body).every((value) => value === undefined)) {
        throw new ApiError('BAD_REQUEST', 'body: give at least one of url, events, active, secret, signature, headers, paused, retry_schedule, max_in_flight, rate_limit_per_second');
      }
      checkSecret(signature ?? current.signature ?? 'seed', secret ?? current.secret);
      const patch: Partial<WebhookRecord> = { updated_at: new Date(app.clock()).toISOString() };
      if (url !== undefined) patch.url = await checkTargetUrl(app, url);
      if (events !== undefined) patch.events = checkEvents(events);
      if (secret !== undefined) patch.secret = secret;
      // A secret set here takes over at once (POST …/rotate-secret keeps the old one for a while).
      if (secret !== undefined && current.previous_secret) Object.assign(patch, { previous_secret: null, previous_secret_expires_at: null });
      if (active !== undefined) patch.active = active;
      if (signature !== undefined) patch.signature = signature;
      if (headers !== undefined) patch.headers = mergeHeaders(current.headers, headers);
      if (paused !== undefined) patch.paused = paused;
      if (retry_schedule !== undefined) patch.retry_schedule = checkRetrySchedule(retry_schedule);
      if (max_in_flight !== undefined) patch.max_in_flight = max_in_flight;
      // null lifts the limit.
      if (rate_limit_per_second !== undefined) patch.rate_limit_per_second = rate_limit_per_second;
      // Enabled again: failures from before no longer count towards the auto-disable.
      if (active === true && !current.active) patch.health_reset_at = patch.updated_at;
      const updated = await app.store.webhooks.update(id, patch);
      if (!updated) throw new ApiError('NOT_FOUND', `webhook ${id} not found`);
      return ok(await endpointView(app, updated), secret !== undefined ? 'webhook endpoint updated; secret rotated' : 'webhook endpoint updated');
    },
  );

  app.delete<{ Params: IdParam }>(
    '/webhooks/:id',
    {
      schema: {
        tags,
        summary: 'Delete an endpoint with its delivery log; its pending deliveries are dropped',
        security,
        params: IdParam,
        response: { 200: EnvelopeOf(DeletedWebhook), ...errorResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request) => {
      const { id } = request.params;
      assertOwnership(request, await app.store.webhooks.get(id), 'webhook', id);
      // The store removes its pending deliveries and its delivery log with it.
      if (!(await app.store.webhooks.remove(id))) throw new ApiError('NOT_FOUND', `webhook ${id} not found`);
      return ok({ id }, 'webhook endpoint deleted');
    },
  );
}

// API keys of the calling user: create (the key is shown once), list, delete. JWT only (section
// 5.5): a key cannot mint or revoke keys. Admins may delete any user's key, as with every resource.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, JWT_SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { ApiKey, CreateApiKeyBody, CreatedApiKey } from '../../../shared/api/api-keys.js';
import type { ApiKeyRecord } from '../../../store/types.js';
import { generateApiKey } from '../../auth/api-keys.js';
import { assertOwnership, principalOf } from '../../plugins/auth.js';
import { pageOf, sendLink } from '../pages.js';
import { PageQuery } from '../../../shared/api/pages.js';

/** RFC 3339 proper: a `T`, seconds, and a `Z` or `±hh:mm` offset (the schema's format is more lenient). */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

function listed(key: ApiKeyRecord): ApiKey {
  return {
    id: key.id,
    name: key.name,
    key_prefix: key.key_prefix,
    last_used_at: key.last_used_at,
    expires_at: key.expires_at,
    created_at: key.created_at,
  };
}

/** The expiry as a normalised UTC timestamp, or a 422 naming the field. */
function parseExpiry(value: string | undefined, now: number): string | null {
  if (value === undefined) return null;
  const at = Date.parse(value);
  if (!RFC3339.test(value) || Number.isNaN(at)) {
    throw new ApiError('VALIDATION_FAILED', 'expires_at: must be an RFC 3339 timestamp, e.g. 2030-01-31T12:00:00Z');
  }
  if (at <= now) throw new ApiError('VALIDATION_FAILED', 'expires_at: must be in the future');
  return new Date(at).toISOString();
}

export default async function apiKeyRoutes(app: FastifyInstance) {
  app.post<{ Body: CreateApiKeyBody }>(
    '/auth/api-keys',
    {
      config: { auth: 'jwt' },
      schema: {
        tags: ['api-keys'],
        summary: 'Create an API key (the full key is in this answer only)',
        description: 'Requires a JWT: an API key gets 403 `jwt required`. `expires_at` must be RFC 3339 and in the future (else 422).',
        security,
        body: CreateApiKeyBody,
        response: { 201: EnvelopeOf(CreatedApiKey), ...errorResponses(400, 401, 403, 422) },
      },
    },
    async (request, reply) => {
      const { userId } = principalOf(request);
      const name = request.body.name.trim();
      if (!name) throw new ApiError('VALIDATION_FAILED', 'name: must not be blank');
      const now = app.clock();
      const expiresAt = parseExpiry(request.body.expires_at, now);
      const { key, hash, prefix } = generateApiKey();
      const record = await app.store.apiKeys.insert({
        user_id: userId,
        name,
        key_hash: hash,
        key_prefix: prefix,
        last_used_at: null,
        expires_at: expiresAt,
        created_at: new Date(now).toISOString(),
      });
      reply.code(201);
      const { last_used_at: _unused, ...created } = listed(record);
      return ok({ ...created, key }, 'API key created: copy the key now, it is not shown again');
    },
  );

  app.get<{ Querystring: PageQuery }>(
    '/auth/api-keys',
    {
      config: { auth: 'jwt' },
      schema: {
        tags: ['api-keys'],
        summary: "The caller's API keys (never the key itself), a page at a time",
        security,
        querystring: PageQuery,
        response: { 200: EnvelopeOf(Type.Array(ApiKey)), ...errorResponses(400, 401, 403, 422) },
      },
    },
    async (request, reply) => {
      const { userId } = principalOf(request);
      const { items, next } = pageOf(request, await app.store.apiKeys.listByUser(userId), request.query);
      sendLink(reply, next);
      return ok(items.map(listed));
    },
  );

  app.delete<{ Params: IdParam }>(
    '/auth/api-keys/:id',
    {
      config: { auth: 'jwt' },
      schema: {
        tags: ['api-keys'],
        summary: 'Delete an API key: it stops working at once',
        description: "404 for an unknown id, 403 for another customer's key (admins may delete any).",
        security,
        params: IdParam,
        response: { 200: EnvelopeOf(Type.Object({ id: Type.Integer() })), ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      assertOwnership(request, await app.store.apiKeys.get(id), 'API key', id);
      await app.store.apiKeys.remove(id);
      return ok({ id }, 'API key deleted');
    },
  );
}

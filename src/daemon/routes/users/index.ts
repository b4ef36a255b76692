// Users: GET/POST /admin/users, DELETE /admin/users/:id (admin), POST /admin/users/:id/password
// (admin JWT: what `panelctl admin reset-password` calls while the daemon runs), GET /auth/me.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, JWT_SECURITY, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { CreateUserBody, SetPasswordBody, UserDetail } from '../../../shared/api/users.js';
import { StoreConflictError } from '../../../store/store.js';
import { newUserRecord, passwordChange } from '../../auth/password.js';
import { principalOf } from '../../plugins/auth.js';
import { totpLockoutKey } from '../../plugins/lockout.js';
import { pageOf, sendLink } from '../pages.js';
import { PageQuery } from '../../../shared/api/pages.js';
import { userDetail } from '../auth/users-view.js';

export default async function userRoutes(app: FastifyInstance) {
  app.get(
    '/auth/me',
    {
      schema: {
        tags: ['auth'],
        summary: 'The calling user',
        security,
        response: { 200: EnvelopeOf(UserDetail), ...errorResponses(401) },
      },
    },
    async (request) => ok(userDetail(principalOf(request).user)),
  );

  app.get<{ Querystring: PageQuery }>(
    '/admin/users',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin'],
        summary: 'List users, a page at a time',
        security,
        querystring: PageQuery,
        response: { 200: EnvelopeOf(Type.Array(UserDetail)), ...errorResponses(400, 401, 403, 422) },
      },
    },
    async (request, reply) => {
      const { items, next } = pageOf(request, await app.store.users.list(), request.query);
      sendLink(reply, next);
      return ok(items.map(userDetail));
    },
  );

  app.post<{ Body: CreateUserBody }>(
    '/admin/users',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin'],
        summary: 'Create a user',
        security,
        body: CreateUserBody,
        response: { 201: EnvelopeOf(UserDetail), ...errorResponses(400, 401, 403, 409, 422) },
      },
    },
    async (request, reply) => {
      const { email, name, password, role } = request.body;
      const normalised = email.trim().toLowerCase();
      const now = new Date(app.clock()).toISOString();
      // The store keeps emails unique (case-insensitive), also between concurrent requests.
      const user = await app.store.users.insert(await newUserRecord({ email: normalised, name, password, role }, now)).catch((error: unknown) => {
        if (error instanceof StoreConflictError && error.constraint === 'users.email') {
          throw new ApiError('CONFLICT', `a user with email ${normalised} already exists`);
        }
        throw error;
      });
      reply.code(201);
      return ok(userDetail(user), 'user created');
    },
  );

  app.post<{ Params: IdParam; Body: SetPasswordBody }>(
    '/admin/users/:id/password',
    {
      config: { auth: 'admin_jwt' },
      schema: {
        tags: ['admin'],
        summary: "Set a user's password and end their sessions",
        description:
          'Every JWT of that user issued before the change is refused from then on (their API keys stay valid), ' +
          "and the lockout of the account's second factor ends. " +
          '`panelctl admin reset-password` calls this while the daemon runs, with a short-lived admin JWT it signs ' +
          "with the data directory's secret. Requires a JWT (an API key answers 403 `jwt required`).",
        security: JWT_SECURITY,
        params: IdParam,
        body: SetPasswordBody,
        response: { 200: EnvelopeOf(UserDetail), ...errorResponses(400, 401, 403, 404, 422) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const user = await app.store.users.get(id);
      if (!user) throw new ApiError('NOT_FOUND', `user ${id} not found`);
      const now = new Date(app.clock()).toISOString();
      const updated = await app.store.users.update(id, await passwordChange(user, request.body.password, now));
      if (!updated) throw new ApiError('NOT_FOUND', `user ${id} not found`);
      // An owner's reset is a way back in: the account's second-factor lockout ends with it.
      await app.store.limiter.remove(totpLockoutKey(id));
      return ok(userDetail(updated), `password of ${updated.email} changed; their earlier sessions have ended`);
    },
  );

  app.delete<{ Params: IdParam }>(
    '/admin/users/:id',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin'],
        summary: 'Delete a user with their API keys and webhook endpoints',
        security,
        params: IdParam,
        response: { 200: EnvelopeOf(Type.Object({ id: Type.Integer() })), ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (request) => {
      const { id } = request.params;
      if (id === principalOf(request).userId) throw new ApiError('CONFLICT', 'you cannot delete your own account');
      // The store removes what the user owns with them (keys, endpoints, subscriptions and sites).
      const removed = await app.store.users.remove(id);
      if (!removed) throw new ApiError('NOT_FOUND', `user ${id} not found`);
      return ok({ id }, 'user deleted');
    },
  );
}

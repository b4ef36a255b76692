// POST /api/v1/auth/login: email + password (+ TOTP when enabled) → JWT and user.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, errorResponses, ok } from '../../../shared/envelope.js';
import { LoginBody, LoginResult } from '../../../shared/api/users.js';
import { dummyPasswordHash, verifyPassword } from '../../auth/password.js';
import { publicUser } from './users-view.js';

export default async function loginRoutes(app: FastifyInstance) {
  app.post<{ Body: LoginBody }>(
    '/auth/login',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['auth'],
        summary: 'Log in with email and password (and a TOTP code when 2FA is on)',
        body: LoginBody,
        response: { 200: EnvelopeOf(LoginResult), ...errorResponses(400, 401, 422, 429) },
      },
    },
    async (request) => {
      const { email, password } = request.body;
      const user = await app.store.users.byEmail(email.trim());
      // Unknown emails cost a hash too, so timing does not reveal which accounts exist.
      const valid = await verifyPassword(password, user?.password_hash ?? (await dummyPasswordHash()));
      if (!user || !valid) throw new ApiError('INVALID_CREDENTIALS', 'email or password is wrong');
      const settings = await app.store.settings.get();
      const token = await app.tokens.issue(user.id, user.role, settings.jwt_ttl_seconds);
      return ok({ token, user: publicUser(user) }, 'logged in');
    },
  );
}

// POST /api/v1/auth/login: email + password (+ TOTP when enabled) → JWT and user; and
// POST /api/v1/auth/logout, which revokes the presented JWT.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, JWT_SECURITY, errorResponses, ok } from '../../../shared/envelope.js';
import { LoginBody, LoginResult } from '../../../shared/api/users.js';
import { dummyPasswordHash, verifyPassword } from '../../auth/password.js';
import { acceptTotp } from '../../auth/totp.js';
import { principalOf } from '../../plugins/auth.js';
import { publicUser } from './users-view.js';

export default async function loginRoutes(app: FastifyInstance) {
  app.post<{ Body: LoginBody }>(
    '/auth/login',
    {
      config: { auth: 'none', limit: 'login', lockout: true },
      schema: {
        tags: ['auth'],
        summary: 'Log in with email and password (and a TOTP code when 2FA is on)',
        description:
          'Answers 401 `invalid credentials` for an unknown email or a wrong password alike, 401 `2fa_required` ' +
          '(`data` null) when 2FA is on and `totp_code` is missing, 401 `invalid totp code` for a wrong or reused code; ' +
          "429 `too_many_attempts` while the address is locked out of login, or while the account's second factor is locked " +
          '(`totp_max_failures` wrong codes within `totp_lockout_minutes`, from any address), when even the right code is refused.',
        body: LoginBody,
        response: { 200: EnvelopeOf(LoginResult), ...errorResponses(400, 401, 422, 429) },
      },
    },
    async (request) => {
      const { email, password, totp_code: code } = request.body;
      // Counted before the password is checked: concurrent guesses cannot outrun the lockout.
      const attempt = await app.lockout.begin(request);
      const user = await app.store.users.byEmail(email.trim());
      // Unknown emails cost a hash too, so timing does not reveal which accounts exist.
      const valid = await verifyPassword(password, user?.password_hash ?? dummyPasswordHash());
      if (!user || !valid) {
        await attempt.fail();
        throw new ApiError('INVALID_CREDENTIALS', 'email or password is wrong');
      }
      if (user.two_factor_enabled && user.totp_secret) {
        // The password was right: asking for the second factor is not a failed attempt.
        if (!code) {
          await attempt.release();
          throw new ApiError('TWO_FACTOR_REQUIRED', 'a two-factor code is required: send totp_code from your authenticator app');
        }
        // Counted per account before the code is looked at, whatever the address: while the
        // account's second factor is locked, even the right code is refused. The password was
        // right, so the address's attempt does not count against it.
        let second;
        try {
          second = await app.lockout.secondFactor(request, user.id);
        } catch (error) {
          await attempt.release();
          throw error;
        }
        // Read fresh, then checked and recorded with no await in between, so one code cannot win two
        // concurrent logins in this daemon. (A SQL backend would make this a conditional UPDATE on totp_last_step.)
        const current = (await app.store.users.get(user.id)) ?? user;
        const step = acceptTotp(code, current.totp_secret ?? user.totp_secret, current.totp_last_step, app.clock());
        if (step === null) {
          await Promise.all([second.fail(), attempt.fail()]);
          throw new ApiError('INVALID_TOTP', 'the two-factor code is wrong, expired or already used');
        }
        await app.store.users.update(user.id, { totp_last_step: step });
        await second.release();
      }
      await attempt.release();
      const settings = app.settings.current();
      const token = await app.tokens.issue(user.id, user.role, settings.jwt_ttl_seconds, user.token_generation ?? 0);
      return ok({ token, user: publicUser(user) }, `logged in as ${user.email}`);
    },
  );
}

/** POST /api/v1/auth/logout: revokes the presented JWT until it would have expired anyway. */
export async function logoutRoutes(app: FastifyInstance) {
  app.post(
    '/auth/logout',
    {
      config: { auth: 'jwt' },
      schema: {
        tags: ['auth'],
        summary: 'Log out: the presented JWT is refused from now on',
        description: 'JWT only (an API key is deleted instead, with DELETE /auth/api-keys/:id). Later requests with the token get 401.',
        security: JWT_SECURITY,
        response: { 200: EnvelopeOf(Type.Null()), ...errorResponses(401, 403, 503) },
      },
    },
    async (request) => {
      const { session } = principalOf(request);
      if (session) await app.store.revokedTokens.revoke(session.jti, session.exp * 1000);
      return ok(null, 'logged out: this token no longer works');
    },
  );
}

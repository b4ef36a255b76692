// TOTP two-factor authentication of the calling user: setup (a pending secret), enable and
// disable (each proven with a current code). JWT only: an API key cannot change how one logs in.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, JWT_SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { TotpCodeBody, TwoFactorSetup, TwoFactorState } from '../../../shared/api/users.js';
import { acceptTotp, newTotpSecret, otpauthUrl } from '../../auth/totp.js';
import { principalOf } from '../../plugins/auth.js';

const wrongCode = () => new ApiError('INVALID_TOTP', 'the two-factor code is wrong, expired or already used');

export default async function twoFactorRoutes(app: FastifyInstance) {
  app.post(
    '/auth/2fa/setup',
    {
      config: { auth: 'jwt' },
      schema: {
        tags: ['auth'],
        summary: 'Start 2FA setup: a new TOTP secret, not active until /auth/2fa/enable',
        description: 'Calling it again replaces the pending secret. 409 when 2FA is already enabled.',
        security,
        response: { 200: EnvelopeOf(TwoFactorSetup), ...errorResponses(401, 403, 409) },
      },
    },
    async (request) => {
      const { user } = principalOf(request);
      if (user.two_factor_enabled) throw new ApiError('CONFLICT', 'two-factor authentication is already enabled; disable it first');
      const secret = newTotpSecret();
      await app.store.users.update(user.id, { totp_pending_secret: secret, updated_at: new Date(app.clock()).toISOString() });
      return ok({ secret, otpauth_url: otpauthUrl(user.email, secret) }, 'add the secret to your authenticator app, then enable 2FA with a code');
    },
  );

  app.post<{ Body: TotpCodeBody }>(
    '/auth/2fa/enable',
    {
      config: { auth: 'jwt' },
      schema: {
        tags: ['auth'],
        summary: 'Enable 2FA with a current code for the pending secret',
        security,
        body: TotpCodeBody,
        response: { 200: EnvelopeOf(TwoFactorState), ...errorResponses(400, 401, 403, 409, 422) },
      },
    },
    async (request) => {
      const { user } = principalOf(request);
      if (user.two_factor_enabled) throw new ApiError('CONFLICT', 'two-factor authentication is already enabled');
      const secret = user.totp_pending_secret;
      if (!secret) throw new ApiError('CONFLICT', 'no pending 2FA setup: call /auth/2fa/setup first');
      const step = acceptTotp(request.body.totp_code, secret, null, app.clock());
      if (step === null) throw wrongCode();
      await app.store.users.update(user.id, {
        totp_secret: secret,
        totp_pending_secret: null,
        two_factor_enabled: true,
        totp_last_step: step,
        updated_at: new Date(app.clock()).toISOString(),
      });
      return ok({ two_factor_enabled: true }, 'two-factor authentication enabled');
    },
  );

  app.post<{ Body: TotpCodeBody }>(
    '/auth/2fa/disable',
    {
      config: { auth: 'jwt' },
      schema: {
        tags: ['auth'],
        summary: 'Disable 2FA with a current code',
        security,
        body: TotpCodeBody,
        response: { 200: EnvelopeOf(TwoFactorState), ...errorResponses(400, 401, 403, 409, 422, 429) },
      },
    },
    async (request) => {
      const { user } = principalOf(request);
      if (!user.two_factor_enabled || !user.totp_secret) throw new ApiError('CONFLICT', 'two-factor authentication is not enabled');
      // Guesses here count against the account's second factor as at login.
      const second = await app.lockout.secondFactor(request, user.id);
      if (acceptTotp(request.body.totp_code, user.totp_secret, user.totp_last_step, app.clock()) === null) {
        await second.fail();
        throw wrongCode();
      }
      await second.release();
      await app.store.users.update(user.id, {
        totp_secret: null,
        totp_pending_secret: null,
        two_factor_enabled: false,
        totp_last_step: null,
        updated_at: new Date(app.clock()).toISOString(),
      });
      return ok({ two_factor_enabled: false }, 'two-factor authentication disabled');
    },
  );
}

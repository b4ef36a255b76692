// POST /auth/forgot-password and /auth/reset-password. Both are public, share one request window
// per IP, and count toward the IP's attempt counter (every forgot request, every refused reset).
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, errorResponses, ok } from '../../../shared/envelope.js';
import { ForgotPasswordBody, ResetPasswordBody } from '../../../shared/api/users.js';
import { PasswordResets } from '../../auth/password-reset.js';
import { createMailer, mailConfigFromEnv } from '../../mail/mailer.js';

export const FORGOT_MESSAGE = 'if an account with that email exists, a reset token has been mailed to it; it is valid for 1 hour';

export default async function passwordResetRoutes(app: FastifyInstance) {
  const resets = new PasswordResets({
    store: app.store,
    mailer: createMailer(mailConfigFromEnv(process.env, app.daemon.paths.mailDir)),
    clock: app.clock,
    log: app.log,
    baseUrl: app.daemon.baseUrl,
  });
  // Mails still being written when the daemon stops are finished before the store closes.
  app.addHook('onClose', async () => resets.idle());

  app.post<{ Body: ForgotPasswordBody }>(
    '/auth/forgot-password',
    {
      config: { auth: 'none', limit: 'reset', lockout: true },
      schema: {
        tags: ['auth'],
        summary: 'Mail a password-reset token (same answer whether or not the account exists)',
        description: 'The token is single-use and valid for 1 hour. Every request counts toward the IP lockout.',
        body: ForgotPasswordBody,
        response: { 200: EnvelopeOf(Type.Null()), ...errorResponses(400, 422, 429) },
      },
    },
    async (request) => {
      // Every request counts as a failed attempt (variant B): the answer never says whether it found anyone.
      const attempt = await app.lockout.begin(request);
      await attempt.fail();
      resets.request(request.body.email);
      return ok(null, FORGOT_MESSAGE);
    },
  );

  app.post<{ Body: ResetPasswordBody }>(
    '/auth/reset-password',
    {
      config: { auth: 'none', limit: 'reset', lockout: true },
      schema: {
        tags: ['auth'],
        summary: 'Set a new password with a token from the reset mail',
        description: 'An unknown, used or expired token answers 400 `invalid token` and counts toward the IP lockout.',
        body: ResetPasswordBody,
        response: { 200: EnvelopeOf(Type.Null()), ...errorResponses(400, 422, 429) },
      },
    },
    async (request) => {
      const attempt = await app.lockout.begin(request);
      try {
        await resets.complete(request.body.token, request.body.password);
      } catch (error) {
        if (error instanceof ApiError && error.code === 'INVALID_TOKEN') await attempt.fail();
        else await attempt.release();
        throw error;
      }
      await attempt.release();
      return ok(null, 'password changed: log in with the new password');
    },
  );
}

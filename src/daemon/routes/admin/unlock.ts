// POST /api/v1/admin/unlock: ends login lockouts (an address's, an account's second factor, or
// all). `panelctl admin unlock` calls it while the daemon runs.
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, SECURITY, errorResponses, ok } from '../../../shared/envelope.js';
import { UnlockError, unlock } from '../../auth/unlock.js';

const UnlockBody = Type.Object(
  {
    ip: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'End the login lockout of this address' })),
    email: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: "End the lockout of this account's second factor" })),
  },
  { additionalProperties: false, description: 'Neither field: every address and every account' },
);
type UnlockBody = Static<typeof UnlockBody>;

const UnlockResult = Type.Object({
  addresses: Type.Integer({ description: 'Addresses whose failed-login count or lock was removed' }),
  accounts: Type.Integer({ description: 'Accounts whose wrong-code count or second-factor lock was removed' }),
});

export default async function unlockRoutes(app: FastifyInstance) {
  app.post<{ Body: UnlockBody }>(
    '/admin/unlock',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin'],
        summary: 'End login lockouts: of one address (`ip`), of one account\'s second factor (`email`), or all',
        description:
          'Removes the failed-attempt counts and locks of variant B (per address) and of the second factor (per account, ' +
          'settings `totp_max_failures` and `totp_lockout_minutes`). With an empty body, every lockout ends.',
        security: SECURITY,
        body: UnlockBody,
        response: { 200: EnvelopeOf(UnlockResult), ...errorResponses(400, 401, 403, 404, 422) },
      },
    },
    async (request) => {
      let outcome;
      try {
        outcome = await unlock(app.store, request.body ?? {});
      } catch (error) {
        if (!(error instanceof UnlockError)) throw error;
        throw new ApiError(error.reason === 'email' ? 'NOT_FOUND' : 'VALIDATION_FAILED', error.message.replace('--ip / ip', 'ip'));
      }
      return ok(outcome, `unlocked ${outcome.addresses} address${outcome.addresses === 1 ? '' : 'es'} and ${outcome.accounts} account${outcome.accounts === 1 ? '' : 's'}`);
    },
  );
}

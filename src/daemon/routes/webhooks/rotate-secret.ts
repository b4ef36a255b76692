// POST /webhooks/:id/rotate-secret: a new signing secret, with the previous one still signing
// beside it (X-Webhook-Signature-Previous, a second webhook-signature entry) for an overlap, so
// receivers can be moved to the new secret without refusing a delivery in between.
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { RotateSecretBody, RotatedSecret } from '../../../shared/api/webhooks.js';
import type { WebhookRecord } from '../../../store/types.js';
import { assertOwnership } from '../../plugins/auth.js';
import { checkSecret } from './endpoints.js';

/** The overlap when the body names none: a day, as Svix keeps the old secret. */
export const DEFAULT_OVERLAP_SECONDS = 86_400;

/** 32 random bytes: hex for `seed`, `whsec_` and base64 for `standard-webhooks`. */
function newSecret(scheme: WebhookRecord['signature']): string {
  const bytes = randomBytes(32);
  return scheme === 'standard-webhooks' ? `whsec_${bytes.toString('base64')}` : bytes.toString('hex');
}

export default async function rotateSecretRoutes(app: FastifyInstance) {
  app.post<{ Params: IdParam; Body: RotateSecretBody }>(
    '/webhooks/:id/rotate-secret',
    {
      // The body is optional: an absent one is an empty object.
      preValidation: async (request) => {
        request.body ??= {};
      },
      schema: {
        tags: ['webhooks'],
        summary: 'Rotate the signing secret; the previous one keeps signing beside it for an overlap',
        description:
          'Deliveries are signed with the new secret at once. For `overlap_seconds` (default 86400, 0 ends it now) each ' +
          'also carries `X-Webhook-Signature-Previous: sha256=<hex>` keyed with the previous secret, and for ' +
          'standard-webhooks endpoints a second `v1,` entry in `webhook-signature`; then the previous secret is dropped ' +
          'from the store. Rotating again during an overlap keeps only the secret being replaced. `secret` is answered ' +
          'only when the daemon generated it.',
        security,
        params: IdParam,
        body: RotateSecretBody,
        response: { 200: EnvelopeOf(RotatedSecret), ...errorResponses(400, 401, 403, 404, 422, 503) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const current = assertOwnership(request, await app.store.webhooks.get(id), 'webhook', id);
      const body = request.body;
      const scheme = current.signature ?? 'seed';
      const secret = body.secret ?? newSecret(scheme);
      checkSecret(scheme, secret);
      const overlap = body.overlap_seconds ?? DEFAULT_OVERLAP_SECONDS;
      const now = app.clock();
      const expiresAt = overlap > 0 ? new Date(now + overlap * 1000).toISOString() : null;
      const updated = await app.store.webhooks.update(id, {
        secret,
        previous_secret: expiresAt ? current.secret : null,
        previous_secret_expires_at: expiresAt,
        updated_at: new Date(now).toISOString(),
      });
      if (!updated) throw new ApiError('NOT_FOUND', `webhook ${id} not found`);
      const data = body.secret === undefined ? { secret, previous_secret_expires_at: expiresAt } : { previous_secret_expires_at: expiresAt };
      return ok(data, expiresAt ? `secret rotated; the previous secret signs too until ${expiresAt}` : 'secret rotated; the previous secret no longer signs');
    },
  );
}

// GET /api/v1/health: liveness and version, no authentication. An admin's credentials (JWT or
// API key) add `detail`: what `panelctl daemon status` shows beyond daemon.json (which holds the
// static facts: URL, pid, data directory, store, log file): the private-webhook switches and the
// deliveries still pending. Anyone else, or a credential that does not check out, gets the plain
// answer: health never refuses.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EnvelopeOf, ok } from '../../../shared/envelope.js';
import { VERSION } from '../../../shared/version.js';
import type { Store } from '../../../store/store.js';
import { presentedCredential, resolvePrincipal } from '../../plugins/auth.js';

const HealthDetail = Type.Object(
  {
    pending_deliveries: Type.Integer({ minimum: 0, description: 'deliveries accepted and not yet succeeded or finally failed' }),
    private_webhooks: Type.Object({
      allowed: Type.Boolean({ description: 'whether deliveries may go to loopback and private networks now' }),
      flag: Type.Boolean({ description: 'the daemon was started with --allow-private-webhooks' }),
      setting: Type.Boolean({ description: 'the admin setting webhook_allow_private_networks' }),
    }),
  },
  { description: 'only for an admin caller (JWT or API key); absent otherwise' },
);

const Health = Type.Object({ status: Type.Literal('ok'), version: Type.String(), detail: Type.Optional(HealthDetail) });

/** Whether the caller is an admin; any failure (none sent, malformed, expired, unknown) is "no". */
async function isAdmin(app: FastifyInstance, request: FastifyRequest): Promise<boolean> {
  try {
    const credential = presentedCredential(request);
    return credential !== null && (await resolvePrincipal(app, credential)).role === 'admin';
  } catch {
    return false;
  }
}

export default async function healthRoutes(app: FastifyInstance) {
  app.get(
    '/health',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['health'],
        summary: 'Liveness and version (with an admin credential, also pending deliveries and the private-webhook switches)',
        response: { 200: EnvelopeOf(Health) },
      },
    },
    async (request) => {
      if (!request.headers.authorization && !request.headers['x-api-key']) return ok({ status: 'ok' as const, version: VERSION });
      if (!(await isAdmin(app, request))) return ok({ status: 'ok' as const, version: VERSION });
      const flag = app.daemon.allowPrivateWebhooks === true;
      const setting = (await app.store.settings.get()).webhook_allow_private_networks;
      return ok({
        status: 'ok' as const,
        version: VERSION,
        detail: { pending_deliveries: await app.store.outbox.pendingCount(), private_webhooks: { allowed: flag || setting, flag, setting } },
      });
    },
  );
}

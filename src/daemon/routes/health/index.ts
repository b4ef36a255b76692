// GET /api/v1/health: liveness and version, no authentication. An admin's credentials (JWT or
// API key) add `detail`: what `panelctl daemon status` shows beyond daemon.json (which holds the
// static facts: URL, pid, data directory, store, log file): the private-webhook switches and the
// deliveries still pending. Anyone else, or a credential that does not check out, gets the plain
// answer: health never refuses.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EnvelopeOf, ok } from '../../../shared/envelope.js';
import { VERSION } from '../../../shared/version.js';
import { presentedCredential, resolvePrincipal } from '../../plugins/auth.js';
import readyRoute from './ready.js';

const HealthDetail = Type.Object(
  {
    pending_deliveries: Type.Integer({ minimum: 0, description: 'deliveries accepted and not yet succeeded or finally failed' }),
    oldest_pending_age_seconds: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
      description: 'seconds since the oldest pending delivery was published; null when none is pending',
    }),
    attempts_last_minute: Type.Integer({ minimum: 0, description: 'webhook attempts this daemon made in the last 60 s' }),
    failures_last_minute: Type.Integer({ minimum: 0, description: 'of those, the ones that failed' }),
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
  await app.register(readyRoute);
  app.get(
    '/health',
    {
      config: { auth: 'none' },
      schema: {
        tags: ['health'],
        summary: 'Liveness and version (with an admin credential, also the queue, the last minute\'s attempts and the private-webhook switches)',
        response: { 200: EnvelopeOf(Health) },
      },
    },
    async (request) => {
      if (!request.headers.authorization && !request.headers['x-api-key']) return ok({ status: 'ok' as const, version: VERSION });
      if (!(await isAdmin(app, request))) return ok({ status: 'ok' as const, version: VERSION });
      const flag = app.daemon.allowPrivateWebhooks === true;
      const setting = (await app.store.settings.get()).webhook_allow_private_networks;
      const queue = await app.store.outbox.stats();
      const recent = app.dispatcher.recent.lastMinute(Date.now());
      return ok({
        status: 'ok' as const,
        version: VERSION,
        detail: {
          pending_deliveries: queue.pending,
          oldest_pending_age_seconds: queue.oldest_pending_at === null ? null : Math.max(0, Math.floor((app.clock() - queue.oldest_pending_at) / 1000)),
          attempts_last_minute: recent.attempts,
          failures_last_minute: recent.failures,
          private_webhooks: { allowed: flag || setting, flag, setting },
        },
      });
    },
  );
}

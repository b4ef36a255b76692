// GET /api/v1/health: liveness and version, no authentication.
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { EnvelopeOf, ok } from '../../../shared/envelope.js';
import { VERSION } from '../../../shared/version.js';

const Health = Type.Object({ status: Type.Literal('ok'), version: Type.String() });

export default async function healthRoutes(app: FastifyInstance) {
  app.get(
    '/health',
    {
      config: { auth: 'none' },
      schema: { tags: ['health'], summary: 'Liveness and version', response: { 200: EnvelopeOf(Health) } },
    },
    async () => ok({ status: 'ok' as const, version: VERSION }),
  );
}

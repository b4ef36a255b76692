// GET/PUT /api/v1/admin/settings: the tunable settings, partial update, persisted.
import type { FastifyInstance } from 'fastify';
import { EnvelopeOf, SECURITY, errorResponses, ok } from '../../../shared/envelope.js';
import { SettingsPatchSchema, SettingsSchema, type SettingsPatch } from '../../../shared/settings.js';

export default async function settingsRoutes(app: FastifyInstance) {
  app.get(
    '/admin/settings',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin'],
        summary: 'Read the settings',
        security: SECURITY,
        response: { 200: EnvelopeOf(SettingsSchema), ...errorResponses(401, 403) },
      },
    },
    async () => ok(await app.settings.refresh()),
  );

  app.put<{ Body: SettingsPatch }>(
    '/admin/settings',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin'],
        summary: 'Change some settings (partial update)',
        security: SECURITY,
        body: SettingsPatchSchema,
        response: { 200: EnvelopeOf(SettingsSchema), ...errorResponses(400, 401, 403, 422) },
      },
    },
    async (request) => ok(await app.settings.update(request.body), 'settings updated'),
  );
}

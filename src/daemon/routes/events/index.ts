// GET /events/types (the catalogue) and POST /admin/events (the rest of the panel publishes
// events; `data` is validated against the catalogue, 422 otherwise).
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, SECURITY, errorResponses, ok } from '../../../shared/envelope.js';
import { EVENT_CATALOGUE, validateEventData } from '../../../shared/events.js';
import { EventTypeSchema, PublishEventBody, PublishEventResult } from '../../../shared/api/events.js';
import listenRoutes from './listen.js';

export default async function eventRoutes(app: FastifyInstance) {
  await app.register(listenRoutes);
  app.get(
    '/events/types',
    {
      schema: {
        tags: ['events'],
        summary: 'The event catalogue: names, descriptions and data fields',
        security: SECURITY,
        response: { 200: EnvelopeOf(Type.Array(EventTypeSchema)), ...errorResponses(401) },
      },
    },
    async () => ok(EVENT_CATALOGUE.map((e) => ({ name: e.name, description: e.description, fields: { ...e.fields } }))),
  );

  app.post<{ Body: PublishEventBody }>(
    '/admin/events',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['admin', 'events'],
        summary: 'Publish an event; answers once its deliveries are durably queued',
        security: SECURITY,
        body: PublishEventBody,
        response: { 200: EnvelopeOf(PublishEventResult), ...errorResponses(400, 401, 403, 422, 503) },
      },
    },
    async (request) => {
      const { event, data, owner_id: ownerId = null } = request.body;
      const problem = validateEventData(event, data);
      if (problem) throw new ApiError('VALIDATION_FAILED', problem);
      if (ownerId !== null) {
        const owner = await app.store.users.get(ownerId);
        if (!owner) throw new ApiError('VALIDATION_FAILED', `owner_id: user ${ownerId} does not exist`);
      }
      const result = await app.events.publish({ event, data: data as Record<string, unknown>, owner_id: ownerId });
      return ok(result, `event ${event} published to ${result.deliveries} endpoint(s)`);
    },
  );
}

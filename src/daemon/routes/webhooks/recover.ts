// POST /webhooks/:id/recover { since, until? }: every delivery of the endpoint whose final
// outcome in the window was a failure is sent again as a new delivery: the same payload bytes,
// durably queued through the event bus, signed with the current secret when attempted. Read
// from the endpoint's delivery log, so only deliveries among its last 100 attempts are found.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../../shared/errors.js';
import { EnvelopeOf, IdParam, SECURITY as security, errorResponses, ok } from '../../../shared/envelope.js';
import { RecoverBody, RecoverResult } from '../../../shared/api/webhooks.js';
import { deliveryOutcomes } from '../../dispatcher/health.js';
import { policyOfRecord } from '../../dispatcher/scheduler.js';
import { assertOwnership } from '../../plugins/auth.js';
import { parseTime } from './times.js';

export default async function recoverRoutes(app: FastifyInstance) {
  app.post<{ Params: IdParam; Body: RecoverBody }>(
    '/webhooks/:id/recover',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Send again every delivery whose final outcome in the window was a failure',
        description:
          'A delivery counts when its last logged attempt, made between `since` and `until` (default now), failed and no ' +
          'further attempt is due. Each is queued again as a new delivery with the same payload (also to an inactive ' +
          "endpoint: it is a manual action). Only the endpoint's last 100 logged attempts are looked at. Answers the count.",
        security,
        params: IdParam,
        body: RecoverBody,
        response: { 200: EnvelopeOf(RecoverResult), ...errorResponses(400, 401, 403, 404, 422, 503) },
      },
    },
    async (request) => {
      const { id } = request.params;
      const endpoint = assertOwnership(request, await app.store.webhooks.get(id), 'webhook', id);
      const now = app.clock();
      const since = parseTime('since', request.body.since);
      const until = request.body.until === undefined ? now : parseTime('until', request.body.until);
      if (until < since) throw new ApiError('VALIDATION_FAILED', 'until: must not be before since');
      const failed = deliveryOutcomes(await app.store.deliveryLog.list(id), now, policyOfRecord(endpoint).retryDelaysMs).filter((d) => {
        const at = Date.parse(d.last.created_at);
        return d.outcome === 'failed' && at >= since && at <= until;
      });
      // Oldest first, so the receiver gets them in the order they first happened; all queued
      // in one transaction (all or none).
      await app.store.transaction(async (tx) => {
        for (const { last } of failed.reverse()) {
          const payload = last.payload as { data?: Record<string, unknown> } | null;
          await app.events.publishTo(
            endpoint,
            { event: last.event, data: payload?.data ?? {}, owner_id: endpoint.user_id },
            { body: typeof last.payload === 'string' ? last.payload : JSON.stringify(last.payload) },
            tx,
          );
        }
      });
      const count = failed.length;
      return ok({ count }, count ? `${count} failed deliveries queued again` : 'no failed deliveries in that window');
    },
  );
}

// Webhook endpoints, and which of them receive an event (through webhook_events, kept by a
// trigger from each endpoint's list of events).
import { OPERATIONAL_EVENTS } from '../../../shared/events.js';
import type { WebhooksRepository } from '../../store.js';
import { changing, OUTBOX_NOTICE, type RepositoryFactory } from './context.js';
import { insertStatement, toWebhook, updateStatement } from '../rows.js';
import { LOG_REVISION_SQL } from './delivery-log.js';

/** The operational events as SQL literals (catalogue names: no quotes to escape). */
const OPERATIONAL_LIST = OPERATIONAL_EVENTS.map((name) => `'${name}'`).join(', ');

/**
 * The endpoints (`id`, `user_id`) that receive `event` owned by `owner` (SQL expressions; owner
 * NULL: admins' only), found through webhook_events (kept by a trigger): an index lookup for the owner
 * and one per admin, so the cost follows the endpoints matched, not the endpoints stored. Those
 * rows are the active endpoints' only, so publishing needs nothing from webhooks itself: a join
 * to it was planned as a scan of the table whenever the statistics overrated the matches.
 * An operational event (delivery.failed, endpoint.disabled) reaches only the owner's endpoints
 * that name it: not `*`, not the admins'.
 */
export const MATCH_SQL = (event: string, owner: string) => /* sql */ `
    SELECT we.endpoint_id AS id, we.user_id FROM webhook_events we
    WHERE we.event = ${event} AND we.user_id = ${owner}
    UNION
    SELECT we.endpoint_id, we.user_id FROM webhook_events we
    WHERE we.event = '*' AND we.user_id = ${owner} AND ${event} NOT IN (${OPERATIONAL_LIST})
    UNION
    SELECT we.endpoint_id, we.user_id FROM users a JOIN webhook_events we ON we.user_id = a.id
    WHERE a.role = 'admin' AND we.event IN (${event}, '*') AND ${event} NOT IN (${OPERATIONAL_LIST})`;

export const webhooksRepository: RepositoryFactory<WebhooksRepository> = (db, _ctx, work) => {
  const webhooks: WebhooksRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM webhooks WHERE id = $1', [id]);
      return rows[0] && toWebhook(rows[0]);
    },
    async getWithLogRevision(id) {
      const { rows } = await db.query(`SELECT w.*, (${LOG_REVISION_SQL('w.id')}) AS log_revision FROM webhooks w WHERE w.id = $1`, [id]);
      return rows[0] && { endpoint: toWebhook(rows[0]), logRevision: String(rows[0].log_revision) };
    },
    async getMany(ids) {
      if (ids.length === 0) return [];
      const { rows } = await work.query('SELECT * FROM webhooks WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids]);
      return rows.map(toWebhook);
    },
    async list(range = {}) {
      const { rows } = await db.query('SELECT * FROM webhooks WHERE id > $1 ORDER BY id LIMIT $2', [range.after ?? 0, range.limit ?? null]);
      return rows.map(toWebhook);
    },
    async listByUser(userId, range = {}) {
      const { rows } = await db.query('SELECT * FROM webhooks WHERE user_id = $1 AND id > $2 ORDER BY id LIMIT $3', [userId, range.after ?? 0, range.limit ?? null]);
      return rows.map(toWebhook);
    },
    async subscribedTo(event, ownerId) {
      const { rows } = await db.query(
        `SELECT w.* FROM (${MATCH_SQL('$1::text', '$2::bigint')}) m
         JOIN webhooks w ON w.id = m.id AND w.active
         ORDER BY w.id`,
        [event, ownerId],
      );
      return rows.map(toWebhook);
    },
    async count() {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks');
      return rows[0].n;
    },
    async countByState() {
      const { rows } = await db.query<{ active: number; inactive: number }>(
        'SELECT count(*) FILTER (WHERE active)::int AS active, count(*) FILTER (WHERE NOT active)::int AS inactive FROM webhooks',
      );
      return rows[0];
    },
    async insert(record) {
      const { text, values } = insertStatement('webhooks', record);
      const { rows } = await changing(db, 'webhooks', text, values);
      return toWebhook(rows[0]);
    },
    async update(id, patch) {
      const statement = updateStatement('webhooks', id, patch);
      if (!statement) return webhooks.get(id);
      const { rows } = await changing(db, 'webhooks', statement.text, statement.values);
      // Resumed: its kept deliveries are claimable again; dispatchers claim now, not at their poll.
      if (rows[0] && patch.paused === false) db.announce(OUTBOX_NOTICE);
      return rows[0] && toWebhook(rows[0]);
    },
    async remove(id) {
      // Pending deliveries and the delivery log go by ON DELETE CASCADE.
      const { rows } = await changing(db, 'webhooks', 'DELETE FROM webhooks WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toWebhook(rows[0]);
    },
    async forgetExpiredSecrets(now) {
      const { rows } = await changing(
        db,
        'webhooks',
        'UPDATE webhooks SET previous_secret = NULL, previous_secret_expires_at = NULL WHERE previous_secret_expires_at <= $1 RETURNING id',
        [now],
      );
      return rows.length;
    },
  };
  return webhooks;
};

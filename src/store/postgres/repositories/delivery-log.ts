// The delivery log: every attempt, read per endpoint (newest first, at most LOG_RETENTION) and
// summarised as each endpoint's health.
import { LOG_RETENTION, type DeliveryLogQuery, type DeliveryLogRepository, type HealthAttempt, type LogHealth } from '../../store.js';
import type { Row } from '../db.js';
import { toLogEntry } from '../rows.js';
import type { RepositoryFactory } from './context.js';
import { notePruned, recordValues, withIds, RECORD_PRUNE_SQL, type RecordRow } from './record.js';

/**
 * The revision of `endpoint`'s log (an SQL expression for its id): the entries ever added to it,
 * counted by the statement that inserts them (migrations 0009, 0013). It grows with every commit that adds
 * an entry, also one committed after a newer id. Pruning removes only entries older than the
 * newest LOG_RETENTION, which `list` does not answer, so it need not count.
 */
export const LOG_REVISION_SQL = (endpoint: string) =>
  `SELECT coalesce(sum(entries), 0)::text AS revision FROM delivery_log_revisions WHERE endpoint_id = ${endpoint}`;

/**
 * An entry's columns as read: the request headers and extra fields are kept as JSON text
 * (migration 0013) and read back as jsonb, so answers keep jsonb's key order as before.
 */
const LOG_COLUMNS =
  'id, delivery_id, endpoint_id, event, payload, attempt, status_code, response, success, duration_ms, created_at, request_headers::jsonb AS request_headers, extra::jsonb AS extra';

export const deliveryLogRepository: RepositoryFactory<DeliveryLogRepository> = (db, ctx) => {
  const deliveryLog: DeliveryLogRepository = {
    async append(entries) {
      if (entries.length === 0) return [];
      // The endpoints written to keep their newest LOG_RETENTION entries at once.
      const touched = [...new Set(entries.map((e) => e.endpoint_id))].map((endpointId) => ({ endpointId, low: 0 }));
      const { rows } = await db.query<RecordRow>(RECORD_PRUNE_SQL, recordValues('', [], entries, touched));
      notePruned(ctx, rows[0]);
      return withIds(entries, rows[0]);
    },
    async list(endpointId: number, query: DeliveryLogQuery = {}) {
      const limit = Math.max(0, Math.min(query.limit ?? LOG_RETENTION, LOG_RETENTION));
      const where = ['endpoint_id = $1'];
      const values: unknown[] = [endpointId];
      if (query.failed !== undefined) where.push(query.failed ? 'NOT success' : 'success');
      if (query.event !== undefined) {
        values.push(query.event);
        where.push(`event = $${values.length}`);
      }
      if (query.since !== undefined) {
        values.push(query.since);
        where.push(`created_at::timestamptz >= to_timestamp($${values.length}::double precision / 1000)`);
      }
      values.push(limit);
      // One JSON text for the whole log: the server sends one value instead of a row per entry,
      // which costs it and the client markedly less for a page of 100 entries.
      const { rows } = await db.query<{ log: string }>(
        `SELECT coalesce(json_agg(x ORDER BY x.id DESC), '[]')::text AS log FROM (
           SELECT ${LOG_COLUMNS} FROM delivery_log WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${values.length}
         ) x`,
        values,
      );
      return (JSON.parse(rows[0].log) as Row[]).map(toLogEntry);
    },
    async revision(endpointId) {
      const { rows } = await db.query<{ revision: string }>(LOG_REVISION_SQL('$1'), [endpointId]);
      return rows[0].revision;
    },
    async health(endpointIds) {
      const out = new Map<number, LogHealth | null>();
      if (endpointIds.length === 0) return out;
      const { rows } = await db.query<HealthRow>(HEALTH_SQL, [endpointIds]);
      for (const row of rows) out.set(Number(row.endpoint_id), healthOfRow(row));
      return out;
    },
    async get(endpointId, entryId) {
      const { rows } = await db.query(`SELECT ${LOG_COLUMNS} FROM delivery_log WHERE id = $2 AND endpoint_id = $1`, [endpointId, entryId]);
      return rows[0] && toLogEntry(rows[0]);
    },
    async getMany(ids) {
      if (ids.length === 0) return [];
      const { rows } = await db.query(`SELECT ${LOG_COLUMNS} FROM delivery_log WHERE id = ANY ($1::bigint[]) ORDER BY id`, [ids]);
      return rows.map(toLogEntry);
    },
    async since(entryId, limit) {
      const { rows } = await db.query(`SELECT ${LOG_COLUMNS} FROM delivery_log WHERE id > $1 ORDER BY id LIMIT $2`, [entryId, Math.max(0, limit)]);
      return rows.map(toLogEntry);
    },
  };
  return deliveryLog;
};

/**
 * The health summaries of a page of endpoints in one statement: each endpoint's last
 * LOG_RETENTION entries through its log index (narrow columns only), counted and reduced to the
 * newest success, the newest failure (its row read once, by primary key) and the failed attempts
 * as [id, delivery_id, attempt, created_at]. Endpoints without entries answer a row of zeros.
 */
const HEALTH_SQL = /* sql */ `
SELECT e.endpoint_id, h.attempts, h.successes, h.success_id, h.success_delivery, h.success_attempt, h.success_at, h.failures,
       (SELECT json_build_array(z.created_at, z.extra::jsonb->'reason', z.status_code, z.response) FROM delivery_log z WHERE z.id = h.failure_id) AS last_failure
FROM unnest($1::bigint[]) AS e (endpoint_id)
CROSS JOIN LATERAL (
  SELECT count(*)::int AS attempts,
         (count(*) FILTER (WHERE x.success))::int AS successes,
         max(x.id) FILTER (WHERE x.success) AS success_id,
         (array_agg(x.delivery_id ORDER BY x.id DESC) FILTER (WHERE x.success))[1] AS success_delivery,
         (array_agg(x.attempt ORDER BY x.id DESC) FILTER (WHERE x.success))[1] AS success_attempt,
         (array_agg(x.created_at ORDER BY x.id DESC) FILTER (WHERE x.success))[1] AS success_at,
         max(x.id) FILTER (WHERE NOT x.success) AS failure_id,
         json_agg(json_build_array(x.id, x.delivery_id, x.attempt, x.created_at) ORDER BY x.id DESC) FILTER (WHERE NOT x.success) AS failures
  FROM (
    SELECT y.id, y.delivery_id, y.attempt, y.success, y.created_at FROM delivery_log y
    WHERE y.endpoint_id = e.endpoint_id ORDER BY y.id DESC LIMIT ${LOG_RETENTION}
  ) x
) h`;

type HealthRow = Row & {
  endpoint_id: string | number;
  attempts: number;
  successes: number;
  success_id: string | number | null;
  success_delivery: string | null;
  success_attempt: number | null;
  success_at: string | null;
  failures: Array<[number, string, number, string]> | null;
  last_failure: [string, string | null, number, string] | null;
};

/**
 * A summary row as LogHealth, or null when the log does not fit it (as the JSON store decides):
 * a failure since the newest success of that success's delivery, an older failure of it with a
 * higher attempt, or a delivery whose newest failure since the success is not its highest attempt.
 */
function healthOfRow(row: HealthRow): LogHealth | null {
  const successId = row.success_id === null ? -1 : Number(row.success_id);
  const failures: HealthAttempt[] = [];
  const newest = new Map<string, number>();
  for (const [id, delivery_id, attempt, created_at] of row.failures ?? []) {
    if (delivery_id === row.success_delivery && (id > successId || attempt > (row.success_attempt ?? 0))) return null;
    if (id < successId) continue;
    // Newest first: a delivery's older failure with a higher attempt than its newest one.
    const seen = newest.get(delivery_id);
    if (seen !== undefined && attempt > seen) return null;
    if (seen === undefined) newest.set(delivery_id, attempt);
    failures.push({ delivery_id, attempt, created_at });
  }
  const failure = row.last_failure;
  return {
    attempts: row.attempts,
    successes: row.successes,
    last_success_at: row.success_at,
    last_failure: failure && { success: false, created_at: failure[0], reason: failure[1] ?? null, status_code: failure[2], response: failure[3] },
    failures,
  };
}

// The outbox: events published with a delivery per matching endpoint, claimed under leases,
// settled with their outcomes (see record.ts for the statement that also logs the attempts).
import {
  deliveryFromTemplate,
  type ClaimOptions,
  type DeliveryOutcome,
  type DeliveryTemplate,
  type OutboxRepository,
  type QueuedDelivery,
} from '../../store.js';
import type { DeliveryRecord, EventRecord } from '../../types.js';
import { Batcher } from '../batcher.js';
import type { Row } from '../db.js';
import { toDelivery } from '../rows.js';
import { OUTBOX_NOTICE, timedCommit, type RepositoryFactory } from './context.js';
import { announceRecorded, noteTurnover, notePruned, planPrunes, recordValues, withIds, RECORD_PRUNE_SQL, RECORD_SQL, type RecordRow } from './record.js';
import { MATCH_SQL } from './webhooks.js';

/**
 * Publish statements in flight at once per store, and events in one at most. One: the events
 * that arrive while a statement is in flight go together in the next, as a group commit does.
 * Measured against 4 (and 2) with the benchmark's burst, one lane made the larger batches and
 * cost the server 8 % less CPU per delivery, with the same or a better rate.
 */
const PUBLISH_LANES = 1;
const PUBLISH_MOST = 64;

interface Publication {
  event: EventRecord;
  template: DeliveryTemplate;
}

interface PublishRow extends Row {
  n: number;
  ids: string[];
  endpoint_ids: number[];
  owner_ids: number[];
  leased: boolean[];
}

/**
 * Events ($1..$8, one array element each) and one delivery per matching endpoint; answers, per
 * event with deliveries, its position (n, from 1) and their ids, endpoints, owners and whether
 * each was leased, by endpoint. The delivery ids are made before the insert so each can be
 * traced back to its event.
 *
 * With a taker's offer ($9 its owner, $10..$17 the room as in panelctl_claim), new deliveries
 * are leased at once within that room, in event order, as a claim would lease them, but only to
 * endpoints with no claimable delivery waiting (those go first, to whoever claims next). That
 * look walks each endpoint's due index in its order: with no order, statistics that know of one
 * endpoint's backlog had it planned as a scan of the table per matched endpoint (90 ms a
 * publish at 50,000 pending, against under 1 ms).
 */
export const PUBLISH_SQL = /* sql */ `
WITH ev AS MATERIALIZED (
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
    WITH ORDINALITY AS ev (id, event, owner_id, data, "timestamp", body, next_attempt_at, created_at, n)
), e AS (
  INSERT INTO events (id, event, owner_id, data, "timestamp")
  SELECT ev.id, ev.event, ev.owner_id, ev.data::jsonb, ev."timestamp" FROM ev
  ON CONFLICT (id) DO NOTHING
), matched AS MATERIALIZED (
  SELECT gen_random_uuid()::text AS id, ev.n, ev.id AS event_id, w.id AS endpoint_id, w.user_id AS owner_id,
         ev.event, ev.body, ev.next_attempt_at, ev.created_at,
         row_number() OVER (PARTITION BY w.id ORDER BY ev.n) AS endpoint_rank,
         row_number() OVER (PARTITION BY w.user_id ORDER BY ev.n, w.id) AS owner_rank,
         row_number() OVER (ORDER BY ev.n, w.id) AS rank
  FROM ev
  CROSS JOIN LATERAL (${MATCH_SQL('ev.event', 'ev.owner_id')}) w
), waiting AS (
  SELECT m.endpoint_id FROM (SELECT DISTINCT endpoint_id FROM matched WHERE $9::text IS NOT NULL) m
  CROSS JOIN LATERAL (
    SELECT 1 FROM deliveries x
    WHERE x.endpoint_id = m.endpoint_id AND x.state = 'pending' AND x.next_attempt_at <= $10::bigint
      AND (x.lease_until IS NULL OR x.lease_until <= $10::bigint)
    ORDER BY x.next_attempt_at, x.created_at
    LIMIT 1
  ) claimable
), planned AS MATERIALIZED (
  SELECT m.*,
         $9::text IS NOT NULL AND m.next_attempt_at <= $10::bigint AND m.rank <= $12::int AND m.endpoint_rank <= $13::int
           AND NOT (m.endpoint_id = ANY ($14::bigint[])) AND NOT (m.owner_id = ANY ($15::bigint[]))
           AND ($16::int IS NULL OR m.owner_rank <= coalesce(($18::int[])[array_position($17::bigint[], m.owner_id)], $16::int))
           AND m.endpoint_id NOT IN (SELECT endpoint_id FROM waiting) AS leased
  FROM matched m
), d AS (
  INSERT INTO deliveries (id, event_id, endpoint_id, owner_id, event, body, state, attempts, next_attempt_at, created_at, lease_owner, lease_until)
  SELECT p.id, p.event_id, p.endpoint_id, p.owner_id, p.event, p.body, 'pending', 0, p.next_attempt_at, p.created_at,
         CASE WHEN p.leased THEN $9::text END, CASE WHEN p.leased THEN $10::bigint + $11::bigint END
  FROM planned p
)
SELECT p.n, array_agg(p.id ORDER BY p.endpoint_id) AS ids, array_agg(p.endpoint_id ORDER BY p.endpoint_id) AS endpoint_ids,
       array_agg(p.owner_id ORDER BY p.endpoint_id) AS owner_ids, array_agg(p.leased ORDER BY p.endpoint_id) AS leased
FROM planned p GROUP BY p.n`;

export const outboxRepository: RepositoryFactory<OutboxRepository> = (db, ctx, work) => {
  /**
   * Publishes events in one statement: each event's endpoints are matched as subscribedTo does,
   * and every event with its deliveries commits together; dispatchers are told once it is
   * committed. Answers each event's deliveries, ordered by endpoint.
   */
  const publishAll = async (batch: Publication[]): Promise<QueuedDelivery[][]> => {
    // A taker's room applies to autocommit statements only: what it takes must be committed.
    const taker = db.inTransaction ? null : ctx.publishTaker;
    const offer = taker?.offer() ?? null;
    const taken: DeliveryRecord[] = [];
    try {
      const statement = db.query<PublishRow>(PUBLISH_SQL, [
        batch.map((p) => p.event.id),
        batch.map((p) => p.event.event),
        batch.map((p) => p.event.owner_id),
        batch.map((p) => JSON.stringify(p.event.data ?? {})),
        batch.map((p) => p.event.timestamp),
        batch.map((p) => p.template.body),
        batch.map((p) => p.template.next_attempt_at),
        batch.map((p) => p.template.created_at),
        offer?.owner ?? null,
        offer?.now ?? 0,
        offer?.leaseMs ?? 0,
        offer?.limit ?? 0,
        offer?.perEndpoint ?? 0,
        offer?.skipEndpoints ?? [],
        offer?.skipOwners ?? [],
        offer?.perOwner ?? null,
        (offer?.ownerRoom ?? []).map(([owner]) => owner),
        (offer?.ownerRoom ?? []).map(([, room]) => room),
      ]);
      // Outside a transaction the statement is its own commit: one of the outbox's hot writes.
      const { rows } = await (ctx.commitObserver && !db.inTransaction ? timedCommit(ctx, statement) : statement);
      const queued: QueuedDelivery[][] = batch.map(() => []);
      let unleased = false;
      for (const row of rows) {
        const { event, template } = batch[Number(row.n) - 1];
        queued[Number(row.n) - 1] = row.ids.map((id, i) => {
          const endpointId = Number(row.endpoint_ids[i]);
          if (!row.leased[i]) unleased = true;
          else taken.push(deliveryFromTemplate(id, endpointId, Number(row.owner_ids[i]), event.event, template));
          return { id, endpoint_id: endpointId };
        });
      }
      // Deliveries leased at publish are nobody else's work: dispatchers are woken for the rest.
      if (unleased) db.announce(OUTBOX_NOTICE);
      return queued;
    } finally {
      if (offer) taker!.take(offer, taken);
    }
  };
  // Events published outside a transaction while others are being written go together in the
  // next statement (see Batcher): one round trip and one commit for many under load.
  const publishes = db.inTransaction ? null : new Batcher(publishAll, PUBLISH_LANES, PUBLISH_MOST);

  const outbox: OutboxRepository = {
    async enqueue(event: EventRecord, deliveries: DeliveryRecord[]) {
      // One statement: the event and its deliveries (to endpoints that still exist) commit
      // together; dispatchers are told once it is committed.
      const { rows } = await db.query<{ queued: number }>(
        `WITH e AS (
           INSERT INTO events (id, event, owner_id, data, "timestamp") VALUES ($1, $2, $3, $4::jsonb, $5)
           ON CONFLICT (id) DO NOTHING
         ), d AS (
           INSERT INTO deliveries (id, event_id, endpoint_id, owner_id, event, body, state, attempts, next_attempt_at, created_at, manual)
           SELECT u.id, $1, u.endpoint_id, u.owner_id, u.event, u.body, u.state, u.attempts, u.next_attempt_at, u.created_at, u.manual
           FROM unnest($6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[], $11::text[], $12::int[], $13::bigint[], $14::text[], $15::boolean[])
             AS u (id, endpoint_id, owner_id, event, body, state, attempts, next_attempt_at, created_at, manual)
           WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = u.endpoint_id)
           RETURNING 1
         )
         SELECT count(*)::int AS queued FROM d`,
        [
          event.id,
          event.event,
          event.owner_id,
          JSON.stringify(event.data ?? {}),
          event.timestamp,
          deliveries.map((x) => x.id),
          deliveries.map((x) => x.endpoint_id),
          deliveries.map((x) => x.owner_id),
          deliveries.map((x) => x.event),
          deliveries.map((x) => x.body),
          deliveries.map((x) => x.state),
          deliveries.map((x) => x.attempts),
          deliveries.map((x) => x.next_attempt_at),
          deliveries.map((x) => x.created_at),
          deliveries.map((x) => (x.manual === undefined ? null : x.manual)),
        ],
      );
      if (rows[0].queued > 0) db.announce(OUTBOX_NOTICE);
    },
    async publish(event: EventRecord, template: DeliveryTemplate) {
      if (publishes) return publishes.run({ event, template });
      return (await publishAll([{ event, template }]))[0];
    },
    async claim(options: ClaimOptions) {
      const { owner, now, leaseMs, limit, perEndpoint } = options;
      if (limit <= 0 || perEndpoint <= 0) return [];
      const byIds = options.ids !== undefined;
      // Due, unleased candidates, at most `perEndpoint` of an endpoint and an owner's room; the
      // first `limit` are locked (SKIP LOCKED) and leased (see panelctl_claim in migrations/0001-baseline.ts).
      const { rows } = await work.query('SELECT * FROM panelctl_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)', [
        owner,
        now,
        leaseMs,
        limit,
        perEndpoint,
        options.skipEndpoints ?? [],
        options.skipOwners ?? [],
        byIds,
        options.ids ?? [],
        options.perOwner ?? null,
        (options.ownerRoom ?? []).map(([owner]) => owner),
        (options.ownerRoom ?? []).map(([, room]) => room),
      ]);
      return rows
        .map(toDelivery)
        .sort((a, b) => a.next_attempt_at - b.next_attempt_at || (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
    },
    async settle(owner: string, outcomes: DeliveryOutcome[]) {
      if (outcomes.length === 0) return [];
      const { rows } = await work.query<RecordRow>(RECORD_SQL, recordValues(owner, outcomes, [], []));
      announceRecorded(work, rows[0]);
      noteTurnover(ctx, rows[0]);
      return rows[0].settled ?? [];
    },
    async record(owner, outcomes, entries) {
      if (outcomes.length === 0 && entries.length === 0) return [];
      const prune = planPrunes(ctx, entries);
      const sql = prune.length > 0 ? RECORD_PRUNE_SQL : RECORD_SQL;
      const statement = work.query<RecordRow>(sql, recordValues(owner, outcomes, entries, prune));
      const { rows } = await (ctx.commitObserver && !work.inTransaction ? timedCommit(ctx, statement) : statement);
      notePruned(ctx, rows[0]);
      announceRecorded(work, rows[0]);
      noteTurnover(ctx, rows[0]);
      return withIds(entries, rows[0].ids);
    },
    async release(owner, ids) {
      if (ids.length === 0) return;
      const { rowCount } = await work.query(
        `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL
         WHERE id = ANY ($2::text[]) AND lease_owner = $1 AND state = 'pending'`,
        [owner, ids],
      );
      if (rowCount) work.announce(OUTBOX_NOTICE);
    },
    async nextDueAt() {
      // The earliest of each endpoint's first due (the per-endpoint due index).
      const { rows } = await work.query<{ due: number | null }>(
        `SELECT min((SELECT x.next_attempt_at FROM deliveries x
                     WHERE x.endpoint_id = p.endpoint_id AND x.state = 'pending'
                     ORDER BY x.next_attempt_at LIMIT 1)) AS due
         FROM pending_endpoints p`,
      );
      return rows[0].due === null ? null : Number(rows[0].due);
    },
    async pendingCount() {
      const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE state = 'pending'");
      return rows[0].n;
    },
    async stats() {
      // Both from the pending rows' partial index (created_at is ISO 8601 text: its order is time's).
      const { rows } = await db.query<{ n: number; oldest: string | null }>(
        "SELECT count(*)::int AS n, min(created_at) AS oldest FROM deliveries WHERE state = 'pending'",
      );
      return { pending: rows[0].n, oldest_pending_at: rows[0].oldest === null ? null : Date.parse(rows[0].oldest) };
    },
    async get(id) {
      const { rows } = await db.query('SELECT * FROM deliveries WHERE id = $1', [id]);
      return rows[0] && toDelivery(rows[0]);
    },
  };
  return outbox;
};

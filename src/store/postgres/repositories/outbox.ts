// The outbox: events published with a delivery per matching endpoint, claimed under leases,
// settled with their outcomes (see record.ts for the statement that also logs the attempts).
import {
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
import { loggedIds, noteTurnover, notePruned, planPrunes, recordValues, withIds, LIVE_ENDPOINTS_SQL, RECORD_PRUNE_SQL, RECORD_SQL, SETTLE_SQL, type RecordRow } from './record.js';
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

/**
 * The CTEs that queue an event's deliveries: `matched`, one new delivery per endpoint receiving
 * an event of the CTE `ev` (with `keep`, more of `ev`'s columns, carried along) that still
 * exists (LIVE_ENDPOINTS_SQL), and `d`, their insert. `createdAt`: the expression of `ev` each
 * delivery's `created_at` takes.
 */
export const queueMatchedSql = (createdAt: string, keep = '') => /* sql */ `receivers AS MATERIALIZED (
  SELECT${keep ? ` ${keep},` : ''} ev.id AS event_id, w.id AS endpoint_id, w.user_id AS owner_id,
         ev.event, ev.body, ev.next_attempt_at, ${createdAt} AS created_at
  FROM ev
  CROSS JOIN LATERAL (${MATCH_SQL('ev.event', 'ev.owner_id')}) w
), live AS MATERIALIZED (
  ${LIVE_ENDPOINTS_SQL('ARRAY(SELECT DISTINCT endpoint_id FROM receivers)')}
), matched AS MATERIALIZED (
  SELECT gen_random_uuid()::text AS id, r.* FROM receivers r WHERE r.endpoint_id IN (SELECT id FROM live)
), d AS (
  INSERT INTO deliveries (id, event_id, endpoint_id, owner_id, event, body, state, attempts, next_attempt_at, created_at)
  SELECT m.id, m.event_id, m.endpoint_id, m.owner_id, m.event, m.body, 'pending', 0, m.next_attempt_at, m.created_at
  FROM matched m
)`;

interface PublishRow extends Row {
  n: number;
  /** The event's delivery ids, comma-separated, in the order of `endpoint_ids`. */
  ids: string;
  /** Their endpoints' ids, comma-separated. */
  endpoint_ids: string;
}

/**
 * Events ($1..$8, one array element each) and one delivery per matching endpoint; answers, per
 * event with deliveries, its position (n, from 1) and their ids and endpoints, by endpoint. The
 * delivery ids are made before the insert so each can be traced back to its event. The lists
 * are answered as comma-separated text (ids are UUIDs): the driver parses an array answer
 * character by character in JavaScript, several times slower than a split.
 */
export const PUBLISH_SQL = /* sql */ `
WITH ev AS MATERIALIZED (
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
    WITH ORDINALITY AS ev (id, event, owner_id, data, "timestamp", body, next_attempt_at, created_at, n)
), e AS (
  INSERT INTO events (id, event, owner_id, data, "timestamp")
  SELECT ev.id, ev.event, ev.owner_id, ev.data::jsonb, ev."timestamp" FROM ev
  ON CONFLICT (id) DO NOTHING
), ${queueMatchedSql('ev.created_at', 'ev.n')}
SELECT m.n, string_agg(m.id, ',' ORDER BY m.endpoint_id) AS ids, string_agg(m.endpoint_id::text, ',' ORDER BY m.endpoint_id) AS endpoint_ids
FROM matched m GROUP BY m.n`;

/**
 * The columns a claim answers of each delivery it leased (`u`): what the claimer reads of it
 * (toDelivery), not its lease, which the claimer gave, nor its event's id. The driver parses
 * every value of an answer, and a claim answers many rows.
 */
const CLAIMED_COLUMNS = 'u.id, u.endpoint_id, u.owner_id, u.event, u.body, u.state, u.attempts, u.next_attempt_at, u.created_at, u.manual';

/** A claimable delivery, as the claim's conditions read on a row `x` ($2: now). */
const CLAIMABLE = "x.state = 'pending' AND x.next_attempt_at <= $2 AND (x.lease_until IS NULL OR x.lease_until <= $2)";

/** Locks the row at `<alias>.t` when it is still claimable, stepping over it when another holds it. */
const LOCK = (alias: string) => `CROSS JOIN LATERAL (SELECT 1 FROM deliveries x WHERE x.ctid = ${alias}.t AND ${CLAIMABLE} FOR UPDATE SKIP LOCKED) l`;

/**
 * How far ahead (ms) a claim hands out a rate-limited endpoint's send times. Longer than the
 * claim loop's safety poll (1 s), so the next claim of some daemon extends the schedule before
 * it runs out and the endpoint's rate has no gaps.
 */
export const RATE_HORIZON_MS = 2_000;

/**
 * The holder's claims rewrite its hold of an endpoint only once it would end more than this
 * part of a lease before the claim's leases (it is written to end with them): one write per
 * busy endpoint every tenth of a lease, not one per claim. The last tenth of a claim's leases
 * may then outlast the hold, which never outlasts a lease; a delivery is started within half a
 * lease of its claim (the dispatcher hands back what it held ready longer) and its attempt
 * times out after 10 s, so with the default lease (60 s) it is over before the hold ends.
 */
const HOLD_SLACK_PER_LEASE = 10;

/**
 * The claim's end, given `ranked` (candidates in due order as row address `t`, with their rank
 * in their endpoint's due order and `cap`, the most the claim takes of their endpoint): the
 * first $4 in due order with rank up to their cap are the claim as chosen, and are locked (SKIP
 * LOCKED); for each of those another claimer holds, the next candidates fill in, in due order,
 * each only while its endpoint stays within its cap, until $4 are locked. Locking goes in due
 * order and stops at the limit, so a claim locks no more rows than it leases. The locked rows
 * are leased to $1 until $2 + $3.
 *
 * With `gate` (the locked endpoint_claims rows: endpoints whose hold the claim may take or must
 * extend, and rate-limited ones; see CLAIM_SQL): the hold of each with leased deliveries passes
 * to $1 until the leases end (see HOLD_SLACK_PER_LEASE), and a rate-limited one's
 * leased deliveries take the next turns of its schedule, one every 1000 / rate ms from `base`;
 * each answers its turn as `send_at` (null: no rate).
 */
const LEASE_RANKED = (gated: boolean) => /* sql */ `
chosen AS MATERIALIZED (
  SELECT r.* FROM ranked r WHERE r.rank <= r.cap ORDER BY r.next_attempt_at, r.created_at, r.id LIMIT $4::int
), taken AS MATERIALIZED (
  SELECT c.* FROM chosen c ${LOCK('c')}
), per_endpoint AS (
  -- Counted per endpoint, then joined by endpoint: the server's generic plan of a join of the
  -- candidates on their row addresses walked them all for each one.
  SELECT a.endpoint_id, a.cap, coalesce(c.n, 0) AS chosen, coalesce(k.n, 0) AS taken
  FROM (SELECT endpoint_id, min(cap) AS cap FROM ranked GROUP BY endpoint_id) a
  LEFT JOIN (SELECT endpoint_id, count(*) AS n FROM chosen GROUP BY endpoint_id) c ON c.endpoint_id = a.endpoint_id
  LEFT JOIN (SELECT endpoint_id, count(*) AS n FROM taken GROUP BY endpoint_id) k ON k.endpoint_id = a.endpoint_id
), spares AS (
  SELECT r.* FROM ranked r JOIN per_endpoint e ON e.endpoint_id = r.endpoint_id
  WHERE r.t NOT IN (SELECT t FROM chosen) AND r.rank - e.chosen <= e.cap - e.taken
  ORDER BY r.next_attempt_at, r.created_at, r.id
), filled AS MATERIALIZED (
  SELECT s.* FROM spares s ${LOCK('s')}
  LIMIT greatest($4::int - (SELECT count(*) FROM taken), 0)
), ${
  gated
    ? /* sql */ `leased AS MATERIALIZED (
  SELECT l.t, l.id, l.endpoint_id,
         row_number() OVER (PARTITION BY l.endpoint_id ORDER BY l.next_attempt_at, l.created_at, l.id) - 1 AS turn
  FROM (SELECT t, id, endpoint_id, next_attempt_at, created_at FROM taken
        UNION ALL SELECT t, id, endpoint_id, next_attempt_at, created_at FROM filled) l
), held AS (
  UPDATE endpoint_claims c
  SET holder = $1, holder_until = $2 + $3,
      next_send_at = CASE WHEN g.rate IS NULL THEN c.next_send_at ELSE g.base + n.count * 1000.0 / g.rate END
  FROM gate g JOIN (SELECT endpoint_id, count(*) AS count FROM leased GROUP BY endpoint_id) n ON n.endpoint_id = g.endpoint_id
  WHERE c.endpoint_id = g.endpoint_id
), sends AS (
  SELECT l.id, round(g.base + l.turn * 1000.0 / g.rate)::bigint AS send_at
  FROM leased l JOIN gate g ON g.endpoint_id = l.endpoint_id WHERE g.rate IS NOT NULL
), `
    : `leased AS (SELECT t FROM taken UNION ALL SELECT t FROM filled), sends AS (SELECT NULL::text AS id, NULL::bigint AS send_at WHERE false), `
}upd AS (
  UPDATE deliveries u SET lease_owner = $1, lease_until = $2 + $3
  WHERE u.ctid = ANY (ARRAY(SELECT t FROM leased))
  RETURNING ${CLAIMED_COLUMNS}
)
SELECT upd.*, s.send_at FROM upd LEFT JOIN sends s ON s.id = upd.id`;

/** A paused endpoint `<id>` (a primary-key lookup per endpoint with pending work): its deliveries wait. */
const PAUSED = (id: string) => `SELECT 1 FROM webhooks w WHERE w.id = ${id} AND w.paused`;

/**
 * Claims due deliveries in one statement ($6: endpoints to skip, $7: owners to skip). The
 * candidates are each endpoint's first 2 × $5 claimable deliveries, walked in due order on the
 * per-endpoint index from the endpoints that have pending work (the pending_endpoints skip
 * scan; paused endpoints left out), so a claim costs the endpoints with work, not the backlog; of
 * those, the first 3 × $4 in due order, as row addresses: enough for the claim and for what two
 * other claimers at once may hold. LEASE_RANKED then locks and leases them.
 *
 * Every endpoint is held by one daemon at a time (endpoint_claims), so its cap, its own
 * `max_in_flight` or the default, holds over every daemon: an endpoint another daemon holds (its
 * hold has not ended) is left out. Each endpoint's row is read once (`holds`). A hold of $1's
 * that needs no extending (HOLD_SLACK_PER_LEASE) is only read (`kept`): no other daemon writes a
 * hold that has not ended, and one daemon's claims come one after another, so the read is its
 * newest version. Any other row is locked (SKIP LOCKED: one another claim is working on is left
 * to it this time) and read again as locked, the newest committed version, when the claim may
 * take the hold or must extend it, or the endpoint has a rate (`gate`). An endpoint's share of the claim is $5, except that a rate-limited one
 * takes only the turns of its schedule that fall within RATE_HORIZON_MS from now, so every
 * daemon's claims together follow one schedule.
 *
 * Row addresses rather than ids: a lookup by address is no index descent, and the server plans
 * the queue tables from statistics that lag their churn (an id join was planned as a scan of
 * every pending delivery). A candidate whose row changed since it was read is no longer at its
 * address (or is locked) and is stepped over. The work pool runs with enable_seqscan off
 * (postgres-store.ts).
 */
const CLAIM_SQL = /* sql */ `
WITH eps AS MATERIALIZED (
  SELECT p.endpoint_id, w.rate_limit_per_second AS rate
  FROM pending_endpoints p JOIN webhooks w ON w.id = p.endpoint_id
  WHERE NOT w.paused AND NOT (p.endpoint_id = ANY ($6::bigint[]))
), holds AS MATERIALIZED (
  SELECT e.endpoint_id, e.rate,
         coalesce(c.holder = $1 AND c.holder_until > $2 AND c.holder_until >= $2 + $3 - $3 / ${HOLD_SLACK_PER_LEASE} AND e.rate IS NULL, false) AS kept
  FROM eps e JOIN endpoint_claims c ON c.endpoint_id = e.endpoint_id
), gate AS MATERIALIZED (
  SELECT c.endpoint_id, h.rate, greatest(c.next_send_at, $2::float8) AS base
  FROM holds h JOIN endpoint_claims c ON c.endpoint_id = h.endpoint_id
  WHERE NOT h.kept
    AND (c.holder IS NULL OR c.holder_until <= $2
         OR (c.holder = $1 AND (h.rate IS NOT NULL OR c.holder_until < $2 + $3 - $3 / ${HOLD_SLACK_PER_LEASE})))
  FOR UPDATE OF c SKIP LOCKED
), allowed AS MATERIALIZED (
  SELECT h.endpoint_id, $5::int AS cap FROM holds h WHERE h.kept
  UNION ALL
  SELECT g.endpoint_id,
         CASE WHEN g.rate IS NULL THEN $5::int
              ELSE least($5::int, greatest(ceil(($2 + ${RATE_HORIZON_MS} - g.base) * g.rate / 1000.0), 0))::int END AS cap
  FROM gate g
), candidates AS MATERIALIZED (
  SELECT c.t, c.endpoint_id, c.next_attempt_at, c.created_at, c.id, a.cap
  FROM allowed a
  CROSS JOIN LATERAL (
    SELECT x.ctid AS t, x.endpoint_id, x.next_attempt_at, x.created_at, x.id FROM deliveries x
    WHERE x.endpoint_id = a.endpoint_id AND ${CLAIMABLE}
      AND (x.owner_id IS NULL OR NOT (x.owner_id = ANY ($7::bigint[])))
    ORDER BY x.next_attempt_at, x.created_at
    LIMIT 2 * $5::int
  ) c
  WHERE a.cap > 0
  ORDER BY c.next_attempt_at, c.created_at, c.id
  LIMIT 3 * $4::int
), ranked AS MATERIALIZED (
  SELECT k.*, row_number() OVER (PARTITION BY k.endpoint_id ORDER BY k.next_attempt_at, k.created_at, k.id) AS rank FROM candidates k
), ${LEASE_RANKED(true)}`;

/** As CLAIM_SQL, for the deliveries named in $6 only (a manual send); no skips, caps or rates apply. */
const CLAIM_IDS_SQL = /* sql */ `
WITH ranked AS MATERIALIZED (
  SELECT x.ctid AS t, x.endpoint_id, x.next_attempt_at, x.created_at, x.id, $5::int AS cap,
         row_number() OVER (PARTITION BY x.endpoint_id ORDER BY x.next_attempt_at, x.created_at, x.id) AS rank
  FROM deliveries x
  WHERE x.id = ANY ($6::text[]) AND ${CLAIMABLE}
), ${LEASE_RANKED(false)}`;

/** Due order: due time, then creation, then id. */
function dueOrder(a: DeliveryRecord, b: DeliveryRecord): number {
  return a.next_attempt_at - b.next_attempt_at || (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export const outboxRepository: RepositoryFactory<OutboxRepository> = (db, ctx, work) => {
  /**
   * Publishes events in one statement: each event's endpoints are matched as subscribedTo does,
   * and every event with its deliveries commits together; dispatchers are told once it is
   * committed. Answers each event's deliveries, ordered by endpoint.
   */
  const publishAll = async (batch: Publication[]): Promise<QueuedDelivery[][]> => {
    const statement = db.query<PublishRow>(PUBLISH_SQL, [
      batch.map((p) => p.event.id),
      batch.map((p) => p.event.event),
      batch.map((p) => p.event.owner_id),
      batch.map((p) => JSON.stringify(p.event.data ?? {})),
      batch.map((p) => p.event.timestamp),
      batch.map((p) => p.template.body),
      batch.map((p) => p.template.next_attempt_at),
      batch.map((p) => p.template.created_at),
    ]);
    // Outside a transaction the statement is its own commit: one of the outbox's hot writes.
    const { rows } = await (ctx.commitObserver && !db.inTransaction ? timedCommit(ctx, statement) : statement);
    const queued: QueuedDelivery[][] = batch.map(() => []);
    for (const row of rows) {
      const endpointIds = row.endpoint_ids.split(',');
      queued[Number(row.n) - 1] = row.ids.split(',').map((id, i) => ({ id, endpoint_id: Number(endpointIds[i]) }));
    }
    if (rows.length > 0) db.announce(OUTBOX_NOTICE);
    return queued;
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
           WHERE u.endpoint_id IN (${LIVE_ENDPOINTS_SQL('$7::bigint[]')})
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
      const { rows } =
        options.ids !== undefined
          ? await work.query(CLAIM_IDS_SQL, [owner, now, leaseMs, limit, perEndpoint, options.ids])
          : await work.query(CLAIM_SQL, [owner, now, leaseMs, limit, perEndpoint, options.skipEndpoints ?? [], options.skipOwners ?? []]);
      return rows.map(toDelivery).sort(dueOrder);
    },
    async settle(owner: string, outcomes: DeliveryOutcome[]) {
      if (outcomes.length === 0) return [];
      const { rows } = await work.query<RecordRow>(SETTLE_SQL, recordValues(owner, outcomes, [], []));
      noteTurnover(ctx, rows[0], []);
      return rows[0].settled ?? [];
    },
    async record(owner, outcomes, entries) {
      if (outcomes.length === 0 && entries.length === 0) return [];
      const prune = planPrunes(ctx, entries);
      const sql = prune.length > 0 ? RECORD_PRUNE_SQL : RECORD_SQL;
      const statement = work.query<RecordRow>(sql, recordValues(owner, outcomes, entries, prune));
      const { rows } = await (ctx.commitObserver && !work.inTransaction ? timedCommit(ctx, statement) : statement);
      const logged = loggedIds(rows[0]);
      notePruned(ctx, rows[0]);
      noteTurnover(ctx, rows[0], logged);
      return withIds(entries, rows[0]);
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
    async leave(owner) {
      const { rowCount } = await work.query('UPDATE endpoint_claims SET holder = NULL, holder_until = 0 WHERE holder = $1', [owner]);
      if (rowCount) work.announce(OUTBOX_NOTICE);
    },
    async abandon(owner) {
      // Both in one statement: the deliveries it leased (no index on lease_owner: a scan of the
      // pending deliveries, once per daemon start after a crash) and the endpoints it held.
      const { rows } = await work.query<{ n: number }>(
        `WITH d AS (UPDATE deliveries SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1 AND state = 'pending' RETURNING 1),
              h AS (UPDATE endpoint_claims SET holder = NULL, holder_until = 0 WHERE holder = $1 RETURNING 1)
         SELECT (SELECT count(*) FROM d)::int + (SELECT count(*) FROM h)::int AS n`,
        [owner],
      );
      if (rows[0].n > 0) work.announce(OUTBOX_NOTICE);
    },
    async nextDueAt() {
      // The earliest of each endpoint's first due (the per-endpoint due index). Prepared (the
      // empty values): a dispatcher asks after most claims, and as text it was parsed and planned
      // every time, which cost the server as much as running it.
      const { rows } = await work.query<{ due: number | null }>(
        `SELECT min((SELECT x.next_attempt_at FROM deliveries x
                     WHERE x.endpoint_id = p.endpoint_id AND x.state = 'pending'
                     ORDER BY x.next_attempt_at LIMIT 1)) AS due
         FROM pending_endpoints p WHERE NOT EXISTS (${PAUSED('p.endpoint_id')})`,
        [],
      );
      return rows[0].due === null ? null : Number(rows[0].due);
    },
    async nextRetryAt(endpointIds) {
      const due = new Map<number, number>();
      if (endpointIds.length === 0) return due;
      // The per-endpoint due index, read from each endpoint's first pending delivery on.
      const { rows } = await work.query<{ endpoint_id: string; due: string }>(
        `SELECT endpoint_id, min(next_attempt_at) AS due FROM deliveries
         WHERE endpoint_id = ANY ($1::bigint[]) AND state = 'pending' AND attempts > 0
         GROUP BY endpoint_id`,
        [endpointIds],
      );
      for (const row of rows) due.set(Number(row.endpoint_id), Number(row.due));
      return due;
    },
    async pendingCount() {
      const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE state = 'pending'");
      return rows[0].n;
    },
    async pendingByEndpoint(endpointIds) {
      if (endpointIds.length === 0) return new Map();
      const { rows } = await db.query<{ endpoint_id: number; n: number }>(
        "SELECT endpoint_id, count(*)::int AS n FROM deliveries WHERE state = 'pending' AND endpoint_id = ANY ($1::bigint[]) GROUP BY endpoint_id",
        [endpointIds],
      );
      return new Map(rows.map((r) => [Number(r.endpoint_id), r.n]));
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

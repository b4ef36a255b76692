// The statement that records a dispatcher's batch: log entries appended, outcomes settled and
// logs pruned in one round trip and one commit (outbox.record, outbox.settle, deliveryLog.append).
import { LOG_RETENTION, type DeliveryOutcome } from '../../store.js';
import type { DeliveryLogEntry } from '../../types.js';
import type { Db, Row } from '../db.js';
import { logExtra } from '../rows.js';
import { OUTBOX_NOTICE, type StoreContext } from './context.js';

/**
 * A dispatcher's batch prunes an endpoint's log once this many of its entries were recorded
 * since (by this process): the table holds a little over the retention, and `list` serves the
 * newest LOG_RETENTION. Pruning on every batch was a statement per batch.
 */
const PRUNE_EVERY = LOG_RETENTION;
/** The most rows one prune deletes of an endpoint's log; the next prune takes any rest. */
const PRUNE_MOST = 10 * LOG_RETENTION;
/**
 * Every this many prunes of an endpoint, one goes over its whole log (see PrunedLog); the others
 * start where the last ended.
 */
const FULL_PRUNE_EVERY = 10;

/**
 * Appends log entries, settles outcomes and prunes logs in one statement (one round trip, one
 * commit). Each entry gets its id from the sequence in the order given, also when its endpoint
 * was deleted meanwhile (such an entry is answered but not kept, as the JSON store does). Final
 * outcomes delete their delivery, as the JSON store does; a retry stays pending, unleased. Once
 * committed, one notice names the kept entries (daemons with someone watching read them) and
 * another wakes dispatchers for retries. A prune deletes by row address, which the server visits
 * in address order: two daemons pruning one endpoint at once wait for each other row by row in
 * the same order, never in a cycle, and the second skips what the first deleted.
 */
export const RECORD_SQL = recordSql({ prune: false, settled: false });
/** As RECORD_SQL, and prunes the logs of the endpoints in $18, each from the id in $19 up (see PrunedLog). */
export const RECORD_PRUNE_SQL = recordSql({ prune: true, settled: false });
/** As RECORD_SQL (with no entries: `settle`), answering the ids of the deliveries settled as well. */
export const SETTLE_SQL = recordSql({ prune: false, settled: true });

/**
 * The row addresses of the deliveries among the outcomes `o` that match `condition` and are
 * leased to $13, each looked up by primary key (the LIMIT keeps the lookup from being turned
 * into a join). Joined to the table, the outcomes were planned, with statistics behind the
 * churn, as a scan of the whole table on every batch, dead rows included: hundreds of pages
 * for a few dozen live rows between two vacuums. The statement checks the lease again on the
 * row it changes, so a row changed meanwhile by another claimer is left alone.
 */
function mineSql(condition: string): string {
  return `SELECT x.ctid FROM o CROSS JOIN LATERAL (SELECT y.ctid FROM deliveries y WHERE y.id = o.id AND y.lease_owner = $13 LIMIT 1) x WHERE ${condition}`;
}

/**
 * The statement of `record`, with or without the prune. Most batches prune nothing, and a prune
 * part in a statement costs even when its list is empty: the plan cached for it scanned the
 * whole log table (dead rows included) before finding there was nothing to delete. The prune
 * walks each endpoint's entries by its index, newest first, and deletes by row address.
 * `settled`: the ids of the deliveries settled are answered (only `settle` returns them; the
 * driver parses every id of an answer). The entries kept are answered by those not kept (an
 * endpoint deleted meanwhile), which is nearly always none.
 */
function recordSql({ prune, settled }: { prune: boolean; settled: boolean }): string {
  return /* sql */ `
WITH u AS MATERIALIZED (
  SELECT nextval('delivery_log_id_seq'::regclass) AS id, v.*
  FROM (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::int[], $7::text[], $8::boolean[], $9::float8[], $10::text[], $11::text[], $12::text[])
      WITH ORDINALITY AS x (delivery_id, endpoint_id, event, payload, attempt, status_code, response, success, duration_ms, created_at, request_headers, extra, n)
    ORDER BY x.n
  ) v
), ins AS (
  INSERT INTO delivery_log (id, delivery_id, endpoint_id, event, payload, attempt, status_code, response, success, duration_ms, created_at, request_headers, extra)
  SELECT u.id, u.delivery_id, u.endpoint_id, u.event, u.payload::json, u.attempt, u.status_code, u.response, u.success, u.duration_ms,
         u.created_at, u.request_headers::jsonb, u.extra::jsonb
  FROM u WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = u.endpoint_id)
  RETURNING id
), o AS MATERIALIZED (
  SELECT * FROM unnest($14::text[], $15::text[], $16::int[], $17::bigint[]) AS o (id, state, attempts, next_attempt_at)
), retried AS (
  UPDATE deliveries d SET attempts = o.attempts, next_attempt_at = o.next_attempt_at, lease_owner = NULL, lease_until = NULL
  FROM o WHERE d.ctid = ANY (ARRAY(${mineSql("o.state = 'pending'")})) AND d.id = o.id AND d.lease_owner = $13 AND o.state = 'pending'
  RETURNING d.id
), done AS (
  DELETE FROM deliveries d WHERE d.ctid = ANY (ARRAY(${mineSql("o.state <> 'pending'")})) AND d.lease_owner = $13
  RETURNING d.id
)${
    prune
      ? /* sql */ `, bounds AS MATERIALIZED (
  SELECT e.endpoint_id, e.low, kept.id AS high FROM unnest($18::bigint[], $19::bigint[]) AS e (endpoint_id, low)
  CROSS JOIN LATERAL (
    SELECT x.id FROM delivery_log x WHERE x.endpoint_id = e.endpoint_id ORDER BY x.id DESC OFFSET ${LOG_RETENTION - 1} LIMIT 1
  ) kept
), pruned AS (
  DELETE FROM delivery_log WHERE ctid = ANY (ARRAY(
    SELECT old.ctid FROM bounds b
    CROSS JOIN LATERAL (
      SELECT y.ctid FROM delivery_log y WHERE y.endpoint_id = b.endpoint_id AND y.id < b.high AND y.id >= b.low
      ORDER BY y.id DESC LIMIT ${PRUNE_MOST}
    ) old
  ))
)`
      : ''
  }
SELECT (SELECT array_agg(u.id ORDER BY u.n) FROM u) AS ids,${
    settled ? /* sql */ `
       (SELECT array_agg(id) FROM (SELECT id FROM retried UNION ALL SELECT id FROM done) s) AS settled,` : /* sql */ `
       (SELECT count(*) FROM done) + (SELECT count(*) FROM retried) AS settled_count,`
  }
       (SELECT array_agg(u.id) FROM u WHERE u.id NOT IN (SELECT id FROM ins)) AS unlogged,
       EXISTS (SELECT 1 FROM retried) AS retried${
    prune ? /* sql */ `,
       (SELECT array_agg(b.endpoint_id) FROM bounds b) AS pruned_endpoints,
       (SELECT array_agg(b.high) FROM bounds b) AS pruned_below` : ''
  }`;
}

export interface RecordRow extends Row {
  /** Every entry's id, in the order given. */
  ids: number[] | null;
  /** SETTLE_SQL: the ids of the deliveries settled. */
  settled?: string[] | null;
  /** The other statements: how many deliveries were settled. */
  settled_count?: number;
  /** The ids of the entries not kept (their endpoints are gone). */
  unlogged: number[] | null;
  retried: boolean;
  /** With a prune: the endpoints pruned and, for each, the id below which it was. */
  pruned_endpoints?: number[] | null;
  pruned_below?: number[] | null;
}

/** Where each prune of the statement ended, for the next prune of the endpoint to start from. */
export function notePruned(ctx: StoreContext, row: RecordRow): void {
  const endpoints = row.pruned_endpoints ?? [];
  endpoints.forEach((endpointId, i) => {
    const count = (ctx.pruned.get(Number(endpointId))?.count ?? 0) + 1;
    ctx.pruned.set(Number(endpointId), { below: Number(row.pruned_below![i]), count });
  });
}

/** The ids of the entries kept (their endpoints exist), in id order. */
export function loggedIds(row: RecordRow): number[] {
  const ids = (row.ids ?? []).map(Number);
  const unlogged = new Set((row.unlogged ?? []).map(Number));
  return (unlogged.size > 0 ? ids.filter((id) => !unlogged.has(id)) : ids).sort((a, b) => a - b);
}

/** Deliveries settled and log entries kept (each to be pruned in turn) count toward a vacuum. */
export function noteTurnover(ctx: StoreContext, row: RecordRow, logged: readonly number[] = loggedIds(row)): void {
  ctx.vacuum.turnedOver((row.settled?.length ?? Number(row.settled_count ?? 0)) + logged.length);
}

/** New entries are named to every daemon; a retry wakes dispatchers. */
export function announceRecorded(d: Db, row: RecordRow, logged: readonly number[] = loggedIds(row)): void {
  if (logged.length > 0) d.announce(JSON.stringify({ kind: 'logged', ids: logged }));
  if (row.retried) d.announce(OUTBOX_NOTICE);
}

/**
 * The endpoints whose logs the batch of `entries` prunes: each one whose count of entries since
 * its last prune (by this process) reaches PRUNE_EVERY, from where that prune ended (see PrunedLog).
 */
export function planPrunes(ctx: StoreContext, entries: readonly Omit<DeliveryLogEntry, 'id'>[]): Prune[] {
  const prune: Prune[] = [];
  for (const entry of entries) {
    const count = (ctx.unpruned.get(entry.endpoint_id) ?? 0) + 1;
    if (count >= PRUNE_EVERY) {
      ctx.unpruned.delete(entry.endpoint_id);
      const last = ctx.pruned.get(entry.endpoint_id);
      prune.push({ endpointId: entry.endpoint_id, low: last && last.count % FULL_PRUNE_EVERY !== 0 ? last.below : 0 });
    } else ctx.unpruned.set(entry.endpoint_id, count);
  }
  return prune;
}

/** An endpoint whose log to prune, from the id `low` up (0: all of it). */
export interface Prune {
  endpointId: number;
  low: number;
}

export function recordValues(owner: string, outcomes: DeliveryOutcome[], entries: Omit<DeliveryLogEntry, 'id'>[], prune: Prune[]): unknown[] {
  return [
    entries.map((e) => e.delivery_id),
    entries.map((e) => e.endpoint_id),
    entries.map((e) => e.event),
    entries.map((e) => (e.payload === undefined ? null : JSON.stringify(e.payload))),
    entries.map((e) => e.attempt),
    entries.map((e) => e.status_code),
    entries.map((e) => e.response),
    entries.map((e) => e.success),
    entries.map((e) => e.duration_ms),
    entries.map((e) => e.created_at),
    entries.map((e) => JSON.stringify(e.request_headers ?? {})),
    entries.map((e) => {
      const extra = logExtra(e);
      return extra ? JSON.stringify(extra) : null;
    }),
    owner,
    outcomes.map((o) => o.id),
    outcomes.map((o) => o.state),
    outcomes.map((o) => o.attempts),
    outcomes.map((o) => o.next_attempt_at),
    ...(prune.length > 0 ? [prune.map((p) => p.endpointId), prune.map((p) => p.low)] : []),
  ];
}

/** The entries as stored: the given fields with the ids the statement assigned, in order. */
export function withIds(entries: Omit<DeliveryLogEntry, 'id'>[], ids: number[] | null): DeliveryLogEntry[] {
  return entries.map((entry, i) => ({ ...entry, id: Number(ids![i]) }));
}

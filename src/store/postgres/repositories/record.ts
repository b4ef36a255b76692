// The statement that records a dispatcher's batch: log entries appended, outcomes settled and
// logs pruned in one round trip and one commit (outbox.record, outbox.settle, deliveryLog.append).
import { LOG_RETENTION, type DeliveryOutcome } from '../../store.js';
import type { DeliveryLogEntry } from '../../types.js';
import type { Row } from '../db.js';
import { logExtra } from '../rows.js';
import { CHANNEL, OUTBOX_NOTICE, type StoreContext } from './context.js';

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
 * The most entry ids one `logged` notice names: a notice's payload is at most 8,000 bytes, and
 * an id has at most 16 digits (below 2^53).
 */
const LOGGED_PER_NOTICE = 400;

/**
 * The endpoints among `<ids>` (an SQL array of endpoint ids) that still exist, each locked FOR
 * KEY SHARE until the statement's commit: the outbox and the log keep no foreign key (migration
 * 0012), so a statement writing rows of endpoints locks each one once, as the key's check of
 * every row did. An endpoint removed meanwhile is waited for and then left out; one removed
 * later takes the rows with it (its removal waits for this commit and then sees them).
 */
export const LIVE_ENDPOINTS_SQL = (ids: string) => `SELECT w.id FROM webhooks w WHERE w.id = ANY (${ids}) FOR KEY SHARE OF w`;

/**
 * The notices of a record, sent by its own transaction at its commit: the kept entries by id, in
 * notices of up to LOGGED_PER_NOTICE ids (daemons with someone watching read them), and, when an
 * outcome was a retry, the outbox's (dispatchers look for work). A NOTIFY makes its transaction's
 * commit wait for every other notifying commit's on the server (see Notifier): a dispatcher
 * records one batch at a time, so its records do not wait for one another, while a notice sent
 * on its own would cost a statement per batch.
 */
const NOTICES_SQL = /* sql */ `SELECT count(pg_notify('${CHANNEL}', n.notice)) FROM (
    SELECT json_build_object('kind', 'logged', 'ids', array_agg(k.id ORDER BY k.id))::text AS notice
    FROM (SELECT id, (row_number() OVER (ORDER BY id) - 1) / ${LOGGED_PER_NOTICE} AS part FROM ins) k GROUP BY k.part
    UNION ALL SELECT '${OUTBOX_NOTICE}' WHERE EXISTS (SELECT 1 FROM retried)
  ) n`;

/**
 * The CTEs that add the entries inserted (`ins`: id, endpoint_id) to their endpoints' log
 * revisions (LOG_REVISION_SQL in delivery-log.ts): one counter row per endpoint written that no other
 * transaction holds (SKIP LOCKED: writers to one endpoint never wait for each other's commit on
 * a counter), or a new one. The counters commit with their entries, in the same statement. The
 * statement that writes the log does this itself rather than a trigger on the log: a trigger's
 * call and its three statements cost the server more per record than the entries' own rows.
 */
const COUNT_REVISIONS_SQL = /* sql */ `counted AS MATERIALIZED (
  SELECT i.endpoint_id, count(*) AS n FROM ins i GROUP BY i.endpoint_id
), counters AS MATERIALIZED (
  SELECT c.endpoint_id, c.n, f.id FROM counted c
  LEFT JOIN LATERAL (
    SELECT r.id FROM delivery_log_revisions r WHERE r.endpoint_id = c.endpoint_id LIMIT 1 FOR UPDATE SKIP LOCKED
  ) f ON true
), bumped AS (
  UPDATE delivery_log_revisions r SET entries = r.entries + c.n FROM counters c WHERE r.id = c.id
), added AS (
  INSERT INTO delivery_log_revisions (endpoint_id, entries) SELECT c.endpoint_id, c.n FROM counters c WHERE c.id IS NULL
)`;

/**
 * Appends log entries, settles outcomes and prunes logs in one statement (one round trip, one
 * commit). Each entry gets its id from the sequence in the order given, also when its endpoint
 * was deleted meanwhile (such an entry is answered but not kept, as the JSON store does); the
 * endpoints written to are locked once each (LIVE_ENDPOINTS_SQL), and their log revisions
 * counted (COUNT_REVISIONS_SQL). Final outcomes delete their
 * delivery, as the JSON store does; a retry stays pending, unleased. The
 * statement's own transaction sends its notices (NOTICES_SQL), so they go out with its commit
 * and cost no statement of their own. A prune deletes by row address, which the server visits
 * in address order: two daemons pruning one endpoint at once wait for each other row by row in
 * the same order, never in a cycle, and the second skips what the first deleted.
 */
export const RECORD_SQL = recordSql({ prune: false, settled: false });
/**
 * As RECORD_SQL, and prunes the logs of the endpoints in $7, a JSON array of [endpoint, low]
 * pairs, each from the id `low` up (see PrunedLog). JSON rather than two arrays: the server
 * estimates an array parameter by its length, so with arrays it found each call's own plan
 * cheaper than the prepared one and planned the statement anew nearly every time.
 */
export const RECORD_PRUNE_SQL = recordSql({ prune: true, settled: false });
/** As RECORD_SQL (with no entries: `settle`), answering the ids of the deliveries settled as well. */
export const SETTLE_SQL = recordSql({ prune: false, settled: true });

/**
 * The row addresses of the deliveries among the outcomes `o` that match `condition` and are
 * leased to $2, each looked up by primary key (the LIMIT keeps the lookup from being turned
 * into a join). Joined to the table, the outcomes were planned, with statistics behind the
 * churn, as a scan of the whole table on every batch, dead rows included: hundreds of pages
 * for a few dozen live rows between two vacuums. The statement checks the lease again on the
 * row it changes, so a row changed meanwhile by another claimer is left alone.
 */
function mineSql(condition: string): string {
  return `SELECT x.ctid FROM o CROSS JOIN LATERAL (SELECT y.ctid FROM deliveries y WHERE y.id = o.id AND y.lease_owner = $2 LIMIT 1) x WHERE ${condition}`;
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
    SELECT * FROM ROWS FROM (json_to_recordset($1::json) AS (delivery_id text, endpoint_id bigint, event text, payload json, attempt int, status_code int,
      response text, success boolean, duration_ms float8, created_at text, request_headers text, extra text))
      WITH ORDINALITY AS x (delivery_id, endpoint_id, event, payload, attempt, status_code, response, success, duration_ms, created_at, request_headers, extra, n)
    ORDER BY x.n
  ) v
), live AS MATERIALIZED (
  ${LIVE_ENDPOINTS_SQL('ARRAY(SELECT DISTINCT endpoint_id FROM u)')}
), ins AS (
  INSERT INTO delivery_log (id, delivery_id, endpoint_id, event, payload, attempt, status_code, response, success, duration_ms, created_at, request_headers, extra)
  SELECT u.id, u.delivery_id, u.endpoint_id, u.event, u.payload, u.attempt, u.status_code, u.response, u.success, u.duration_ms,
         u.created_at, u.request_headers, u.extra
  FROM u WHERE u.endpoint_id IN (SELECT id FROM live)
  RETURNING id, endpoint_id
), ${COUNT_REVISIONS_SQL}, o AS MATERIALIZED (
  SELECT * FROM unnest($3::text[], $4::text[], $5::int[], $6::bigint[]) AS o (id, state, attempts, next_attempt_at)
), retried AS (
  UPDATE deliveries d SET attempts = o.attempts, next_attempt_at = o.next_attempt_at, lease_owner = NULL, lease_until = NULL
  FROM o WHERE d.ctid = ANY (ARRAY(${mineSql("o.state = 'pending'")})) AND d.id = o.id AND d.lease_owner = $2 AND o.state = 'pending'
  RETURNING d.id
), done AS (
  DELETE FROM deliveries d WHERE d.ctid = ANY (ARRAY(${mineSql("o.state <> 'pending'")})) AND d.lease_owner = $2
  RETURNING d.id
)${
    prune
      ? /* sql */ `, bounds AS MATERIALIZED (
  SELECT e.endpoint_id, e.low, kept.id AS high
  FROM (SELECT (p->>0)::bigint AS endpoint_id, (p->>1)::bigint AS low FROM json_array_elements($7::json) p) e
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
SELECT (SELECT string_agg(u.id::text, ',' ORDER BY u.n) FROM u) AS ids, (${NOTICES_SQL}) AS notices,${
    settled ? /* sql */ `
       (SELECT array_agg(id) FROM (SELECT id FROM retried UNION ALL SELECT id FROM done) s) AS settled,` : /* sql */ `
       (SELECT count(*) FROM done) + (SELECT count(*) FROM retried) AS settled_count,`
  }
       (SELECT array_agg(u.id) FROM u WHERE u.id NOT IN (SELECT id FROM ins)) AS unlogged${
    prune ? /* sql */ `,
       (SELECT array_agg(b.endpoint_id) FROM bounds b) AS pruned_endpoints,
       (SELECT array_agg(b.high) FROM bounds b) AS pruned_below` : ''
  }`;
}

export interface RecordRow extends Row {
  /** Every entry's id, in the order given, comma-separated (see entryIds). */
  ids: string | null;
  /** SETTLE_SQL: the ids of the deliveries settled. */
  settled?: string[] | null;
  /** The other statements: how many deliveries were settled. */
  settled_count?: number;
  /** The ids of the entries not kept (their endpoints are gone). */
  unlogged: number[] | null;
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
  const ids = entryIds(row);
  const unlogged = new Set((row.unlogged ?? []).map(Number));
  return (unlogged.size > 0 ? ids.filter((id) => !unlogged.has(id)) : ids).sort((a, b) => a - b);
}

/** Deliveries settled and log entries kept (each to be pruned in turn) count toward a vacuum. */
export function noteTurnover(ctx: StoreContext, row: RecordRow, logged: readonly number[] = loggedIds(row)): void {
  ctx.vacuum.turnedOver((row.settled?.length ?? Number(row.settled_count ?? 0)) + logged.length);
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

/**
 * The values of a record statement: the entries as one JSON array ($1; a column each, and the
 * payload as its exact JSON text, so it keeps its key order), the owner ($2), the outcomes as
 * arrays ($3..$6) and the prunes ($7, as JSON).
 */
export function recordValues(owner: string, outcomes: DeliveryOutcome[], entries: Omit<DeliveryLogEntry, 'id'>[], prune: Prune[]): unknown[] {
  return [
    entriesJson(entries),
    owner,
    outcomes.map((o) => o.id),
    outcomes.map((o) => o.state),
    outcomes.map((o) => o.attempts),
    outcomes.map((o) => o.next_attempt_at),
    ...(prune.length > 0 ? [JSON.stringify(prune.map((p) => [p.endpointId, p.low]))] : []),
  ];
}

/** A lone surrogate as JSON.stringify writes it, an escape (pairs are written as they are). */
const SURROGATE_ESCAPE = /\\ud[89a-f]/i;

/** A NUL as JSON.stringify writes it. */
const NUL_ESCAPE = /\\u0000/;

/** String.prototype.toWellFormed (Node 20), which the compiled-for library does not declare. */
type WellFormable = string & { toWellFormed(): string };

/** `value` with every NUL of its strings (keys too) as U+FFFD. */
function withoutNul(value: unknown): unknown {
  if (typeof value === 'string') return value.replaceAll('\0', '\ufffd');
  if (Array.isArray(value)) return value.map(withoutNul);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k.replaceAll('\0', '\ufffd'), withoutNul(v)]));
  }
  return value;
}

/**
 * The entries as the JSON array of RECORD_SQL's `json_to_recordset`: one string for the batch,
 * where arrays of every column cost the driver an escaping pass over each value. A string with a
 * lone surrogate (which the server's JSON parser refuses) is sent with U+FFFD in its place, as
 * the driver's UTF-8 encoding of a text value would. The request headers and extra fields are
 * kept as text and read back as jsonb, which refuses a NUL: theirs are sent as U+FFFD, so one
 * entry can never make its log unreadable.
 */
function entriesJson(entries: Omit<DeliveryLogEntry, 'id'>[]): string {
  const rows = entries.map((e) => ({
    delivery_id: e.delivery_id,
    endpoint_id: e.endpoint_id,
    event: e.event,
    payload: e.payload,
    attempt: e.attempt,
    status_code: e.status_code,
    response: e.response,
    success: e.success,
    duration_ms: e.duration_ms,
    created_at: e.created_at,
    request_headers: e.request_headers ?? {},
    extra: logExtra(e),
  }));
  let json = JSON.stringify(rows);
  // Both escapes start so; nearly every batch has neither, and one search finds that.
  if (!json.includes('\\u')) return json;
  if (NUL_ESCAPE.test(json)) {
    for (const row of rows) {
      row.request_headers = withoutNul(row.request_headers) as typeof row.request_headers;
      row.extra = withoutNul(row.extra) as typeof row.extra;
    }
    json = JSON.stringify(rows);
  }
  return SURROGATE_ESCAPE.test(json) ? JSON.stringify(rows, (_key, value: unknown) => (typeof value === 'string' ? (value as WellFormable).toWellFormed() : value)) : json;
}

/** The entries as stored: the given fields with the ids the statement assigned, in order. */
export function withIds(entries: Omit<DeliveryLogEntry, 'id'>[], row: RecordRow): DeliveryLogEntry[] {
  const ids = entryIds(row);
  return entries.map((entry, i) => ({ ...entry, id: ids[i] }));
}

/**
 * Every entry's id, in the order given. The statement answers them as text: the driver parses an
 * array answer character by character, several times slower than a split.
 */
function entryIds(row: RecordRow): number[] {
  return row.ids ? row.ids.split(',').map(Number) : [];
}

// A write with its event in one statement: the function or CTE that writes the record (under the
// store's rules, answering a conflict instead of raising it) runs in a CTE, and the same
// statement inserts the event and one delivery per endpoint that receives it, as
// `outbox.publish` queues them. Outside a transaction it is its own commit: the write a route
// hands over whole costs one round trip, with no BEGIN or COMMIT of its own.
import { recordEventBodyParts, type RecordEvent } from '../../store.js';
import type { Db, Row } from '../db.js';
import { OUTBOX_NOTICE, timedCommit, type StoreContext } from './context.js';
import { queueMatchedSql } from './outbox.js';

/** What a write answers: a conflict, or the row written or removed (as json) and its event's owner. */
export interface CreatedRow extends Row {
  conflict: string | null;
  record: Row | null;
  owner_id: number | null;
  /** Deliveries queued for the event. */
  queued: number;
}

/** Column names a statement may put into an event's data (they are written into the SQL). */
const FIELD = /^[a-z_]+$/;

/**
 * The statement: `write` selects `conflict`, `record` (json of the row written or removed, with
 * its `id`) and `owner_id` using parameters $1..$n; the event's parameters follow, from $n+1.
 * `fields`: the event's `fields`, fixed per statement; `before`: CTEs `write` reads (a
 * data-modifying one must be at the statement's top level), each followed by a comma. A function's checks see fresh snapshots
 * of their own (a volatile function's statements each take one); the endpoints are matched in
 * the statement's.
 */
export function createdSql(write: string, n: number, fields: readonly string[] = [], before = ''): string {
  const p = (i: number) => `$${n + i}`;
  for (const field of fields) if (!FIELD.test(field)) throw new Error(`not a column name: ${field}`);
  // Each field as its JSON text from row_to_json, which escapes strings as JSON.stringify does.
  const bodyFields = fields.map((f) => ` || ',"${f}":' || (r.record->'${f}')::text`).join('');
  const dataFields = fields.map((f) => ` || jsonb_build_object('${f}', r.record->'${f}')`).join('');
  return /* sql */ `
WITH ${before}r AS MATERIALIZED (${write}
), ev AS MATERIALIZED (
  SELECT ${p(1)}::text AS id, ${p(2)}::text AS event, r.owner_id,
         jsonb_build_object(${p(3)}::text, (r.record->>'id')::bigint) || ${p(4)}::jsonb${dataFields} AS data,
         ${p(5)}::text AS "timestamp", ${p(6)}::text || (r.record->>'id') || ${p(7)}::text${bodyFields} || '}}' AS body,
         ${p(8)}::bigint AS next_attempt_at
  FROM r WHERE r.conflict IS NULL
), e AS (
  INSERT INTO events (id, event, owner_id, data, "timestamp") SELECT ev.id, ev.event, ev.owner_id, ev.data, ev."timestamp" FROM ev
), ${queueMatchedSql('ev."timestamp"')}
SELECT r.*, (SELECT count(*)::int FROM matched) AS queued FROM r`;
}

/**
 * `createdSql` for several writes in one statement, one transaction: `write` selects `i` (the
 * write's position, from 1) with `conflict`, `record` and `owner_id` per write, from arrays
 * $1..$n; the events' parameters follow as arrays, from $n+1, in the writes' order. Each write
 * that answers no conflict gets its event and deliveries; `queued` counts every write's.
 */
export function createdManySql(write: string, n: number): string {
  const p = (i: number) => `$${n + i}`;
  return /* sql */ `
WITH r AS MATERIALIZED (${write}
), ev AS MATERIALIZED (
  SELECT x.id, x.event, r.owner_id, jsonb_build_object(x.id_key, (r.record->>'id')::bigint) || x.rest::jsonb AS data,
         x."timestamp", x.head || (r.record->>'id') || x.tail || '}}' AS body, x.next_attempt_at
  FROM unnest(${p(1)}::text[], ${p(2)}::text[], ${p(3)}::text[], ${p(4)}::text[], ${p(5)}::text[], ${p(6)}::text[], ${p(7)}::text[], ${p(8)}::bigint[])
    WITH ORDINALITY AS x (id, event, id_key, rest, "timestamp", head, tail, next_attempt_at, i)
  JOIN r ON r.i = x.i
  WHERE r.conflict IS NULL
), e AS (
  INSERT INTO events (id, event, owner_id, data, "timestamp") SELECT ev.id, ev.event, ev.owner_id, ev.data, ev."timestamp" FROM ev
), ${queueMatchedSql('ev."timestamp"')}
SELECT r.*, (SELECT count(*)::int FROM matched) AS queued FROM r ORDER BY r.i`;
}

/** The events' parameters of `createdManySql`: `createdValues` of each, as arrays. */
export function createdManyValues(events: RecordEvent[]): unknown[] {
  const columns: unknown[][] = Array.from({ length: 8 }, () => []);
  for (const event of events) createdValues(event).forEach((value, k) => columns[k].push(value));
  return columns;
}

/** The event's parameters of `createdSql`, in order. */
export function createdValues(event: RecordEvent): unknown[] {
  const { head, tail } = recordEventBodyParts(event);
  const { [event.idKey]: _id, ...rest } = event.data;
  return [event.id, event.event, event.idKey, JSON.stringify(rest), event.timestamp, head, tail, event.next_attempt_at];
}

/**
 * Runs a create statement; dispatchers are told of queued deliveries once it commits. Outside a
 * transaction the statement is its own commit, timed as one.
 */
export async function runCreated<R extends CreatedRow>(db: Db, ctx: StoreContext, text: string, values: unknown[]): Promise<R> {
  const statement = db.query<R>(text, values);
  const { rows } = await (ctx.commitObserver && !db.inTransaction ? timedCommit(ctx, statement) : statement);
  const row = rows[0];
  if (row.conflict === null && row.queued > 0) db.announce(OUTBOX_NOTICE);
  return row;
}

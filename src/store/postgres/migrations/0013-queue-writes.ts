// Less work per delivery written to the queue tables.
//
// A log entry's request headers and extra fields are kept as the JSON text the recorder sends,
// not as jsonb: jsonb input parses each value again and builds its binary form for every
// attempt logged, while the log is written far more often than it is read. Readers turn the
// text back into jsonb (LOG_COLUMNS in repositories/delivery-log.ts), so an answer is as before,
// keys in jsonb's order. The payload stays json: a payload that is a JSON string would lose its
// quotes as text taken from the recorder's JSON.
//
// The outbox's index of every row by endpoint only served an endpoint's removal (the trigger of
// migration 0012): every delivery published paid an entry in it. Pending deliveries are found by
// the due-order index, which holds exactly them; the rows in any other state (the store deletes
// a delivery at its final outcome, so only an import or an older build leaves such rows) get a
// partial index of their own, which a pending row never enters. `state` is then an indexed
// column, which does not change a lease's update: it leaves the state as it is, so it stays HOT.
//
// The log's revision counters (migration 0009) are added to by the statements that write the
// log (the record statement; the JSON import counts its entries once), not by a trigger: the
// trigger's call and its three statements per insert cost more than the entries' own rows in a
// dispatcher's record. Every writer of the log is one of those: an older build refuses a schema
// newer than itself.
export default /* sql */ `
DROP TRIGGER delivery_log_revisions_insert ON delivery_log;
DROP FUNCTION panelctl_log_revisions();

ALTER TABLE delivery_log
  ALTER COLUMN request_headers TYPE text USING request_headers::text,
  ALTER COLUMN extra TYPE text USING extra::text;

DROP INDEX deliveries_endpoint_idx;
CREATE INDEX deliveries_settled_endpoint_idx ON deliveries (endpoint_id) WHERE state <> 'pending';

CREATE OR REPLACE FUNCTION panelctl_endpoints_removed() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  ids bigint[] := ARRAY(SELECT id FROM removed);
BEGIN
  -- = ANY of an array: a lookup per endpoint on the index each condition matches.
  DELETE FROM deliveries WHERE endpoint_id = ANY (ids) AND state = 'pending';
  DELETE FROM deliveries WHERE endpoint_id = ANY (ids) AND state <> 'pending';
  DELETE FROM delivery_log WHERE endpoint_id = ANY (ids);
  RETURN NULL;
END
$fn$;
`;

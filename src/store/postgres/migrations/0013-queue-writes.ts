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
export default /* sql */ `
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

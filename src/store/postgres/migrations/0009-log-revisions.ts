// A delivery log's revision as counters (issue 35): each insert into `delivery_log` adds its
// number of entries to one counter row of the endpoint, in the inserting transaction, so the
// sum of an endpoint's rows grows with every commit that adds to its log, whatever the order
// in which ids were handed out and committed. The route memoising an endpoint's answer reads
// that sum through an index instead of digesting the newest ids.
//
// A trigger rather than the recorder's statement: every writer of the log (the dispatchers'
// record, `deliveryLog.append`, the JSON import, a daemon of an older build) bumps it alike.
// One endpoint may have several counter rows: a writer takes a row no other transaction holds
// (SKIP LOCKED) or adds one, so daemons recording to one hot endpoint at once never wait for
// each other's commit on a counter (the rows an endpoint has stay as few as the writers that
// were ever at work on it at once). Pruning deletes only entries older than the newest 100
// (see RECORD_SQL), which no answer shows, so it does not count; an endpoint's deletion
// removes its counters with it.
export default /* sql */ `
CREATE TABLE delivery_log_revisions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  endpoint_id bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  entries bigint NOT NULL
) WITH (fillfactor = 50);
CREATE INDEX delivery_log_revisions_endpoint_idx ON delivery_log_revisions (endpoint_id);

CREATE FUNCTION panelctl_log_revisions() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  taken bigint[];
  added bigint[];
  endpoints bigint[];
BEGIN
  -- One free counter row per endpoint written, locked for this transaction; rows other
  -- transactions hold are skipped, not waited for.
  SELECT array_agg(f.id), array_agg(c.n), array_agg(c.endpoint_id) INTO taken, added, endpoints
  FROM (SELECT n.endpoint_id, count(*) AS n FROM new_entries n GROUP BY n.endpoint_id) c
  CROSS JOIN LATERAL (
    SELECT r.id FROM delivery_log_revisions r WHERE r.endpoint_id = c.endpoint_id LIMIT 1 FOR UPDATE SKIP LOCKED
  ) f;
  IF taken IS NOT NULL THEN
    UPDATE delivery_log_revisions r SET entries = r.entries + u.n FROM unnest(taken, added) AS u (id, n) WHERE r.id = u.id;
  END IF;
  INSERT INTO delivery_log_revisions (endpoint_id, entries)
  SELECT n.endpoint_id, count(*) FROM new_entries n
  WHERE n.endpoint_id <> ALL (coalesce(endpoints, '{}'))
  GROUP BY n.endpoint_id;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER delivery_log_revisions_insert AFTER INSERT ON delivery_log
  REFERENCING NEW TABLE AS new_entries FOR EACH STATEMENT EXECUTE FUNCTION panelctl_log_revisions();
`;

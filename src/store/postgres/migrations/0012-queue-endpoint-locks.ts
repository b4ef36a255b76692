// The outbox and the delivery log keep no foreign key to webhooks. A foreign key checks every
// inserted row on its own (a lookup and a row lock per delivery published and per attempt
// logged); the statements that insert into these tables now lock each endpoint they write for
// once (FOR KEY SHARE, the lock the key's check took), so an endpoint removed meanwhile either
// waits for their commit or is gone before they write, and nothing is left pointing at it. The
// removal itself takes its deliveries and log with it, as the cascade did, by a statement
// trigger: its statements run after the rows they lock were committed, so they see them.
export default /* sql */ `
ALTER TABLE deliveries DROP CONSTRAINT deliveries_endpoint_id_fkey;
ALTER TABLE delivery_log DROP CONSTRAINT delivery_log_endpoint_id_fkey;

CREATE FUNCTION panelctl_endpoints_removed() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  ids bigint[] := ARRAY(SELECT id FROM removed);
BEGIN
  -- = ANY of an array: a lookup per endpoint on each table's endpoint index.
  DELETE FROM deliveries WHERE endpoint_id = ANY (ids);
  DELETE FROM delivery_log WHERE endpoint_id = ANY (ids);
  RETURN NULL;
END
$fn$;
CREATE TRIGGER webhooks_removed AFTER DELETE ON webhooks
  REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION panelctl_endpoints_removed();
`;

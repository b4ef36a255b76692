// The daemons that serve cached reads without asking the database (the write fence, see
// PgChangeFeed and docs/decisions/write-fence.md): one row per member, its lease
// in the database clock's epoch ms, renewed on its LISTEN connection. A writer that starts finds
// the members already there; rows of members gone without leaving are dropped by the store's housekeeping.
//
// A change written straight into a cached table by anything but panelctl (psql, a script) has no
// writer that tells the daemons: the statement trigger that notes it in `read_changes` now also
// notifies, so fenced daemons drop their caches once the notice arrives. panelctl's own
// connections (application_name 'panelctl…') send their notices after the commit, where the
// notify lock does not serialise their commits (see Notifier).
export default /* sql */ `
CREATE TABLE feed_members (
  member text PRIMARY KEY,
  lease_until bigint NOT NULL
);

CREATE OR REPLACE FUNCTION panelctl_note_read_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO read_changes (xid, collection) VALUES (pg_current_xact_id(), TG_TABLE_NAME) ON CONFLICT DO NOTHING;
  IF current_setting('application_name') NOT LIKE 'panelctl%' THEN
    PERFORM pg_notify('panelctl_changes', json_build_object('kind', 'record', 'collection', TG_TABLE_NAME, 'id', NULL)::text);
  END IF;
  RETURN NULL;
END
$fn$;
`;

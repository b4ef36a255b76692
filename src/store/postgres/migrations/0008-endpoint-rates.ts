// Rate limits and caps held across daemons (issue 33). `rate_limit_per_second` on the endpoint;
// `endpoint_claims` keeps, per endpoint, what every daemon's claim must agree on: the time the
// next attempt may be sent (a token schedule the claims advance) and which daemon holds the
// endpoint (one at a time, so its `max_in_flight`, set or the default, is the endpoint's, not
// each daemon's). A claim locks the rows it reads, so two daemons never hand out the same time or
// both hold one endpoint. One row per endpoint, made with it.
export default /* sql */ `
ALTER TABLE webhooks ADD COLUMN rate_limit_per_second integer;

CREATE TABLE endpoint_claims (
  endpoint_id bigint PRIMARY KEY REFERENCES webhooks (id) ON DELETE CASCADE,
  holder text,
  holder_until bigint NOT NULL DEFAULT 0,
  next_send_at double precision NOT NULL DEFAULT 0
);
INSERT INTO endpoint_claims (endpoint_id) SELECT id FROM webhooks;

CREATE FUNCTION panelctl_endpoint_claims() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
  INSERT INTO endpoint_claims (endpoint_id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
  RETURN NULL;
END
$fn$;
CREATE TRIGGER webhooks_claims_insert AFTER INSERT ON webhooks
  FOR EACH ROW EXECUTE FUNCTION panelctl_endpoint_claims();
`;

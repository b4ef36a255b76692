// Subscriptions and sites written in one round trip each: the domain rule's lock, its checks and
// the insert run in one server-side function. And the claim is a statement of the store's own
// (repositories/outbox.ts): the function an early baseline had for it goes.
export default /* sql */ `
DROP FUNCTION IF EXISTS panelctl_claim(text, bigint, bigint, integer, integer, bigint[], bigint[], boolean, text[], integer, bigint[], integer[]);

-- A site, under the domain rule: the advisory lock on the domain serialises everyone deciding
-- about it (sites and main domains alike) until commit; each check after it is a statement of
-- its own, so it sees whatever the previous holder committed (read committed takes a snapshot
-- per statement, and a single statement's would predate the lock). FOR SHARE keeps the
-- subscription from being deleted or changing hands until this commits. The checks run in the
-- JSON store's order, so both answer the same conflict. A conflict is answered, not raised: a
-- caller that catches it inside its transaction carries on (a raised error would abort it).
-- The unique index stays the rule's last word: a violation it raises is answered the same way.
CREATE FUNCTION panelctl_insert_site(p_subscription_id bigint, p_domain text, p_created_at text)
RETURNS TABLE (conflict text, site json) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_customer bigint;
BEGIN
  PERFORM pg_advisory_xact_lock(1885433445, hashtext(lower(p_domain)));
  SELECT s.customer_id INTO v_customer FROM subscriptions s WHERE s.id = p_subscription_id FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'subscriptions.missing'::text, NULL::json;
  ELSIF EXISTS (SELECT 1 FROM sites s WHERE s.domain = p_domain) THEN
    RETURN QUERY SELECT 'sites.domain'::text, NULL::json;
  ELSIF EXISTS (SELECT 1 FROM subscriptions s WHERE s.main_domain = p_domain AND s.customer_id <> v_customer) THEN
    RETURN QUERY SELECT 'domains.owner'::text, NULL::json;
  ELSE
    BEGIN
      RETURN QUERY INSERT INTO sites AS s (subscription_id, domain, created_at) VALUES (p_subscription_id, p_domain, p_created_at)
        RETURNING NULL::text, row_to_json(s);
    EXCEPTION WHEN unique_violation THEN
      RETURN QUERY SELECT 'sites.domain'::text, NULL::json;
    END;
  END IF;
END
$fn$;

-- A subscription, under the same rule. The customer's row lock also serialises their
-- subscription inserts, so the first one is the default; a new default takes the mark from the
-- old (at most one per customer, by index). Answers the subscriptions whose mark was cleared,
-- for the change feed.
CREATE FUNCTION panelctl_insert_subscription(
  p_customer_id bigint, p_main_domain text, p_is_default boolean, p_status text, p_created_at text, p_updated_at text
) RETURNS TABLE (conflict text, subscription json, cleared bigint[]) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_role text;
  v_default boolean;
  v_cleared bigint[];
BEGIN
  PERFORM pg_advisory_xact_lock(1885433445, hashtext(lower(p_main_domain)));
  SELECT u.role INTO v_role FROM users u WHERE u.id = p_customer_id FOR UPDATE;
  IF v_role IS DISTINCT FROM 'customer' THEN
    RETURN QUERY SELECT 'users.customer'::text, NULL::json, NULL::bigint[];
  ELSIF EXISTS (SELECT 1 FROM subscriptions s WHERE s.main_domain = p_main_domain) THEN
    RETURN QUERY SELECT 'subscriptions.main_domain'::text, NULL::json, NULL::bigint[];
  ELSIF EXISTS (SELECT 1 FROM sites s JOIN subscriptions b ON b.id = s.subscription_id
                WHERE s.domain = p_main_domain AND b.customer_id <> p_customer_id) THEN
    RETURN QUERY SELECT 'domains.owner'::text, NULL::json, NULL::bigint[];
  ELSE
    v_default := p_is_default OR NOT EXISTS (SELECT 1 FROM subscriptions s WHERE s.customer_id = p_customer_id);
    -- In the block: a violation undoes the cleared mark with the insert.
    BEGIN
      IF v_default THEN
        WITH c AS (
          UPDATE subscriptions s SET is_default = false, updated_at = p_created_at
          WHERE s.customer_id = p_customer_id AND s.is_default RETURNING s.id
        )
        SELECT array_agg(c.id) INTO v_cleared FROM c;
      END IF;
      RETURN QUERY INSERT INTO subscriptions AS s (customer_id, main_domain, is_default, status, created_at, updated_at)
        VALUES (p_customer_id, p_main_domain, v_default, p_status, p_created_at, p_updated_at)
        RETURNING NULL::text, row_to_json(s), coalesce(v_cleared, '{}');
    EXCEPTION WHEN unique_violation THEN
      RETURN QUERY SELECT 'subscriptions.main_domain'::text, NULL::json, NULL::bigint[];
    END;
  END IF;
END
$fn$;
`;

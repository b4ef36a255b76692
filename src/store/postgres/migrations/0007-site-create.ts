// A site made whole in one server-side function: the subscription chosen and checked, the site
// inserted under the domain rule. `sites.create` calls it inside the statement that also
// publishes the site's event (repositories/created.ts), so `POST /sites` is one round trip.
export default /* sql */ `
-- As panelctl_insert_site (0002), with the route's choice of subscription moved in: the one
-- named (another customer's: forbidden, unless the caller is an admin, p_customer_id null), else
-- the customer's default (marked default, else the oldest). The domain's advisory lock comes
-- first; the subscription is then read FOR SHARE, so it can be neither deleted nor suspended
-- until this commits and its status is checked as of the insert. Each check is a statement of
-- its own after the lock (read committed: a fresh snapshot each), in the JSON store's order.
-- Conflicts are answered, not raised; the subscription comes back with them for the message.
CREATE FUNCTION panelctl_create_site(p_subscription_id bigint, p_customer_id bigint, p_domain text, p_created_at text)
RETURNS TABLE (conflict text, site json, owner_id bigint, subscription json) LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  v_sub subscriptions%ROWTYPE;
BEGIN
  PERFORM pg_advisory_xact_lock(1885433445, hashtext(lower(p_domain)));
  IF p_subscription_id IS NOT NULL THEN
    SELECT * INTO v_sub FROM subscriptions s WHERE s.id = p_subscription_id FOR SHARE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'subscriptions.missing'::text, NULL::json, NULL::bigint, NULL::json;
      RETURN;
    END IF;
    IF p_customer_id IS NOT NULL AND v_sub.customer_id <> p_customer_id THEN
      RETURN QUERY SELECT 'subscriptions.forbidden'::text, NULL::json, NULL::bigint, row_to_json(v_sub);
      RETURN;
    END IF;
  ELSE
    SELECT * INTO v_sub FROM subscriptions s WHERE s.customer_id = p_customer_id ORDER BY s.is_default DESC, s.id LIMIT 1 FOR SHARE;
    IF NOT FOUND THEN
      RETURN QUERY SELECT 'subscriptions.none'::text, NULL::json, NULL::bigint, NULL::json;
      RETURN;
    END IF;
  END IF;
  IF v_sub.status <> 'active' THEN
    RETURN QUERY SELECT 'subscriptions.inactive'::text, NULL::json, NULL::bigint, row_to_json(v_sub);
  ELSIF EXISTS (SELECT 1 FROM sites s WHERE s.domain = p_domain) THEN
    RETURN QUERY SELECT 'sites.domain'::text, NULL::json, NULL::bigint, row_to_json(v_sub);
  ELSIF EXISTS (SELECT 1 FROM subscriptions s WHERE s.main_domain = p_domain AND s.customer_id <> v_sub.customer_id) THEN
    RETURN QUERY SELECT 'domains.owner'::text, NULL::json, NULL::bigint, row_to_json(v_sub);
  ELSE
    BEGIN
      RETURN QUERY INSERT INTO sites AS s (subscription_id, domain, created_at) VALUES (v_sub.id, p_domain, p_created_at)
        RETURNING NULL::text, row_to_json(s), v_sub.customer_id, row_to_json(v_sub);
    EXCEPTION WHEN unique_violation THEN
      RETURN QUERY SELECT 'sites.domain'::text, NULL::json, NULL::bigint, row_to_json(v_sub);
    END;
  END IF;
END
$fn$;
`;

// An endpoint's retry schedule and its cap of attempts at once (issue 33). NULL keeps the
// service description's defaults (one retry after 2 s, 8 at once), so existing endpoints, and
// those a JSON store import brings without the fields, are delivered to as before.
export default /* sql */ `
ALTER TABLE webhooks
  ADD COLUMN retry_schedule integer[],
  ADD COLUMN max_in_flight integer;
`;

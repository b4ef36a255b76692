// Custom request headers of an endpoint (values kept as the secret is: sendable, never shown),
// and the previous secret of a rotation with the time its overlap ends (both null outside one).
export default /* sql */ `
ALTER TABLE webhooks
  ADD COLUMN headers jsonb,
  ADD COLUMN previous_secret text,
  ADD COLUMN previous_secret_expires_at text;
`;

// Logouts noted for the daemons' caller caches: a revocation's transaction writes its
// `read_changes` row as the other cached collections' do (see the baseline), so `caughtUp()` on
// every daemon publishes it before a cached caller is served, whether or not the notice arrived.
// Pruning revocations of tokens that have expired changes no caller, so deletes are not noted.
export default /* sql */ `
CREATE TRIGGER revoked_tokens_read_change AFTER INSERT OR UPDATE ON revoked_tokens
  FOR EACH STATEMENT EXECUTE FUNCTION panelctl_note_read_change();
`;

// Pause and resume (issue 33): a paused endpoint's deliveries stay pending and are not claimed.
// The claim reads the flag of each endpoint with pending work (one primary-key lookup each).
export default /* sql */ `
ALTER TABLE webhooks ADD COLUMN paused boolean NOT NULL DEFAULT false;
`;

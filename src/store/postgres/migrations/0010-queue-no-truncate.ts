// The queue tables keep their empty pages when vacuumed. A queue drained between bursts ends in
// empty pages, and a vacuum (the store's or autovacuum) gives them back to the file system by
// taking the table's exclusive lock: under load it retries for up to 5 s to get it, then holds
// it against every claim and record while it checks the pages from the end. The next burst
// fills the pages again anyway; their space is reused, not lost.
export default /* sql */ `
ALTER TABLE deliveries SET (vacuum_truncate = false);
ALTER TABLE delivery_log SET (vacuum_truncate = false);
`;

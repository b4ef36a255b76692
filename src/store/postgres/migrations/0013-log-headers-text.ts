// A log entry's request headers and extra fields are kept as the JSON text the recorder sends,
// not as jsonb. jsonb input parses each value again and builds its binary form, for every
// attempt logged, while the log is written far more often than read: every attempt adds an
// entry, and a page of the log is read when someone asks for it. Readers turn the text back
// into jsonb (LOG_COLUMNS in repositories/delivery-log.ts), so an answer is as before, keys in
// jsonb's order. The payload stays json: a payload that is a JSON string would lose its quotes
// as text taken from the recorder's JSON.
export default /* sql */ `
ALTER TABLE delivery_log
  ALTER COLUMN request_headers TYPE text USING request_headers::text,
  ALTER COLUMN extra TYPE text USING extra::text;
`;

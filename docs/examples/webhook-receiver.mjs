// A panel webhook receiver in plain Node.js (no dependencies).
//   WEBHOOK_SECRET=... PORT=8443 TLS_CERT=cert.pem TLS_KEY=key.pem node webhook-receiver.mjs
// Without TLS_CERT/TLS_KEY it serves plain HTTP (put it behind a TLS proxy: the panel only
// delivers to https:// URLs).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';

const SECRET = process.env.WEBHOOK_SECRET;
if (!SECRET) throw new Error('set WEBHOOK_SECRET to the endpoint secret');

/** True when `header` is `sha256=<hex HMAC-SHA256 of rawBody keyed with secret>`. */
export function verifySignature(rawBody, header, secret) {
  if (typeof header !== 'string' || !header.startsWith('sha256=')) return false;
  const expected = Buffer.from(createHmac('sha256', secret).update(rawBody).digest('hex'));
  const received = Buffer.from(header.slice('sha256='.length));
  // timingSafeEqual needs equal lengths; the length of a hex digest is no secret.
  return received.length === expected.length && timingSafeEqual(received, expected);
}

/**
 * True when either signature header verifies with `secret`. During a secret rotation the panel
 * signs with the new secret (X-Webhook-Signature) and, for the overlap it was given, with the
 * previous one too (X-Webhook-Signature-Previous): a receiver still holding the old secret and
 * one already holding the new accept the same deliveries, so you can switch yours at any time
 * within the overlap.
 */
export function verifyDelivery(rawBody, headers, secret) {
  return verifySignature(rawBody, headers['x-webhook-signature'], secret)
    || verifySignature(rawBody, headers['x-webhook-signature-previous'], secret);
}

// Deliveries already handled, by X-Webhook-Delivery. A retry carries the same id. Keep this in
// your database (a unique key) in production so it survives restarts; here: the last 10 000.
const seen = new Set();
function firstTime(deliveryId) {
  if (seen.has(deliveryId)) return false;
  seen.add(deliveryId);
  if (seen.size > 10_000) seen.delete(seen.values().next().value);
  return true;
}

async function handle(payload, deliveryId) {
  // Your work goes here. It runs after the answer, so slow work never exceeds the panel's
  // 10 s limit. Make it idempotent: the same event can arrive again (e.g. a manual redelivery
  // has a new delivery id), so key side effects on the event's data, e.g. data.site_id.
  console.log(`handled ${deliveryId} ${payload.event} ${JSON.stringify(payload.data)}`);
}

function onRequest(req, res) {
  if (req.method !== 'POST') return res.writeHead(405).end();
  const chunks = [];
  let size = 0;
  req.on('data', (chunk) => {
    size += chunk.length;
    if (size > 1024 * 1024) req.destroy(); // payloads are small; refuse floods
    else chunks.push(chunk);
  });
  req.on('end', () => {
    // Verify the raw bytes as received: re-serialised JSON would not match the signature.
    const raw = Buffer.concat(chunks);
    if (!verifyDelivery(raw, req.headers, SECRET)) {
      return res.writeHead(403, { 'content-type': 'text/plain' }).end('bad signature');
    }
    const deliveryId = String(req.headers['x-webhook-delivery'] ?? '');
    let payload;
    try {
      payload = JSON.parse(raw.toString('utf8'));
    } catch {
      return res.writeHead(400).end('bad json');
    }
    // Answer at once (2xx within 10 s counts as delivered), then do the work.
    const isNew = firstTime(deliveryId);
    res.writeHead(200, { 'content-type': 'text/plain' }).end(isNew ? 'ok' : 'duplicate');
    if (isNew) handle(payload, deliveryId).catch((error) => console.error(`delivery ${deliveryId} failed: ${error.message}`));
  });
}

const tls = process.env.TLS_CERT && process.env.TLS_KEY
  ? { cert: readFileSync(process.env.TLS_CERT), key: readFileSync(process.env.TLS_KEY) }
  : null;
const server = tls ? createHttpsServer(tls, onRequest) : createHttpServer(onRequest);
server.listen(Number(process.env.PORT ?? 8443), process.env.HOST ?? '127.0.0.1', () => {
  console.log(`listening on ${server.address().port}`);
});

// Request ids: every answer carries `X-Request-Id`, every log line of the request carries it as
// `req_id`, and a 5xx envelope names it in `message`, so a user can quote it and an operator
// can find the request's lines. A client's own id (1–128 characters of [A-Za-z0-9._:-]) is
// kept, so one id follows a request through a proxy; anything else is replaced.
import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const REQUEST_ID_HEADER = 'x-request-id';
const VALID_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Ids made from one fill of random bytes. */
const IDS_PER_FILL = 256;
const random = Buffer.allocUnsafe(16 * IDS_PER_FILL);
let nextId = IDS_PER_FILL;
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
/** The id being written: its dashes stay, its digits are written over. */
const idText = Buffer.from('00000000-0000-0000-0000-000000000000', 'latin1');

/**
 * A random (version 4) UUID, as crypto.randomUUID makes one from its own pool of random bytes,
 * written as one flat string: randomUUID's result is a string of twenty pieces, which Node joins
 * again when it checks and writes the header. Every request without an id of its own makes one.
 * @example
 * newRequestId(); // 'f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d'
 */
export function newRequestId(): string {
  if (nextId === IDS_PER_FILL) {
    randomFillSync(random);
    nextId = 0;
  }
  const offset = 16 * nextId++;
  let at = 0;
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) at++;
    let byte = random[offset + i];
    // RFC 9562: the version (4) in byte 6's high half, the variant (10) in byte 8's top bits.
    if (i === 6) byte = (byte & 0x0f) | 0x40;
    else if (i === 8) byte = (byte & 0x3f) | 0x80;
    idText[at++] = HEX_DIGITS[byte >> 4];
    idText[at++] = HEX_DIGITS[byte & 0x0f];
  }
  return idText.toString('latin1', 0, 36);
}

/**
 * Fastify's `genReqId`: the client's valid `X-Request-Id`, else a new UUID (newRequestId).
 * @example
 * requestId({ headers: { 'x-request-id': 'edge-42' } } as IncomingMessage); // 'edge-42'
 */
export function requestId(req: Pick<IncomingMessage, 'headers'>): string {
  const sent = req.headers[REQUEST_ID_HEADER];
  return typeof sent === 'string' && VALID_ID.test(sent) ? sent : newRequestId();
}

/**
 * A 5xx answer's message with the request id appended, so a user can quote it. The errors
 * plugin's handler, which makes every 5xx envelope, calls it; the id header itself is put on
 * every answer by that plugin's onRequest hook. Naming the id where the envelope is made spares
 * every other answer an onSend hook.
 * @example
 * withRequestId('internal server error', 'edge-42'); // 'internal server error (request id edge-42)'
 */
export function withRequestId(message: string, id: string): string {
  return `${message} (request id ${id})`;
}

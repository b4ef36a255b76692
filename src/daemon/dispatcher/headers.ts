// The request headers of one webhook attempt, built in one place: the description's four
// (Content-Type, User-Agent, X-Webhook-Event, X-Webhook-Signature), X-Webhook-Delivery, and for
// endpoints with `signature: "standard-webhooks"` the Standard Webhooks trio (webhook-id,
// webhook-timestamp, webhook-signature), so receivers can verify with that specification's
// libraries and refuse replays by timestamp.
import { createHmac } from 'node:crypto';
import type { DeliveryRecord, WebhookRecord } from '../../store/types.js';
import { HEADER, USER_AGENT } from '../../shared/webhook-protocol.js';
import { signature } from './signer.js';
export const SIGNATURE_SCHEMES = ['seed', 'standard-webhooks'] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/** A Standard Webhooks secret: `whsec_` and the base64 of 24 to 64 random bytes. */
const WHSEC = /^whsec_([A-Za-z0-9+/]+={0,2})$/;
export const WHSEC_MIN_BYTES = 24;
export const WHSEC_MAX_BYTES = 64;

/** The key bytes of a `whsec_` secret, or null when it is not one (or of the wrong size). */
export function standardKey(secret: string): Buffer | null {
  const match = WHSEC.exec(secret);
  if (!match) return null;
  const key = Buffer.from(match[1], 'base64');
  // Round-trip check: Node's decoder skips characters it does not like rather than failing.
  if (key.toString('base64').replace(/=+$/, '') !== match[1].replace(/=+$/, '')) return null;
  return key.length >= WHSEC_MIN_BYTES && key.length <= WHSEC_MAX_BYTES ? key : null;
}

/** Why `secret` cannot sign with `scheme`, or null when it can. */
export function secretProblem(scheme: SignatureScheme, secret: string): string | null {
  if (scheme !== 'standard-webhooks' || standardKey(secret)) return null;
  return `secret: a standard-webhooks endpoint needs a whsec_ secret (whsec_ and the base64 of ${WHSEC_MIN_BYTES} to ${WHSEC_MAX_BYTES} random bytes; --generate-secret makes one)`;
}

/**
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the decoded secret bytes.
 * @example
 * standardSignature('msg_1', 1700000000, '{}', 'whsec_' + Buffer.alloc(32).toString('base64')); // 'v1,…'
 */
export function standardSignature(id: string, timestampSeconds: number, body: string, secret: string): string {
  const key = standardKey(secret);
  if (!key) throw new Error('not a whsec_ secret');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`, 'utf8').digest('base64')}`;
}

/**
 * The headers of an attempt of `delivery` to `endpoint` made at `nowMs`, signed with the
 * endpoint's current secret (so a rotation applies to retries too). webhook-id is the delivery
 * id, the same on the retry, as X-Webhook-Delivery.
 */
export function deliveryHeaders(endpoint: WebhookRecord, delivery: DeliveryRecord, nowMs: number): Record<string, string> {
  const headers: Record<string, string> = {
    [HEADER.contentType]: 'application/json',
    [HEADER.userAgent]: USER_AGENT,
    [HEADER.event]: delivery.event,
    [HEADER.signature]: signature(delivery.body, endpoint.secret),
    [HEADER.delivery]: delivery.id,
  };
  if (endpoint.signature === 'standard-webhooks' && standardKey(endpoint.secret)) {
    const timestamp = Math.floor(nowMs / 1000);
    headers[HEADER.standardId] = delivery.id;
    headers[HEADER.standardTimestamp] = String(timestamp);
    headers[HEADER.standardSignature] = standardSignature(delivery.id, timestamp, delivery.body, endpoint.secret);
  }
  return headers;
}

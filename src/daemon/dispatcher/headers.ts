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

/** The previous secret of a rotation while its overlap lasts at `nowMs`, else null. */
export function previousSecret(endpoint: WebhookRecord, nowMs: number): string | null {
  const expires = endpoint.previous_secret_expires_at;
  if (!endpoint.previous_secret || !expires) return null;
  return Date.parse(expires) > nowMs ? endpoint.previous_secret : null;
}

/**
 * The headers of an attempt of `delivery` to `endpoint` made at `nowMs`, signed with the
 * endpoint's current secret (so a rotation applies to retries too), and during a rotation's
 * overlap with the previous one as well. webhook-id is the delivery id, the same on the retry,
 * as X-Webhook-Delivery. The endpoint's custom headers come first; none can take a protocol
 * header's name (customHeadersProblem refuses them).
 */
export function deliveryHeaders(endpoint: WebhookRecord, delivery: DeliveryRecord, nowMs: number): Record<string, string> {
  const own: Record<string, string> = {
    [HEADER.contentType]: 'application/json',
    [HEADER.userAgent]: USER_AGENT,
    [HEADER.event]: delivery.event,
    [HEADER.signature]: signature(delivery.body, endpoint.secret),
    [HEADER.delivery]: delivery.id,
  };
  const headers = endpoint.headers ? { ...endpoint.headers, ...own } : own;
  const previous = previousSecret(endpoint, nowMs);
  if (previous !== null) headers[HEADER.signaturePrevious] = signature(delivery.body, previous);
  if (endpoint.signature === 'standard-webhooks' && standardKey(endpoint.secret)) {
    const timestamp = Math.floor(nowMs / 1000);
    headers[HEADER.standardId] = delivery.id;
    headers[HEADER.standardTimestamp] = String(timestamp);
    let signatures = standardSignature(delivery.id, timestamp, delivery.body, endpoint.secret);
    // The specification's list of signatures, space-separated: a receiver accepts any it can verify.
    if (previous !== null && standardKey(previous)) signatures += ` ${standardSignature(delivery.id, timestamp, delivery.body, previous)}`;
    headers[HEADER.standardSignature] = signatures;
  }
  return headers;
}

/** What answers and the delivery log show for a custom header's value: the same for every value. */
export const HEADER_VALUE_MASK = '********';

/** Custom headers an endpoint may carry at most. */
export const MAX_CUSTOM_HEADERS = 10;

const RESERVED_HEADERS = new Set(['content-type', 'content-length', 'host', 'user-agent', 'connection', 'transfer-encoding']);
const RESERVED_PREFIXES = ['x-webhook-', 'webhook-'];
/** RFC 9110 token characters. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/;
/** Tab, visible ASCII, spaces and Latin-1 (what undici sends): no CR, LF, NUL or other control characters. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]{0,4096}$/;

/** Why a custom header name cannot be used, or null when it can. */
export function customHeaderNameProblem(name: string): string | null {
  if (!HEADER_NAME.test(name)) return `headers: ${JSON.stringify(name)} is not a valid header name`;
  const lower = name.toLowerCase();
  if (RESERVED_HEADERS.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix))) {
    return `headers: ${name} is reserved (content-type, content-length, host, user-agent, connection, transfer-encoding, x-webhook-*, webhook-*)`;
  }
  return null;
}

/** Why a set of custom headers cannot be sent, or null when it can (the value never appears in the message). */
export function customHeadersProblem(headers: Record<string, string>): string | null {
  const names = Object.keys(headers);
  if (names.length > MAX_CUSTOM_HEADERS) return `headers: at most ${MAX_CUSTOM_HEADERS} custom headers (${names.length} given)`;
  const seen = new Set<string>();
  for (const name of names) {
    const problem = customHeaderNameProblem(name);
    if (problem) return problem;
    if (seen.has(name.toLowerCase())) return `headers: ${name} is given twice (names are case-insensitive)`;
    seen.add(name.toLowerCase());
    if (!HEADER_VALUE.test(headers[name])) return `headers: the value of ${name} must not contain CR, LF or other control characters (at most 4096 characters)`;
  }
  return null;
}

/** The custom headers with their values masked, as answers show them; {} without any. */
export function maskedHeaders(headers: Record<string, string> | null | undefined): Record<string, string> {
  const masked: Record<string, string> = {};
  if (headers) for (const name of Object.keys(headers)) masked[name] = HEADER_VALUE_MASK;
  return masked;
}

/** An attempt's request headers as its log entry keeps them: the custom headers' values masked. */
export function loggedHeaders(sent: Record<string, string>, endpoint: WebhookRecord): Record<string, string> {
  if (!endpoint.headers) return sent;
  return { ...sent, ...maskedHeaders(endpoint.headers) };
}

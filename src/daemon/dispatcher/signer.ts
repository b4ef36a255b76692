// Webhook signatures (section 5.10): `sha256=` and the lowercase hex HMAC-SHA256 of the exact
// body bytes, keyed with the endpoint's secret, the scheme GitHub-style verifiers check.
import { createHmac } from 'node:crypto';

/**
 * @example
 * signature('{"event":"webhook.test"}', 'secret'); // 'sha256=…64 hex digits'
 */
export function signature(body: string, secret: string): string {
  return `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;
}

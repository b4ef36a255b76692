// API key format (section 2.3): `ncp_` + 64 hex characters from 32 random bytes. Only the
// SHA-256 hash is stored; lookups hash the presented key and find it by that hash.
import { hash, randomBytes } from 'node:crypto';

export const API_KEY_PATTERN = /^ncp_[0-9a-f]{64}$/;
export const KEY_PREFIX_LENGTH = 20;

export function generateApiKey(): { key: string; hash: string; prefix: string } {
  const key = `ncp_${randomBytes(32).toString('hex')}`;
  return { key, hash: hashApiKey(key), prefix: key.slice(0, KEY_PREFIX_LENGTH) };
}

export function hashApiKey(key: string): string {
  // The one-shot hash: every API request with a key pays it, and it is cheaper than createHash.
  return hash('sha256', key, 'hex');
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith('ncp_');
}

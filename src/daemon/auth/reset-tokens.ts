// Password-reset tokens: 32 random bytes (base64url) mailed to the user; only their SHA-256
// hash is stored, so a copy of the store cannot be used to reset anyone's password.
import { createHash, randomBytes } from 'node:crypto';

export const RESET_TOKEN_TTL_MS = 60 * 60 * 1000;

export function generateResetToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashResetToken(token) };
}

export function hashResetToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

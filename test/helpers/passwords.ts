// Test-only password hashes (no vitest import: the global setup uses this too).
import { randomBytes, scryptSync } from 'node:crypto';

/**
 * A password hash in the daemon's stored format (`scrypt$N$r$p$salt$hash`) at N = 1024 instead
 * of the 16384 new passwords get. Login verifies against the parameters stored with a hash, so
 * a user written with it signs in through the same check at a sixteenth of the CPU: for tests
 * that sign in one account many times, where the subject is what follows a right password (the
 * second factor's lock), not the hash's cost. The cost of new hashes is checked where users are
 * made through the API.
 */
export function quickPasswordHash(password: string): string {
  const salt = randomBytes(16);
  const hash = scryptSync(password, salt, 32, { N: 1024, r: 8, p: 1 });
  return ['scrypt', 1024, 8, 1, salt.toString('base64'), hash.toString('base64')].join('$');
}

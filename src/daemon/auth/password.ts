// Password hashing with scrypt (node:crypto), a per-user random salt, and a constant-time
// comparison. Stored as `scrypt$N$r$p$salt$hash` so parameters can be raised later.
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

const N = 16_384;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, KEY_LENGTH, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 });
  return ['scrypt', N, R, P, salt.toString('base64'), hash.toString('base64')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: 64 * 1024 * 1024,
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * What unknown emails are verified against, so that both paths take one scrypt of the same cost:
 * the current parameters with a random salt and a random hash, which no password is known to
 * give. Made without hashing (what a verification costs depends on the parameters alone), so a
 * start computes no scrypt and the first unknown email costs one hash, like any other.
 */
let dummyHash: string | null = null;
export function dummyPasswordHash(): string {
  dummyHash ??= ['scrypt', N, R, P, randomBytes(16).toString('base64'), randomBytes(KEY_LENGTH).toString('base64')].join('$');
  return dummyHash;
}

/** A random password for generated admin accounts: 24 characters from an unambiguous alphabet. */
export function generatePassword(length = 24): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789';
  const bytes = randomBytes(length);
  let out = '';
  for (const byte of bytes) out += alphabet[byte % alphabet.length];
  return out;
}

/** A new user record: email normalised, password hashed, 2FA off. */
export async function newUserRecord(
  fields: { email: string; name: string; role: 'admin' | 'customer'; password: string },
  now: string,
) {
  return {
    email: fields.email.trim().toLowerCase(),
    name: fields.name,
    role: fields.role,
    password_hash: await hashPassword(fields.password),
    totp_secret: null,
    totp_pending_secret: null,
    two_factor_enabled: false,
    totp_last_step: null,
    created_at: now,
    updated_at: now,
  };
}

/**
 * The change of a user's password, for every way it changes (reset mail, `admin
 * reset-password`, the admin route): the hash, when it changed, and the next token generation.
 * JWTs carry the generation they were issued in, so bumping it ends every older session; on
 * records without one it starts at 0. (Until tokens carry it, password_changed_at is compared
 * with the token's iat, at second precision.)
 */
export interface PasswordChange {
  password_hash: string;
  password_changed_at: string;
  updated_at: string;
  token_generation: number;
}

export async function passwordChange(user: { id: number; token_generation?: number }, password: string, at: string): Promise<PasswordChange> {
  return {
    password_hash: await hashPassword(password),
    password_changed_at: at,
    updated_at: at,
    token_generation: (user.token_generation ?? 0) + 1,
  };
}

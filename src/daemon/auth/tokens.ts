// JWTs for interactive use: HS256 with the store's shared secret, claims sub, role, iat, exp,
// jti and gen (the user's token generation, raised by a password change or reset).
// Verification pins the algorithm, so `alg: none` or RS/ES tokens are refused.
import { randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Role } from '../../store/types.js';

export interface TokenClaims {
  sub: string;
  role: Role;
  iat: number;
  exp: number;
  jti: string;
  /** The user's `token_generation` when the token was issued; absent in older tokens (0). */
  gen?: number;
}

export class TokenError extends Error {}

/** Verified tokens kept so a client's repeated requests do not pay the signature check again. */
const VERIFIED_CACHE_SIZE = 1000;

export class TokenService {
  readonly #verified = new Map<string, TokenClaims>();

  constructor(
    private readonly secret: Uint8Array,
    private readonly clock: () => number = Date.now,
  ) {}

  async issue(userId: number, role: Role, ttlSeconds: number, generation = 0): Promise<string> {
    const now = Math.floor(this.clock() / 1000);
    return new SignJWT({ role, gen: generation })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(String(userId))
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSeconds)
      .setJti(randomUUID())
      .sign(this.secret);
  }

  async verify(token: string): Promise<TokenClaims> {
    // The cache is keyed by the whole token, so only byte-identical tokens whose signature was
    // checked hit it; expiry is checked again on every use. Checks on the user (deleted, password
    // changed since iat) happen after this, for cached and fresh claims alike.
    const cached = this.#verified.get(token);
    if (cached) {
      if (cached.exp * 1000 > this.clock()) return cached;
      this.#verified.delete(token);
      throw new TokenError('token expired: log in again');
    }
    const claims = await this.#verifySignature(token);
    if (this.#verified.size >= VERIFIED_CACHE_SIZE) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(token, claims);
    return claims;
  }

  async #verifySignature(token: string): Promise<TokenClaims> {
    try {
      const { payload } = await jwtVerify(token, this.secret, {
        algorithms: ['HS256'],
        currentDate: new Date(this.clock()),
        requiredClaims: ['sub', 'exp', 'iat', 'jti'],
      });
      return payload as unknown as TokenClaims;
    } catch (error) {
      if (error instanceof joseErrors.JWTExpired) throw new TokenError('token expired: log in again');
      throw new TokenError('invalid token');
    }
  }
}

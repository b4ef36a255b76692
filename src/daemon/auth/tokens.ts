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

export class TokenService {
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

  /**
   * Checks the signature (HS256 only), the expiry and the required claims. Not cached here: a
   * request's caller, claims included, is cached once, by the daemon's caller cache.
   */
  async verify(token: string): Promise<TokenClaims> {
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

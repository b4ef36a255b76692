// Who a credential belongs to. One path for API keys and JWTs alike: `lookUpCaller` asks the
// store (a key with its user in one look-up; a JWT's signature, then its user and revocation),
// and `CallerCache` remembers the answer by the credential's SHA-256 digest until the change
// feed says a user, an API key or a revocation changed. The cache is the only one on the way:
// no per-connection memo, no cache of verified tokens beside it. On a store shared by several
// daemons it is served only once `changes.caughtUp()` has answered true for the request (see
// plugins/auth.ts), so a change made on another daemon is seen by the next request here.
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import type { Principal } from '../services.js';
import { hashApiKey, looksLikeApiKey } from './api-keys.js';
import { TokenError } from './tokens.js';

/** A credential's caller, and when the credential stops being valid (epoch ms; Infinity when never). */
export interface Caller {
  principal: Principal;
  expiresAt: number;
}

/** The SHA-256 digest (hex) a credential is known by, JWT or key: for an API key, its stored `key_hash`. */
export const credentialDigest: (credential: string) => string = hashApiKey;

/**
 * Asks the store who `credential` is, with no cache on the way; throws 401 (`ApiError`) when it
 * does not authenticate (unknown, expired, logged out, its user gone or its password changed).
 * `digest`: the credential's digest when the caller has it already.
 * @example
 * const { principal } = await lookUpCaller(app, 'ncp_…');
 */
export async function lookUpCaller(app: FastifyInstance, credential: string, digest?: string): Promise<Caller> {
  return looksLikeApiKey(credential) ? lookUpKey(app, digest ?? credentialDigest(credential)) : lookUpToken(app, credential);
}

async function lookUpKey(app: FastifyInstance, keyHash: string): Promise<Caller> {
  const caller = await app.store.apiKeys.callerByHash(keyHash);
  if (!caller) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the API key is not valid');
  const { key, user } = caller;
  const expiresAt = key.expires_at ? Date.parse(key.expires_at) : Infinity;
  if (expiresAt <= app.clock()) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the API key has expired');
  return { principal: { user, userId: user.id, role: user.role, via: 'api_key', keyId: key.id }, expiresAt };
}

async function lookUpToken(app: FastifyInstance, credential: string): Promise<Caller> {
  let claims;
  try {
    claims = await app.tokens.verify(credential);
  } catch (error) {
    const reason = error instanceof TokenError ? error.message : 'invalid token';
    throw new ApiError('NOT_AUTHENTICATED', `authentication required: ${reason}`);
  }
  const [user, revoked] = await Promise.all([app.store.users.get(Number(claims.sub)), app.store.revokedTokens.isRevoked(claims.jti)]);
  if (!user) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the account no longer exists');
  if (revoked) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: this token was logged out; log in again');
  // A password change (reset) ends the sessions opened with the old password: it raises the
  // user's token generation in the same update, so every older token is refused at once.
  // Records written before generations existed fall back to the change time (to the second).
  const stale =
    (claims.gen ?? 0) !== (user.token_generation ?? 0) ||
    (user.password_changed_at && claims.iat < Math.floor(Date.parse(user.password_changed_at) / 1000));
  if (stale) {
    throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the password was changed since this token was issued; log in again');
  }
  const session = { jti: claims.jti, exp: claims.exp };
  return { principal: { user, userId: user.id, role: user.role, via: 'jwt', session }, expiresAt: claims.exp * 1000 };
}

/** Callers kept at most; past it the oldest goes first (a client's next request looks it up again). */
const CACHED_MOST = 10_000;
/** The collections a caller is made of: a change to any of them may change who a credential is. */
const CALLER_COLLECTIONS: ReadonlySet<string> = new Set(['users', 'api_keys', 'revoked_tokens']);

/**
 * Callers by credential digest, dropped (all of them) by any change of users, API keys or
 * revoked tokens that the store's feed publishes, and each one at its credential's expiry.
 * Such changes are rare beside requests, so dropping everything costs each client one look-up
 * and keeps the rule simple: nothing cached outlives a change that might concern it.
 *
 * Lookups race with changes: `epoch` moves with every drop, and `remember` keeps a caller only
 * if no drop happened since the look-up began (the epoch read before it).
 * @example
 * const cache = new CallerCache(store, clock);
 * const epoch = cache.epoch;
 * const caller = cache.get(digest) ?? (await lookUpCaller(app, credential, digest));
 * cache.remember(digest, caller, epoch);
 */
export class CallerCache {
  readonly #callers = new Map<string, Caller>();
  readonly #unsubscribe: () => void;
  #epoch = 0;

  constructor(
    store: Store,
    private readonly clock: () => number,
  ) {
    this.#unsubscribe = store.changes.subscribe((change) => {
      if (change.kind !== 'record' || !CALLER_COLLECTIONS.has(change.collection)) return;
      this.#epoch++;
      this.#callers.clear();
    });
  }

  /** Moves whenever cached callers are dropped. */
  get epoch(): number {
    return this.#epoch;
  }

  /** The caller known by `digest`, while its credential has not expired. */
  get(digest: string): Caller | undefined {
    const caller = this.#callers.get(digest);
    if (!caller || caller.expiresAt > this.clock()) return caller;
    this.#callers.delete(digest);
    return undefined;
  }

  /** Keeps `caller` under `digest`, unless callers were dropped since `epoch` (the look-up may predate the change). */
  remember(digest: string, caller: Caller, epoch: number): void {
    if (epoch !== this.#epoch) return;
    if (this.#callers.size >= CACHED_MOST && !this.#callers.has(digest)) this.#callers.delete(this.#callers.keys().next().value!);
    this.#callers.set(digest, caller);
  }

  close(): void {
    this.#unsubscribe();
    this.#callers.clear();
  }
}

// One authentication hook for every route. Resolves the caller from `Authorization: Bearer`
// (a JWT or an `ncp_` API key) or `X-API-Key`, then enforces the route's `config.auth` level.
// Identification runs at onRequest and enforcement at preParsing: the request limits (onRequest
// hooks registered after this plugin) then know the user, and still count and answer, with their
// headers, a request whose credentials are refused. No body is parsed for a refused caller.
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import { hashApiKey, looksLikeApiKey } from '../auth/api-keys.js';
import { TokenError } from '../auth/tokens.js';
import type { Principal, RouteInfo } from '../services.js';
import { caughtUpFor } from '../caught-up.js';

/**
 * The matched route's URL and config. Fastify builds a fresh `routeOptions` object (a dozen
 * fields) on every access; the hooks of every request need it several times, so it is read once.
 */
export function routeOf(request: FastifyRequest): RouteInfo {
  if (!request.routeInfo) {
    const options = request.routeOptions;
    request.routeInfo = { url: options.url, config: options.config ?? {} };
  }
  return request.routeInfo;
}

/** Extracts the presented credential, or null when none was sent. */
export function presentedCredential(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.length > 0) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the Authorization header must be "Bearer <token>"');
    return match[1];
  }
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey.trim();
  return null;
}

/** An API key's caller, with when the key stops being valid (epoch ms; Infinity when never). */
async function resolveApiKey(app: FastifyInstance, credential: string, now: number, touch = true): Promise<{ principal: Principal; expiresAt: number }> {
  // The key and its user in one round trip, on every request (no cache: a key deleted on
  // another daemon of the database is refused at once).
  const caller = await app.store.apiKeys.callerByHash(hashApiKey(credential));
  if (!caller) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the API key is not valid');
  const { key, user } = caller;
  const expiresAt = key.expires_at ? Date.parse(key.expires_at) : Infinity;
  if (expiresAt <= now) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the API key has expired');
  if (touch) touchKey(app, key.id, now);
  return { principal: { user, userId: user.id, role: user.role, via: 'api_key', keyId: key.id }, expiresAt };
}

/** The second each key's use was last recorded by this daemon, per app. */
const lastTouched = new WeakMap<FastifyInstance, Map<number, number>>();

/**
 * Records a key's use without holding the request: the store may batch it, and a failure only
 * costs `last_used_at`. `last_used_at` is kept to the second, so a key already recorded in this
 * second is not passed on again (a script's key is used thousands of times a second).
 */
function touchKey(app: FastifyInstance, keyId: number, now: number): void {
  const second = Math.floor(now / 1000);
  let seen = lastTouched.get(app);
  if (!seen) lastTouched.set(app, (seen = new Map()));
  if (seen.get(keyId) === second) return;
  if (seen.size >= 10_000) seen.clear();
  seen.set(keyId, second);
  app.store.apiKeys.touch(keyId, now).catch((error: unknown) => app.log.warn({ err: error, key_id: keyId }, 'API key use could not be recorded'));
}

export async function resolvePrincipal(app: FastifyInstance, credential: string): Promise<Principal> {
  const now = app.clock();
  if (looksLikeApiKey(credential)) return (await resolveApiKey(app, credential, now)).principal;
  return resolveJwt(app, credential);
}

/**
 * Checks a credential again, as a new request with it would be checked, without recording a use
 * of the key: an open stream asks this when something its caller depends on changed. Answers the
 * caller with when the credential stops being valid (epoch ms; Infinity when never); throws 401.
 */
export async function recheckCredential(app: FastifyInstance, credential: string): Promise<{ principal: Principal; expiresAt: number }> {
  if (looksLikeApiKey(credential)) return resolveApiKey(app, credential, app.clock(), false);
  const principal = await resolveJwt(app, credential);
  return { principal, expiresAt: principal.session ? principal.session.exp * 1000 : Infinity };
}

async function resolveJwt(app: FastifyInstance, credential: string): Promise<Principal> {
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
  return { user, userId: user.id, role: user.role, via: 'jwt', session: { jti: claims.jti, exp: claims.exp } };
}

/** Why identification failed, kept until enforcement so request limits run in between. */
const refusals = new WeakMap<FastifyRequest, ApiError>();

/**
 * The API-key caller last identified on a connection, with the change epoch it was identified
 * in: the one cache of callers. Scripts and billing systems send the same key over one
 * keep-alive connection many times a second. While no key and no user has changed since (a
 * revoked key, a deleted user or a changed role all move the epoch, through the store's change
 * feed) and the key has not expired, the same key on the same connection is the same caller: it
 * is known without hashing or lookups. Served only once the feed is caught up
 * (`changes.caughtUp()`): at once on the embedded store; with a shared database after the feed
 * has asked the database what changed, so a key deleted on another daemon before this request
 * came is refused. The remembered key is compared in constant time: behind a reverse proxy, one
 * upstream connection can carry several clients.
 */
interface KnownCaller {
  credential: string;
  principal: Principal;
  expiresAt: number;
  epoch: number;
}
const callers = new WeakMap<object, KnownCaller>();

/** Moves on every change of users or API keys; per app, so test apps sharing a process stay apart. */
const epochs = new WeakMap<FastifyInstance, { value: number }>();

/**
 * Constant-time equality of two secrets: every character of the remembered one is looked at
 * whatever the presented one holds (the time tells only the length, which the key format fixes).
 * It works on the strings themselves, so the per-request check allocates nothing.
 */
export function sameSecret(presented: string, remembered: string): boolean {
  let difference = presented.length ^ remembered.length;
  for (let i = 0; i < remembered.length; i++) difference |= presented.charCodeAt(i) ^ remembered.charCodeAt(i);
  return difference === 0;
}

/**
 * The connection's remembered caller for `credential` while its key has not expired, changes or
 * not (`tentative`: only to count the request while the feed catches up; see the onRequest hook).
 */
function rememberedCaller(app: FastifyInstance, request: FastifyRequest, credential: string): KnownCaller | null {
  const known = callers.get(request.raw.socket);
  if (!known || !sameSecret(credential, known.credential) || known.expiresAt <= app.clock()) return null;
  return known;
}

/** The connection's remembered caller, if still valid; only once the change feed is caught up. */
function knownCaller(app: FastifyInstance, request: FastifyRequest, credential: string): Principal | null {
  const epoch = epochs.get(app);
  const known = rememberedCaller(app, request, credential);
  if (!epoch || !known || known.epoch !== epoch.value) return null;
  touchKey(app, known.principal.keyId!, app.clock());
  return known.principal;
}

/**
 * Requests whose caller is confirmed after the onRequest hooks (the feed was catching up), by
 * enforcement at the latest.
 */
const confirmations = new WeakMap<FastifyRequest, Promise<void>>();

/**
 * Identifies the caller through the store; refusals are kept for enforcement (preParsing).
 * `remember`: the change feed was caught up before the lookup, so its caller may be kept.
 */
async function identify(app: FastifyInstance, request: FastifyRequest, credential: string, remember: boolean): Promise<void> {
  try {
    if (!looksLikeApiKey(credential)) {
      request.principal = await resolvePrincipal(app, credential);
      return;
    }
    const epoch = epochs.get(app);
    const before = epoch?.value;
    const { principal, expiresAt } = await resolveApiKey(app, credential, app.clock());
    request.principal = principal;
    // Remembered only when nothing changed while the lookups awaited the store.
    if (remember && epoch && epoch.value === before && request.raw.socket) {
      callers.set(request.raw.socket, { credential, principal, expiresAt, epoch: epoch.value });
    }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    refusals.set(request, error);
  }
}

export default fp(
  async function auth(app: FastifyInstance) {
    app.decorateRequest('principal', null);
    app.decorateRequest('routeInfo', null);
    const epoch = { value: 0 };
    epochs.set(app, epoch);
    const unsubscribe = app.store.changes.subscribe((change) => {
      if (change.kind === 'record' && (change.collection === 'api_keys' || change.collection === 'users')) epoch.value++;
    });
    app.addHook('onClose', async () => unsubscribe());

    // Both hooks complete without a promise when they can (no credential lookup needed, a feed
    // caught up at once), so a known caller's request goes on in the same turn.
    app.addHook('onRequest', (request, _reply, done) => {
      if (request.is404) return done();
      const level = routeOf(request).config.auth ?? 'user';
      if (level === 'none') return done();
      let credential: string | null;
      try {
        credential = presentedCredential(request);
        if (!credential) {
          throw new ApiError('NOT_AUTHENTICATED', 'authentication required: send Authorization: Bearer <JWT or API key>');
        }
      } catch (error) {
        if (!(error instanceof ApiError)) return done(error as Error);
        refusals.set(request, error);
        return done();
      }
      // A JWT's caller is looked up on every request (user and revocation): nothing to catch up.
      if (!looksLikeApiKey(credential)) {
        identify(app, request, credential, false).then(() => done(), done);
        return;
      }
      const caughtUp = caughtUpFor(app.store, request);
      if (caughtUp === true) {
        const known = knownCaller(app, request, credential);
        if (known) {
          request.principal = known;
          return done();
        }
        identify(app, request, credential, true).then(() => done(), done);
        return;
      }
      const confirm = () =>
        caughtUp.then((fresh) => {
          const known = fresh ? knownCaller(app, request, credential) : null;
          if (known) {
            request.principal = known;
            return;
          }
          request.principal = null;
          return identify(app, request, credential, fresh);
        });
      // A caller remembered on this connection is most likely still the caller: the request
      // limits count the request under it while the feed catches up (two waits on the database
      // at once instead of one after the other), and enforcement waits for the confirmation.
      const tentative = rememberedCaller(app, request, credential);
      if (tentative) {
        request.principal = tentative.principal;
        const confirming = confirm();
        // Awaited by preParsing, which a request refused by its limits never reaches.
        confirming.catch(() => undefined);
        confirmations.set(request, confirming);
        return done();
      }
      confirm().then(() => done(), done);
    });

    app.addHook('preParsing', (request, _reply, payload, done) => {
      const confirming = confirmations.get(request);
      if (confirming) {
        confirming.then(() => {
          try {
            enforce(request);
          } catch (error) {
            return done(error as Error);
          }
          done(null, payload);
        }, done);
        return;
      }
      try {
        enforce(request);
        done(null, payload);
      } catch (error) {
        done(error as Error);
      }
    });
  },
  { name: 'auth', dependencies: ['errors'] },
);

/** Refuses the request unless its caller may use the route (the route's `config.auth`). */
function enforce(request: FastifyRequest): void {
  if (request.is404) return;
  const level = routeOf(request).config.auth ?? 'user';
  if (level === 'none') return;
  const refusal = refusals.get(request);
  if (refusal) throw refusal;
  const principal = principalOf(request);
  if ((level === 'jwt' || level === 'admin_jwt') && principal.via !== 'jwt') {
    throw new ApiError('JWT_REQUIRED', 'this endpoint requires a JWT from /auth/login, not an API key');
  }
  if ((level === 'admin' || level === 'admin_jwt') && principal.role !== 'admin') {
    throw new ApiError('FORBIDDEN', 'this endpoint requires the admin role');
  }
}

/** The authenticated caller; routes with auth other than `none` always have one. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('NOT_AUTHENTICATED', 'authentication required');
  return request.principal;
}

/**
 * 404 when absent, 403 when it belongs to someone else (admins may access all). API keys and
 * webhooks of admins exist too, so the message says "another user", not "another customer".
 */
export function assertOwnership<T extends { user_id: number }>(request: FastifyRequest, record: T | undefined, what: string, id: number): T {
  if (!record) throw new ApiError('NOT_FOUND', `${what} ${id} not found`);
  const principal = principalOf(request);
  if (principal.role !== 'admin' && record.user_id !== principal.userId) {
    throw new ApiError('FORBIDDEN', `${what} ${id} belongs to another user`);
  }
  return record;
}

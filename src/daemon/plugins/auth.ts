// One authentication hook for every route. Resolves the caller from `Authorization: Bearer`
// (a JWT or an `ncp_` API key) or `X-API-Key`, then enforces the route's `config.auth` level.
// Identification runs in a global onRequest hook and enforcement in the last onRequest hook of
// each route: the request limits (global onRequest hooks registered after this plugin) then know
// the user, and still count and answer, with their headers, a request whose credentials are
// refused. No body is parsed for a refused caller.
// Callers come from the one caller cache (auth/callers.ts), kept from the change feed and served
// once the feed has caught up with the request (caught-up.ts).
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../../shared/errors.js';
import { CallerCache, credentialDigest, lookUpCaller, type Caller } from '../auth/callers.js';
import type { Principal, RouteInfo } from '../services.js';
import { caughtUpAnswered, caughtUpFor } from '../caught-up.js';

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

const BEARER = /^Bearer\s+(\S+)\s*$/i;
const BEARER_PREFIX = 'Bearer ';
/**
 * The usual spelling: the prefix, then one credential of visible ASCII (no whitespace), which is
 * what BEARER's capture is for such a header. A test, unlike BEARER's exec, builds no match.
 */
const PLAIN_BEARER = /^Bearer [\x21-\x7e]+$/;

/** Extracts the presented credential, or null when none was sent. */
export function presentedCredential(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.length > 0) {
    // Every API request sends one: the usual spelling is taken as it is, past the prefix.
    if (PLAIN_BEARER.test(header)) return header.slice(BEARER_PREFIX.length);
    const match = BEARER.exec(header);
    if (!match) throw new ApiError('NOT_AUTHENTICATED', 'authentication required: the Authorization header must be "Bearer <token>"');
    return match[1];
  }
  const apiKey = request.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.length > 0) return apiKey.trim();
  return null;
}

/**
 * Who `credential` is, asked of the store with no cache (the health route's admin check).
 * Throws 401 (`ApiError`) when it does not authenticate.
 */
export async function resolvePrincipal(app: FastifyInstance, credential: string): Promise<Principal> {
  return (await lookUpCaller(app, credential)).principal;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Why identification failed, kept until enforcement so request limits run in between. */
    authRefusal: ApiError | null;
    /** A tentative caller's confirmation (the feed was catching up), awaited by enforcement. */
    callerConfirmation: Confirmation | null;
  }
}

/**
 * A tentative caller's confirmation: started by the identifying hook, waited for by enforcement
 * (the route's last onRequest hook), which a request refused by its limits never reaches. A
 * callback handed over, not a promise: enforcement goes on in the same turn when the
 * confirmation came first.
 */
class Confirmation {
  #settled = false;
  #error: Error | null = null;
  #then: ((error: Error | null) => void) | null = null;

  settle(error: Error | null): void {
    this.#settled = true;
    this.#error = error;
    const then = this.#then;
    this.#then = null;
    then?.(error);
  }

  whenSettled(then: (error: Error | null) => void): void {
    if (this.#settled) then(this.#error);
    else this.#then = then;
  }
}

/** Keys whose use this daemon passed to the store, at most; past it the record starts over. */
const USES_KEPT = 10_000;

/**
 * The second (epoch s) in which each API key's use was last passed to the store. The store keeps
 * `last_used_at` to the second, so a further use within that second changes nothing there: it is
 * not passed again (the first use of each second is). A use the store failed to record is
 * forgotten here, so the next request passes it again.
 */
class KeyUses {
  readonly #seconds = new Map<number, number>();

  constructor(private readonly app: FastifyInstance) {}

  record(keyId: number): void {
    const now = this.app.clock();
    const second = Math.floor(now / 1000);
    if (this.#seconds.get(keyId) === second) return;
    if (this.#seconds.size >= USES_KEPT) this.#seconds.clear();
    this.#seconds.set(keyId, second);
    this.app.store.apiKeys.touch(keyId, now).catch((error: unknown) => {
      if (this.#seconds.get(keyId) === second) this.#seconds.delete(keyId);
      this.app.log.warn({ err: error, key_id: keyId }, 'API key use could not be recorded');
    });
  }
}

/**
 * Makes `caller` the request's. A key's use is passed to the store (once a second per key, see
 * KeyUses): the store keeps `last_used_at` to the second and writes uses in batches (a write,
 * not a cache), and a failure only costs that timestamp.
 */
function admit(uses: KeyUses, request: FastifyRequest, caller: Caller): void {
  const { principal } = caller;
  request.principal = principal;
  if (principal.via === 'api_key') uses.record(principal.keyId!);
}

/**
 * Identifies the caller through the store; refusals are kept for enforcement (the route's last
 * onRequest hook).
 * `remember`: the change feed was caught up before the look-up, so its caller may be cached.
 */
async function identify(app: FastifyInstance, uses: KeyUses, cache: CallerCache, request: FastifyRequest, credential: string, digest: string, remember: boolean): Promise<void> {
  const epoch = cache.epoch;
  try {
    const caller = await lookUpCaller(app, credential, digest);
    admit(uses, request, caller);
    if (remember) cache.remember(digest, caller, epoch);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    request.authRefusal = error;
  }
}

export default fp(
  async function auth(app: FastifyInstance) {
    app.decorateRequest('principal', null);
    app.decorateRequest('routeInfo', null);
    app.decorateRequest('authRefusal', null);
    app.decorateRequest('callerConfirmation', null);
    app.decorateRequest('caughtUp', null);
    const cache = new CallerCache(app.store, app.clock);
    const uses = new KeyUses(app);
    app.addHook('onClose', async () => cache.close());

    // Both hooks complete without a promise when they can (a cached caller, a feed caught up at
    // once), so a known caller's request goes on in the same turn.
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
        request.authRefusal = error;
        return done();
      }
      const digest = credentialDigest(credential);
      const caughtUp = caughtUpFor(app.store, request);
      if (caughtUp === true) {
        const known = cache.get(digest);
        if (known) {
          admit(uses, request, known);
          return done();
        }
        return lookUp(request, credential, digest, done);
      }
      whileCatchingUp(request, credential, digest, caughtUp, done);
    });

    /** Not cached: asked of the store, and remembered (the feed is caught up). */
    const lookUp = (request: FastifyRequest, credential: string, digest: string, done: (error?: Error) => void): void => {
      identify(app, uses, cache, request, credential, digest, true).then(() => done(), done);
    };

    /**
     * The feed has not answered yet. This path and lookUp are apart from the hook, so its usual
     * path (a cached caller, a feed caught up) allocates none of the closures they need.
     */
    const whileCatchingUp = (request: FastifyRequest, credential: string, digest: string, caughtUp: Promise<boolean>, done: (error?: Error) => void): void => {
      /** Once the feed answered: the cached caller if it is still cached, else the store's. */
      const confirm = (fresh: boolean): void | Promise<void> => {
        // Asking the feed published what changed first: a caller still cached is current.
        if (fresh) caughtUpAnswered(request);
        const known = fresh ? cache.get(digest) : undefined;
        if (known) return admit(uses, request, known);
        request.principal = null;
        return identify(app, uses, cache, request, credential, digest, fresh);
      };
      // A cached caller is most likely still the caller: the request limits count the request
      // under it while the feed catches up (two waits on the database at once instead of one
      // after the other), and enforcement waits for the confirmation. Nothing else reads the
      // caller before enforcement.
      const tentative = cache.get(digest);
      if (tentative) {
        request.principal = tentative.principal;
        const confirmation = new Confirmation();
        request.callerConfirmation = confirmation;
        const failed = (error: unknown) => confirmation.settle(error as Error);
        caughtUp.then((fresh) => {
          let confirming: void | Promise<void>;
          try {
            confirming = confirm(fresh);
          } catch (error) {
            return failed(error);
          }
          if (confirming) confirming.then(() => confirmation.settle(null), failed);
          else confirmation.settle(null);
        }, failed);
        return done();
      }
      caughtUp.then(confirm).then(() => done(), done);
    };

    // Enforcement is the last onRequest hook of every route with an access level: after the
    // global hooks (the request limits among them) and the route's own onRequest hooks, before
    // the body is read, as a separate preParsing hook would be, without a hook phase of its own
    // for every request. Routes marked `lockout` have no access level (`none`), so the lockout
    // check (plugins/lockout.ts) never comes after it.
    const enforcing = (request: FastifyRequest, _reply: unknown, done: (error?: Error) => void): void => {
      const confirmation = request.callerConfirmation;
      if (confirmation) {
        confirmation.whenSettled((error) => {
          if (error) return done(error);
          try {
            enforce(request);
          } catch (refusal) {
            return done(refusal as Error);
          }
          done();
        });
        return;
      }
      try {
        enforce(request);
      } catch (error) {
        return done(error as Error);
      }
      done();
    };
    app.addHook('onRoute', (route) => {
      if ((route.config?.auth ?? 'user') === 'none') return;
      const own = route.onRequest ? [route.onRequest].flat() : [];
      // A GET route's HEAD twin is made from its options, enforcement already among them.
      if (own.includes(enforcing as never)) return;
      route.onRequest = [...own, enforcing] as typeof route.onRequest;
    });
  },
  { name: 'auth', dependencies: ['errors'] },
);

/** Refuses the request unless its caller may use the route (the route's `config.auth`). */
function enforce(request: FastifyRequest): void {
  if (request.is404) return;
  const level = routeOf(request).config.auth ?? 'user';
  if (level === 'none') return;
  const refusal = request.authRefusal;
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

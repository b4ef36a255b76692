// What the daemon's plugins and routes share, decorated onto the fastify instance.
// Types the OpenAPI fields (tags, summary, security) of route schemas.
import type {} from '@fastify/swagger';
import type { DataLayout } from '../shared/paths.js';
import type { Store } from '../store/store.js';
import type { Role, UserRecord } from '../store/types.js';
import type { TokenService } from './auth/tokens.js';
import type { DaemonMetrics } from './metrics/metrics.js';

export type Clock = () => number;

export interface DaemonOptions {
  store: Store;
  paths: DataLayout;
  jwtSecret: Uint8Array;
  /** Epoch milliseconds; tests pass their own to control expiry and lockouts. */
  clock?: Clock;
  /** `--allow-private-webhooks`: overrides the setting for this daemon's lifetime. */
  allowPrivateWebhooks?: boolean;
  /** Extra CA certificates for outgoing webhook TLS (PEM), on top of the system ones. */
  webhookCa?: string[];
  /** The URL the daemon serves, for links in mails and the docs. */
  baseUrl?: string;
  /** `--metrics-port`: where the daemon's metrics go; absent, none are kept (NO_METRICS). */
  metrics?: DaemonMetrics;
  /**
   * The dispatcher owner id of the daemon that ran on this data directory before and ended
   * without stopping (its daemon.json was left behind): its leases are given up at start.
   */
  predecessor?: string;
}

/** Who is calling: resolved once per request by the auth plugin. */
export interface Principal {
  user: UserRecord;
  userId: number;
  role: Role;
  via: 'jwt' | 'api_key';
  keyId?: number;
  /** The presented JWT's id and expiry (epoch seconds), for logout. */
  session?: { jti: string; exp: number };
}

/**
 * Route-level access: `none` (public), `user` (JWT or API key, the default),
 * `jwt` (JWT only: 403 `jwt required` with a key), `admin` (role admin).
 */
export type AuthLevel = 'none' | 'user' | 'jwt' | 'admin' | 'admin_jwt';

/** What the request hooks need of the matched route. */
export interface RouteInfo {
  url: string | undefined;
  config: import('fastify').FastifyContextConfig;
}

declare module 'fastify' {
  interface FastifyInstance {
    store: Store;
    clock: Clock;
    tokens: TokenService;
    daemon: DaemonOptions;
  }
  interface FastifyRequest {
    principal: Principal | null;
    /** The matched route's URL pattern and config, read once per request (see routeOf). */
    routeInfo: RouteInfo | null;
  }
  interface FastifyContextConfig {
    auth?: AuthLevel;
  }
}

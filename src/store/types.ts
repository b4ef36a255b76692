// Plain records kept by the store. Validation happens at the API edge; these are trusted shapes.
import type { Settings } from '../shared/settings.js';

export type Role = 'admin' | 'customer';

export interface UserRecord {
  id: number;
  email: string;
  name: string;
  role: Role;
  /** scrypt$N$r$p$salt$hash (base64) */
  password_hash: string;
  totp_secret: string | null;
  totp_pending_secret: string | null;
  two_factor_enabled: boolean;
  /** Last accepted TOTP time step, so a code is never accepted twice. */
  totp_last_step: number | null;
  /** When the password was last changed; JWTs issued before it are refused. Absent on older records. */
  password_changed_at?: string | null;
  /**
   * Raised on every password change or reset: JWTs carry the generation they were issued
   * under (`gen`) and one from an older generation is refused. Absent on older records (0).
   */
  token_generation?: number;
  created_at: string;
  updated_at: string;
}

export interface ApiKeyRecord {
  id: number;
  user_id: number;
  name: string;
  /** SHA-256 of the full key, hex. The key itself is never stored. */
  key_hash: string;
  key_prefix: string;
  last_used_at: string | null;
  expires_at: string | null;
  created_at: string;
}

export interface SubscriptionRecord {
  id: number;
  customer_id: number;
  main_domain: string;
  is_default: boolean;
  status: 'active' | 'suspended';
  created_at: string;
  updated_at: string;
}

export interface SiteRecord {
  id: number;
  subscription_id: number;
  domain: string;
  created_at: string;
}

export interface WebhookRecord {
  id: number;
  user_id: number;
  url: string;
  /** Kept to sign deliveries; never returned by the API. */
  secret: string;
  /** `*` or normalised comma-separated event names. */
  events: string;
  active: boolean;
  created_at: string;
  updated_at: string;
  /** How deliveries are signed; absent on older records, which are `seed`. */
  signature?: 'seed' | 'standard-webhooks';
  /** When the endpoint was last enabled again: failures before it do not count towards auto-disable. */
  health_reset_at?: string | null;
  /** Extra request headers sent with every attempt; values kept like the secret (sendable, never shown). */
  headers?: Record<string, string> | null;
  /** The secret before the last rotation, still signing (as a second signature) until its expiry. */
  previous_secret?: string | null;
  /** When `previous_secret` stops signing and is dropped from the store. */
  previous_secret_expires_at?: string | null;
  /** Deliveries are kept and not attempted while true; absent on older records (false). */
  paused?: boolean;
  /** Whole seconds before each retry; absent on records that keep the default `[2]`. */
  retry_schedule?: number[];
  /** Attempts at once to the endpoint; absent on records that keep the default 8. */
  max_in_flight?: number;
  /** Attempts per second at most, over every daemon; absent or null: no limit. */
  rate_limit_per_second?: number | null;
}

export interface ResetTokenRecord {
  id: number;
  user_id: number;
  /** SHA-256 of the token, hex. */
  token_hash: string;
  expires_at: string;
  used_at: string | null;
  created_at: string;
}

/** A failure counter (variant B) or a request window (variant A), keyed by scope and client. */
export interface LimiterRecord {
  key: string;
  count: number;
  /** Epoch ms when the window or counting period started. */
  window_start: number;
  /** Epoch ms until which the key is locked; 0 when not locked. */
  locked_until: number;
}

export interface EventRecord {
  id: string;
  event: string;
  owner_id: number | null;
  data: Record<string, unknown>;
  timestamp: string;
}

/** One webhook delivery in the outbox: one event to one endpoint, up to two attempts. */
export interface DeliveryRecord {
  id: string;
  endpoint_id: number;
  /** The endpoint's owner, so a dispatcher can share its slots fairly between customers. */
  owner_id: number | null;
  event: string;
  /** Exact JSON bytes that are signed and sent, so a retry sends the same body. */
  body: string;
  /** `cancelled`: never attempted because its endpoint was deleted or deactivated meanwhile. */
  state: 'pending' | 'succeeded' | 'failed' | 'cancelled';
  attempts: number;
  /** Epoch ms of the next attempt. */
  next_attempt_at: number;
  created_at: string;
  /** A manual send (test, redeliver): made even when the endpoint is inactive. */
  manual?: boolean;
  /**
   * In a claim's answer only, never stored: not to be attempted before this (epoch ms), the turn
   * the store gave it in its endpoint's rate limit (a store whose claimers share the rate).
   */
  not_before?: number;
}

export interface DeliveryLogEntry {
  id: number;
  delivery_id: string;
  endpoint_id: number;
  event: string;
  payload: unknown;
  attempt: number;
  status_code: number;
  response: string;
  success: boolean;
  duration_ms: number;
  created_at: string;
  /** The request headers sent with the attempt. */
  request_headers: Record<string, string>;
  /** Why a failed attempt failed, in a few words (`HTTP 500`, `connection refused`); null on success. Absent on older entries. */
  reason?: string | null;
  /** The daemon that made the attempt, `hostname:pid`. Absent on older entries. */
  daemon?: string;
  /** On a failed attempt: when the delivery's next attempt is due, or null when none is left. Absent on successes and older entries. */
  next_attempt_at?: string | null;
}

export interface StoreData {
  schema_version: number;
  counters: Record<string, number>;
  users: UserRecord[];
  api_keys: ApiKeyRecord[];
  subscriptions: SubscriptionRecord[];
  sites: SiteRecord[];
  webhooks: WebhookRecord[];
  reset_tokens: ResetTokenRecord[];
  limiter: LimiterRecord[];
  settings: Partial<Settings>;
}

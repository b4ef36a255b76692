// The API shapes the CLI reads (CONTRACT sections 3-4, hosting-panel-api.md section 2). Types
// only: the daemon's TypeBox schemas validate; the CLI shows what it gets.
export type { DeliveryEntry as DeliveryLogEntry, EndpointHealth } from '../shared/api/webhooks.js';
import type { EndpointHealth } from '../shared/api/webhooks.js';
export type { UserDetail, User, LoginResult } from '../shared/api/users.js';

export interface ApiKey {
  id: number;
  name: string;
  key_prefix: string;
  last_used_at: string | null;
  expires_at: string | null;
  created_at: string;
}

/** The create answer: the only time the full key is seen. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

export interface WebhookEndpoint {
  id: number;
  url: string;
  events: string;
  active: boolean;
  /** Absent from older daemons. */
  signature?: 'seed' | 'standard-webhooks';
  health?: EndpointHealth;
  created_at: string;
  updated_at: string;
  /** Custom headers, values masked; absent without any. */
  headers?: Record<string, string>;
  /** During a secret rotation's overlap: when the previous secret stops signing. */
  previous_secret_expires_at?: string;
  /** Absent from older daemons (not paused). */
  paused?: boolean;
  /** Deliveries kept while paused. Absent from older daemons. */
  paused_deliveries?: number;
  /** Seconds before each retry; absent from older daemons. */
  retry_schedule?: number[];
  /** Attempts at once to the endpoint; absent from older daemons. */
  max_in_flight?: number;
  /** Attempts per second at most (null: none); absent from older daemons. */
  rate_limit_per_second?: number | null;
}

export interface Site {
  id: number;
  subscription_id: number;
  domain: string;
  created_at: string;
}

export interface Subscription {
  id: number;
  customer_id: number;
  main_domain: string;
  is_default: boolean;
  status: string;
  created_at: string;
  updated_at?: string;
}

export interface EventTypeInfo {
  name: string;
  description: string;
  fields: Record<string, 'integer' | 'string'>;
}

export interface TwoFactorSetup {
  secret: string;
  otpauth_url: string;
}

export interface Deleted {
  id: number;
}

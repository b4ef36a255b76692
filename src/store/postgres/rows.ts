// Rows ↔ records: the exact shapes of types.ts (ISO timestamps as written, booleans, nulls),
// and the column lists the generic insert and update statements are built from.
import type {
  ApiKeyRecord,
  DeliveryLogEntry,
  DeliveryRecord,
  ResetTokenRecord,
  SiteRecord,
  SubscriptionRecord,
  UserRecord,
  WebhookRecord,
  LimiterRecord,
} from '../types.js';
import type { Row } from './db.js';

export const COLUMNS = {
  users: [
    'email',
    'name',
    'role',
    'password_hash',
    'totp_secret',
    'totp_pending_secret',
    'two_factor_enabled',
    'totp_last_step',
    'password_changed_at',
    'token_generation',
    'created_at',
    'updated_at',
  ],
  api_keys: ['user_id', 'name', 'key_hash', 'key_prefix', 'last_used_at', 'expires_at', 'created_at'],
  subscriptions: ['customer_id', 'main_domain', 'is_default', 'status', 'created_at', 'updated_at'],
  sites: ['subscription_id', 'domain', 'created_at'],
  webhooks: ['user_id', 'url', 'secret', 'events', 'active', 'signature', 'health_reset_at', 'created_at', 'updated_at', 'headers', 'previous_secret', 'previous_secret_expires_at', 'paused', 'retry_schedule', 'max_in_flight', 'rate_limit_per_second'],
  reset_tokens: ['user_id', 'token_hash', 'expires_at', 'used_at', 'created_at'],
} as const;

export type Table = keyof typeof COLUMNS;

/**
 * `INSERT INTO table (…) VALUES (…) RETURNING *` for the record's known, defined columns
 * (absent optional fields take the column default). With `withId` the record's id is kept.
 */
export function insertStatement(table: Table, record: object, withId = false): { text: string; values: unknown[] } {
  const source = record as Record<string, unknown>;
  const columns: string[] = withId ? ['id'] : [];
  const values: unknown[] = withId ? [source.id] : [];
  for (const column of COLUMNS[table]) {
    if (source[column] === undefined) continue;
    columns.push(column);
    values.push(source[column]);
  }
  const placeholders = values.map((_, i) => `$${i + 1}`);
  return { text: `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${placeholders.join(', ')}) RETURNING *`, values };
}

/** `UPDATE table SET … WHERE id = $1 RETURNING *`, or null when the patch names no column. */
export function updateStatement(table: Table, id: number, patch: object): { text: string; values: unknown[] } | null {
  const source = patch as Record<string, unknown>;
  const sets: string[] = [];
  const values: unknown[] = [id];
  for (const column of COLUMNS[table]) {
    if (source[column] === undefined) continue;
    values.push(source[column]);
    sets.push(`${column} = $${values.length}`);
  }
  if (sets.length === 0) return null;
  return { text: `UPDATE ${table} SET ${sets.join(', ')} WHERE id = $1 RETURNING *`, values };
}

const str = (v: unknown) => v as string;
const num = (v: unknown) => Number(v);
const strOrNull = (v: unknown) => (v === null || v === undefined ? null : String(v));
const numOrNull = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export function toUser(r: Row): UserRecord {
  return {
    id: num(r.id),
    email: str(r.email),
    name: str(r.name),
    role: r.role as UserRecord['role'],
    password_hash: str(r.password_hash),
    totp_secret: strOrNull(r.totp_secret),
    totp_pending_secret: strOrNull(r.totp_pending_secret),
    two_factor_enabled: Boolean(r.two_factor_enabled),
    totp_last_step: numOrNull(r.totp_last_step),
    password_changed_at: strOrNull(r.password_changed_at),
    token_generation: num(r.token_generation ?? 0),
    created_at: str(r.created_at),
    updated_at: str(r.updated_at),
  };
}

export function toApiKey(r: Row): ApiKeyRecord {
  return {
    id: num(r.id),
    user_id: num(r.user_id),
    name: str(r.name),
    key_hash: str(r.key_hash),
    key_prefix: str(r.key_prefix),
    last_used_at: strOrNull(r.last_used_at),
    expires_at: strOrNull(r.expires_at),
    created_at: str(r.created_at),
  };
}

export function toSubscription(r: Row): SubscriptionRecord {
  return {
    id: num(r.id),
    customer_id: num(r.customer_id),
    main_domain: str(r.main_domain),
    is_default: Boolean(r.is_default),
    status: r.status as SubscriptionRecord['status'],
    created_at: str(r.created_at),
    updated_at: str(r.updated_at),
  };
}

export function toSite(r: Row): SiteRecord {
  return { id: num(r.id), subscription_id: num(r.subscription_id), domain: str(r.domain), created_at: str(r.created_at) };
}

export function toWebhook(r: Row): WebhookRecord {
  return {
    id: num(r.id),
    user_id: num(r.user_id),
    url: str(r.url),
    secret: str(r.secret),
    events: str(r.events),
    active: Boolean(r.active),
    // Optional fields: present only when set, as the JSON store keeps them.
    ...(r.signature != null ? { signature: r.signature as WebhookRecord['signature'] } : {}),
    ...(r.health_reset_at != null ? { health_reset_at: str(r.health_reset_at) } : {}),
    ...(r.headers != null ? { headers: r.headers as Record<string, string> } : {}),
    ...(r.previous_secret != null ? { previous_secret: str(r.previous_secret), previous_secret_expires_at: str(r.previous_secret_expires_at) } : {}),
    ...(r.paused === true ? { paused: true } : {}),
    created_at: str(r.created_at),
    updated_at: str(r.updated_at),
    ...(r.retry_schedule != null ? { retry_schedule: (r.retry_schedule as unknown[]).map(Number) } : {}),
    ...(r.max_in_flight != null ? { max_in_flight: num(r.max_in_flight) } : {}),
    ...(r.rate_limit_per_second != null ? { rate_limit_per_second: num(r.rate_limit_per_second) } : {}),
  };
}

export function toResetToken(r: Row): ResetTokenRecord {
  return {
    id: num(r.id),
    user_id: num(r.user_id),
    token_hash: str(r.token_hash),
    expires_at: str(r.expires_at),
    used_at: strOrNull(r.used_at),
    created_at: str(r.created_at),
  };
}

export function toLimiter(r: Row): LimiterRecord {
  return { key: str(r.key), count: num(r.count), window_start: num(r.window_start), locked_until: num(r.locked_until) };
}

export function toDelivery(r: Row): DeliveryRecord {
  const delivery: DeliveryRecord = {
    id: str(r.id),
    endpoint_id: num(r.endpoint_id),
    owner_id: numOrNull(r.owner_id),
    event: str(r.event),
    body: str(r.body),
    state: r.state as DeliveryRecord['state'],
    attempts: num(r.attempts),
    next_attempt_at: num(r.next_attempt_at),
    created_at: str(r.created_at),
  };
  if (r.manual !== null && r.manual !== undefined) delivery.manual = Boolean(r.manual);
  // A claim's answer: the turn of the endpoint's rate schedule.
  if (r.send_at !== null && r.send_at !== undefined) delivery.not_before = num(r.send_at);
  return delivery;
}

/** The log entry fields with a column of their own; anything else rides in `extra`. */
export const LOG_FIELDS = [
  'delivery_id',
  'endpoint_id',
  'event',
  'payload',
  'attempt',
  'status_code',
  'response',
  'success',
  'duration_ms',
  'created_at',
  'request_headers',
] as const;

/** From a row, or from the same row as JSON (a change notification carries it that way). */
export function toLogEntry(r: Row): DeliveryLogEntry {
  const extra = (r.extra && typeof r.extra === 'object' ? r.extra : {}) as Record<string, unknown>;
  return {
    ...extra,
    id: num(r.id),
    delivery_id: str(r.delivery_id),
    endpoint_id: num(r.endpoint_id),
    event: str(r.event),
    payload: r.payload,
    attempt: num(r.attempt),
    status_code: num(r.status_code),
    response: str(r.response),
    success: Boolean(r.success),
    duration_ms: num(r.duration_ms),
    created_at: str(r.created_at),
    request_headers: (r.request_headers ?? {}) as Record<string, string>,
  };
}

/** The fields of an entry the schema has no column for, or null. */
export function logExtra(entry: object): Record<string, unknown> | null {
  let rest: Record<string, unknown> | null = null;
  for (const key of Object.keys(entry)) {
    const value = (entry as Record<string, unknown>)[key];
    if (value === undefined || key === 'id' || COLUMN_FIELDS.has(key)) continue;
    (rest ??= {})[key] = value;
  }
  return rest;
}

/** LOG_FIELDS as a set: logExtra runs for every entry a dispatcher records. */
const COLUMN_FIELDS: ReadonlySet<string> = new Set(LOG_FIELDS);

// The event catalogue (section 6.1): the one source for validating published events, for
// webhook subscriptions, for GET /events/types, the OpenAPI document, completions and docs.
import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import { MAX_ID } from './envelope.js';

export type FieldType = 'integer' | 'string';

export interface EventType {
  name: string;
  description: string;
  fields: Record<string, FieldType>;
  /**
   * Emitted by the daemon about its own deliveries: received only by the owner's endpoints that
   * name it (not by `*`, not by admins' endpoints), and not publishable through POST /events.
   */
  operational?: true;
}

export const EVENT_CATALOGUE: readonly EventType[] = [
  { name: 'site.created', description: 'website created', fields: { site_id: 'integer', domain: 'string' } },
  { name: 'site.deleted', description: 'website deleted', fields: { site_id: 'integer', domain: 'string' } },
  { name: 'domain.created', description: 'domain added', fields: { domain_id: 'integer', name: 'string' } },
  { name: 'domain.deleted', description: 'domain removed', fields: { domain_id: 'integer', name: 'string' } },
  { name: 'database.created', description: 'database created', fields: { database_id: 'integer', name: 'string' } },
  { name: 'database.deleted', description: 'database deleted', fields: { database_id: 'integer', name: 'string' } },
  { name: 'email.created', description: 'mailbox created', fields: { mailbox_id: 'integer', email: 'string' } },
  { name: 'ftp.created', description: 'FTP account created', fields: { ftp_account_id: 'integer', username: 'string' } },
  { name: 'backup.completed', description: 'backup completed', fields: { schedule_id: 'integer', name: 'string' } },
  { name: 'subscription.created', description: 'subscription created', fields: { subscription_id: 'integer', main_domain: 'string' } },
  { name: 'subscription.suspended', description: 'subscription suspended', fields: { subscription_id: 'integer', main_domain: 'string' } },
  { name: 'webhook.test', description: 'manually triggered by POST /webhooks/:id/test', fields: { message: 'string' } },
  {
    name: 'delivery.failed',
    description: "a delivery's last attempt failed (operational: only to the owner's endpoints that name it)",
    fields: { endpoint_id: 'integer', delivery_id: 'string', event: 'string', reason: 'string', attempts: 'integer' },
    operational: true,
  },
  {
    name: 'endpoint.disabled',
    description: 'the daemon disabled an endpoint after failed deliveries (operational: only to the owner\'s endpoints that name it)',
    fields: { endpoint_id: 'integer', url: 'string', reason: 'string' },
    operational: true,
  },
];

/**
 * Identifier fields (every integer field of the catalogue, and `owner_id`) are integers from 1
 * to 2^53 - 1: every JSON reader represents them exactly. Larger values arrive already rounded
 * (JSON.parse reads 9007199254740993 as 9007199254740992), so the check is for safe integers.
 */
export { MAX_ID } from './envelope.js';

export function isId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
}

export const EVENT_NAMES: readonly string[] = EVENT_CATALOGUE.map((e) => e.name);
const BY_NAME = new Map(EVENT_CATALOGUE.map((e) => [e.name, e]));

export function eventType(name: string): EventType | undefined {
  return BY_NAME.get(name);
}

/** The operational events' names (see EventType.operational). */
export const OPERATIONAL_EVENTS: readonly string[] = EVENT_CATALOGUE.filter((e) => e.operational).map((e) => e.name);

export function isOperational(name: string): boolean {
  return BY_NAME.get(name)?.operational === true;
}

/** The TypeBox schema of an event's `data` (all fields required, no others). */
export function eventDataSchema(type: EventType): TObject {
  const props: Record<string, TSchema> = {};
  for (const [field, kind] of Object.entries(type.fields)) {
    props[field] = kind === 'integer' ? Type.Integer({ minimum: 1, maximum: MAX_ID }) : Type.String({ minLength: 1, maxLength: 1000 });
  }
  return Type.Object(props, { additionalProperties: false, description: type.description });
}

/** Checks `data` against the catalogue; returns a message naming the field and rule, or null when valid. */
export function validateEventData(name: string, data: unknown): string | null {
  const type = eventType(name);
  if (!type) return `event: unknown event "${name}" (see GET /api/v1/events/types)`;
  if (!data || typeof data !== 'object' || Array.isArray(data)) return 'data: must be an object';
  const record = data as Record<string, unknown>;
  for (const [field, kind] of Object.entries(type.fields)) {
    const value = record[field];
    if (value === undefined || value === null) return `data.${field}: is required for ${name}`;
    if (kind === 'integer' && !isId(value)) {
      return `data.${field}: must be an integer from 1 to ${MAX_ID}`;
    }
    if (kind === 'string' && !(typeof value === 'string' && value.length >= 1 && value.length <= 1000)) {
      return `data.${field}: must be a non-empty string of at most 1000 characters`;
    }
  }
  for (const field of Object.keys(record)) {
    // Own properties only: `in` would let `constructor` or `toString` through as fields.
    if (!Object.hasOwn(type.fields, field)) return `data.${field}: is not a field of ${name}`;
  }
  return null;
}

/**
 * Parses a subscription list: `*` or comma-separated catalogue names (spaces around commas
 * ignored). Returns the normalised form, or an error message.
 */
export function normaliseEventList(input: string): { value: string } | { error: string } {
  const trimmed = input.trim();
  if (trimmed === '*') return { value: '*' };
  const names = trimmed.split(',').map((n) => n.trim());
  if (names.some((n) => n === '')) return { error: 'events: must be "*" or a comma-separated list of event names' };
  for (const name of names) {
    if (name === '*') return { error: 'events: "*" cannot be combined with event names' };
    if (!BY_NAME.has(name)) return { error: `events: unknown event "${name}" (see GET /api/v1/events/types)` };
  }
  return { value: [...new Set(names)].join(',') };
}

/** The exact bytes a receiver gets: `{ event, timestamp, data }`. */
export function payloadBody(event: string, timestamp: string, data: Record<string, unknown>): string {
  return JSON.stringify({ event, timestamp, data });
}

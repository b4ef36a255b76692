// The outgoing webhooks as OpenAPI 3.1 `webhooks` (one per catalogue event) and components,
// generated from the event catalogue so the document cannot disagree with what is sent.
import { Type, type TSchema } from '@sinclair/typebox';
import { EVENT_CATALOGUE, eventDataSchema, type EventType } from '../../shared/events.js';
import { payloadBody } from '../dispatcher/bus.js';
import { LOG_RETENTION } from '../../store/store.js';
import { ATTEMPT_TIMEOUT_MS, MAX_ATTEMPTS, MAX_RESPONSE_BYTES, RETRY_DELAY_MS, USER_AGENT } from '../../shared/webhook-protocol.js';
import { signature } from '../dispatcher/signer.js';

/** Facts of the delivery protocol (src/shared/webhook-protocol.ts), as the docs quote them. */
export const WEBHOOK_PROTOCOL = {
  userAgent: USER_AGENT,
  timeoutSeconds: ATTEMPT_TIMEOUT_MS / 1000,
  retryDelaySeconds: RETRY_DELAY_MS / 1000,
  attempts: MAX_ATTEMPTS,
  logEntriesKept: LOG_RETENTION,
  responseBytesKept: MAX_RESPONSE_BYTES,
} as const;

/** `site.created` → `SiteCreatedEvent`: the component name of that event's payload. */
export function eventComponentName(name: string): string {
  const pascal = name
    .split(/[._-]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');
  return `${pascal}Event`;
}

const EXAMPLE_VALUES: Record<string, unknown> = {
  domain: 'example.com',
  main_domain: 'example.com',
  name: 'shop_db',
  email: 'info@example.com',
  username: 'deploy',
  message: 'This is a test delivery from the panel',
};

/** An example `data` for an event: integers 42, strings from a small table of plausible values. */
export function exampleData(type: EventType): Record<string, unknown> {
  const data: Record<string, unknown> = {};
  for (const [field, kind] of Object.entries(type.fields)) {
    data[field] = kind === 'integer' ? 42 : (EXAMPLE_VALUES[field] ?? 'example');
  }
  return data;
}

export const EXAMPLE_TIMESTAMP = '2025-01-15T10:30:00Z';
/** The endpoint secret the examples are signed with. */
export const EXAMPLE_SECRET = 'example-endpoint-secret';

/** The exact body and headers a receiver gets for this event, signed with EXAMPLE_SECRET. */
export function exampleDelivery(type: EventType): { body: string; signature: string } {
  const body = payloadBody(type.name, EXAMPLE_TIMESTAMP, exampleData(type));
  return { body, signature: signature(body, EXAMPLE_SECRET) };
}

function payloadSchema(type: EventType): TSchema {
  return Type.Object(
    {
      event: Type.String({ enum: [type.name], description: 'Event name' }),
      timestamp: Type.String({ format: 'date-time', description: 'Time of the event, RFC 3339, UTC' }),
      data: eventDataSchema(type),
    },
    {
      additionalProperties: false,
      description: `Payload of \`${type.name}\` (${type.description})`,
      examples: [{ event: type.name, timestamp: EXAMPLE_TIMESTAMP, data: exampleData(type) }],
    },
  );
}

const SIGNATURE_DESCRIPTION =
  '`sha256=` followed by the lowercase hex HMAC-SHA256 of the raw request body, keyed with the endpoint `secret`. ' +
  'Compute it over the bytes as received (before any JSON parsing), compare in constant time, answer 403 on mismatch.';

/** Header parameters of every delivery (`Content-Type` is the request body's media type). */
function deliveryHeaders(type: EventType): object[] {
  return [
    {
      name: 'User-Agent',
      in: 'header',
      required: true,
      schema: { type: 'string', enum: [WEBHOOK_PROTOCOL.userAgent] },
    },
    {
      name: 'X-Webhook-Event',
      in: 'header',
      required: true,
      description: 'The event name, the same as `event` in the body',
      schema: { type: 'string', enum: [type.name] },
    },
    {
      name: 'X-Webhook-Signature',
      in: 'header',
      required: true,
      description: `${SIGNATURE_DESCRIPTION} The example is the signature of the example body with the secret \`${EXAMPLE_SECRET}\`.`,
      schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
      example: exampleDelivery(type).signature,
    },
    {
      name: 'X-Webhook-Signature-Previous',
      in: 'header',
      required: false,
      description:
        "Only during a secret rotation's overlap (POST /api/v1/webhooks/{id}/rotate-secret): the same signature keyed with the " +
        'previous secret. Accept the delivery when either header verifies with the secret you hold.',
      schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
    },
    {
      name: 'X-Webhook-Delivery',
      in: 'header',
      required: true,
      description: 'Identifies the delivery; the same on the retry, so receivers can deduplicate',
      schema: { type: 'string', format: 'uuid' },
      example: '3f1c2a9e-8b4d-4e2f-9a61-0c7d5e4b8a12',
    },
  ];
}

const DELIVERY_RULES =
  `Sent as an HTTP POST to every active endpoint subscribed to the event (by name or \`*\`). ` +
  `A 2xx answer within ${WEBHOOK_PROTOCOL.timeoutSeconds} s is a success. Any other answer, a time-out, a connection error or a redirect ` +
  `(redirects are not followed) fails the attempt; one retry follows ${WEBHOOK_PROTOCOL.retryDelaySeconds} s later with the same body, ` +
  `signature and \`X-Webhook-Delivery\`. After ${WEBHOOK_PROTOCOL.attempts} failed attempts the delivery is marked failed. ` +
  `Every attempt is logged (GET /api/v1/webhooks/{id}/deliveries keeps the last ${WEBHOOK_PROTOCOL.logEntriesKept}). ` +
  'The same event may arrive more than once: receivers should be idempotent.';

/** The `webhooks` object of the document and the schemas it references. */
export function webhookDocument(): { webhooks: Record<string, object>; schemas: Record<string, object> } {
  const schemas: Record<string, object> = {};
  const webhooks: Record<string, object> = {};
  for (const type of EVENT_CATALOGUE) {
    const component = eventComponentName(type.name);
    schemas[component] = plain(payloadSchema(type));
    webhooks[type.name] = {
      post: {
        tags: ['webhooks'],
        summary: `${type.name}: ${type.description}`,
        description: DELIVERY_RULES,
        operationId: `webhook_${type.name.replace(/\./g, '_')}`,
        // The panel sends no credentials: the receiver authenticates a delivery by its signature header.
        security: [],
        parameters: deliveryHeaders(type),
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: { $ref: `#/components/schemas/${component}` },
              example: { event: type.name, timestamp: EXAMPLE_TIMESTAMP, data: exampleData(type) },
            },
          },
        },
        responses: {
          '2XX': {
            description: `Accepted: answer within ${WEBHOOK_PROTOCOL.timeoutSeconds} s (the first ${WEBHOOK_PROTOCOL.responseBytesKept} bytes of the body are logged)`,
          },
          '403': { description: 'Signature mismatch: the receiver rejects the request (the attempt counts as failed)' },
          default: { description: `Any other status, or no answer within ${WEBHOOK_PROTOCOL.timeoutSeconds} s: the attempt failed and is retried once` },
        },
      },
    };
  }
  return { webhooks, schemas };
}

/** A TypeBox schema as plain JSON (its symbol keys dropped). */
function plain(schema: TSchema): object {
  return JSON.parse(JSON.stringify(schema)) as object;
}

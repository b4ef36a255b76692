// Schemas of webhook endpoints and their delivery log, shared by the daemon (validation,
// serialisation, docs), the CLI and the TUI (types). The secret is accepted, never returned.
import { Type, type Static } from '@sinclair/typebox';
import { Id, Timestamp } from '../envelope.js';
import { PageFields } from './pages.js';
import { MAX_IN_FLIGHT_LIMIT, MAX_IN_FLIGHT_PER_ENDPOINT, RATE_LIMIT_MAX, RETRY_DELAY_MAX_SECONDS, RETRY_SCHEDULE_MAX_ENTRIES, RETRY_SCHEDULE_MAX_TOTAL_SECONDS } from '../webhook-protocol.js';

const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'Absolute https: URL the events are POSTed to' });
const Secret = Type.String({ minLength: 1, maxLength: 1024, description: 'Key of the HMAC-SHA256 signature; never returned' });
const Events = Type.String({
  minLength: 1,
  maxLength: 2000,
  description: '`*` or comma-separated event names from GET /events/types (spaces around commas ignored)',
});

const SignatureScheme = Type.Union([Type.Literal('seed'), Type.Literal('standard-webhooks')], {
  description:
    '`seed` (default): X-Webhook-Signature only. `standard-webhooks`: also webhook-id, webhook-timestamp and ' +
    'webhook-signature (`v1,<base64>`) as the Standard Webhooks specification defines; the secret must then be ' +
    '`whsec_` and the base64 of 24 to 64 bytes',
});

const HeaderValue = Type.String({ maxLength: 4096, description: 'Sent as given; no CR, LF or other control characters' });
const Headers = Type.Record(Type.String({ minLength: 1, maxLength: 256 }), HeaderValue, {
  maxProperties: 10,
  description:
    'Up to 10 extra request headers `{ name: value }` sent with every attempt (tests and redeliveries too). Reserved names ' +
    '(content-type, content-length, host, user-agent, connection, transfer-encoding, x-webhook-*, webhook-*) and CR/LF in a ' +
    'value are 422. Values are kept like the secret and never returned: answers show them as `********`',
});
const HeadersPatch = Type.Union(
  [
    Type.Record(Type.String({ minLength: 1, maxLength: 256 }), Type.Union([HeaderValue, Type.Null()]), { maxProperties: 10 }),
    Type.Null(),
  ],
  { description: 'Merged into the endpoint\'s headers: a name with a value sets it, a name with null removes it; `null` removes them all' },
);
const Paused = Type.Boolean({
  description:
    'Default false. true: matching events are kept for the endpoint (durably) and not attempted; false again: the kept ' +
    'deliveries go in publish order, then new ones. Unlike `active: false`, nothing is dropped',
});
const RetrySchedule = Type.Array(Type.Integer({ minimum: 1, maximum: RETRY_DELAY_MAX_SECONDS }), {
  maxItems: RETRY_SCHEDULE_MAX_ENTRIES,
  description:
    `Whole seconds before each retry, in order: \`[1, 1, 2]\` retries 1 s, 1 s and 2 s after each failed attempt (four attempts at most). ` +
    `Default \`[2]\` (one retry after 2 s); \`[]\`: no retry. At most ${RETRY_SCHEDULE_MAX_ENTRIES} entries of 1 to ${RETRY_DELAY_MAX_SECONDS}, ` +
    `${RETRY_SCHEDULE_MAX_TOTAL_SECONDS} in all`,
});
const MaxInFlight = Type.Integer({
  minimum: 1,
  maximum: MAX_IN_FLIGHT_LIMIT,
  description: `Attempts at once to this endpoint (default ${MAX_IN_FLIGHT_PER_ENDPOINT})`,
});
const RateLimit = Type.Union([Type.Integer({ minimum: 1, maximum: RATE_LIMIT_MAX }), Type.Null()], {
  description: `Attempts per second to this endpoint at most, over every daemon (1 to ${RATE_LIMIT_MAX}); null (the default): no limit`,
});

export const EndpointHealth = Type.Object(
  {
    consecutive_failures: Type.Integer({ minimum: 0, description: 'Failed deliveries in a row (every attempt failed), since the endpoint was last enabled' }),
    last_success_at: Type.Union([Timestamp, Type.Null()]),
    last_failure_at: Type.Union([Timestamp, Type.Null()]),
    last_failure_reason: Type.Union([Type.String(), Type.Null()]),
    success_rate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()], {
      description: 'Successful attempts / attempts among the last 100; null without attempts',
    }),
    next_attempt_at: Type.Union([Timestamp, Type.Null()], { description: "When the endpoint's next retry is due (the earliest of its pending retries); null when none is" }),
  },
  { description: "Read from the endpoint's delivery log (its last 100 attempts)" },
);
export type EndpointHealth = Static<typeof EndpointHealth>;

export const WebhookEndpoint = Type.Object(
  {
    id: Type.Integer(),
    user_id: Type.Integer({ description: 'The owner' }),
    url: Type.String(),
    events: Type.String({ description: '`*` or normalised comma-separated event names' }),
    active: Type.Boolean(),
    signature: SignatureScheme,
    health: EndpointHealth,
    created_at: Timestamp,
    updated_at: Timestamp,
    headers: Type.Optional(
      Type.Record(Type.String(), Type.String(), { description: 'The custom headers, each value shown as `********`; absent without any' }),
    ),
    previous_secret_expires_at: Type.Optional(
      Type.String({
        format: 'date-time',
        description: "During a secret rotation's overlap: when the previous secret stops signing (X-Webhook-Signature-Previous); absent otherwise",
      }),
    ),
    paused: Type.Boolean({ description: 'While true, matching events are kept for the endpoint and not attempted; sent in publish order once false again' }),
    paused_deliveries: Type.Integer({ minimum: 0, description: 'Deliveries kept while paused (0 when not paused)' }),
    retry_schedule: RetrySchedule,
    max_in_flight: MaxInFlight,
    rate_limit_per_second: RateLimit,
  },
  { $id: 'WebhookEndpoint' },
);
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

export const CreateWebhookBody = Type.Object(
  {
    url: Url,
    secret: Secret,
    events: Events,
    active: Type.Optional(Type.Boolean({ default: true, description: 'Default true' })),
    signature: Type.Optional(SignatureScheme),
    headers: Type.Optional(Headers),
    paused: Type.Optional(Paused),
    retry_schedule: Type.Optional(RetrySchedule),
    max_in_flight: Type.Optional(MaxInFlight),
    rate_limit_per_second: Type.Optional(RateLimit),
  },
  { additionalProperties: false },
);
export type CreateWebhookBody = Static<typeof CreateWebhookBody>;

export const UpdateWebhookBody = Type.Object(
  {
    url: Type.Optional(Url),
    secret: Type.Optional(Type.String({ ...Secret, description: 'A new secret (rotation); later attempts, retries included, are signed with it' })),
    events: Type.Optional(Events),
    active: Type.Optional(Type.Boolean({ description: 'Enabling an inactive endpoint resets its count of failed deliveries in a row' })),
    signature: Type.Optional(SignatureScheme),
    headers: Type.Optional(HeadersPatch),
    paused: Type.Optional(Paused),
    retry_schedule: Type.Optional(RetrySchedule),
    max_in_flight: Type.Optional(MaxInFlight),
    rate_limit_per_second: Type.Optional(RateLimit),
  },
  { additionalProperties: false, description: 'Any of the fields; the others stay as they are' },
);
export type UpdateWebhookBody = Static<typeof UpdateWebhookBody>;

export const ListWebhooksQuery = Type.Object(
  {
    user_id: Type.Optional(Id({ description: "Admins: that user's endpoints" })),
    all: Type.Optional(Type.Boolean({ description: "Admins: every user's endpoints" })),
    ...PageFields,
  },
  { additionalProperties: false },
);
export type ListWebhooksQuery = Static<typeof ListWebhooksQuery>;

export const DeliveryEntry = Type.Object(
  {
    id: Type.Integer({ description: 'Unique id of the attempt' }),
    event: Type.String(),
    payload: Type.Unknown({ description: 'The JSON payload that was sent: { event, timestamp, data }' }),
    status_code: Type.Integer({ description: 'HTTP status of the answer; 0 on connection error, refusal or time-out' }),
    response: Type.String({ description: 'At most 4096 bytes of the answer body, or what went wrong' }),
    success: Type.Boolean(),
    duration_ms: Type.Integer(),
    created_at: Timestamp,
    attempt: Type.Integer({ minimum: 1, maximum: RETRY_SCHEDULE_MAX_ENTRIES + 1, description: "Which attempt of the delivery: 1, then each retry of the endpoint's schedule" }),
    delivery_id: Type.String({ format: 'uuid', description: 'X-Webhook-Delivery, the same on both attempts' }),
    endpoint_id: Type.Integer(),
    request_headers: Type.Record(Type.String(), Type.String(), { description: 'The headers sent' }),
    reason: Type.Union([Type.String(), Type.Null()], {
      description:
        'Why a failed attempt failed, in a few words: `HTTP 500`, `timeout after 10 s`, `connection refused`, ' +
        '`TLS: self-signed certificate`, `redirect not followed (HTTP 301)`, `blocked: private address 10.0.0.5`, `DNS: … not found`; null on success',
    }),
    daemon: Type.Optional(
      Type.String({ description: 'The daemon that made the attempt, `hostname:pid` (several daemons share a PostgreSQL store); absent on older entries' }),
    ),
    next_attempt_at: Type.Optional(
      Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
        description: "On a failed attempt: when the delivery's next attempt is due, or null when none is left (the delivery failed); absent on a success",
      }),
    ),
  },
  { $id: 'DeliveryEntry' },
);
export type DeliveryEntry = Static<typeof DeliveryEntry>;

export const DeliveriesQuery = Type.Object(
  {
    success: Type.Optional(Type.Boolean({ description: 'Only successful (true) or failed (false) attempts' })),
    event: Type.Optional(Type.String({ minLength: 1, maxLength: 2000, description: 'Only these events (a name, or comma-separated names)' })),
    since: Type.Optional(Type.String({ format: 'date-time', description: 'Only attempts made at or after this time (RFC 3339)' })),
    ...PageFields,
  },
  { additionalProperties: false },
);
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;

export const TestWebhookBody = Type.Object(
  {
    message: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: "The test payload's data.message" })),
  },
  { additionalProperties: false, description: 'Optional; the body may be left out' },
);
export type TestWebhookBody = Static<typeof TestWebhookBody>;

export const RedeliverParams = Type.Object({
  id: Id({ description: 'Endpoint id' }),
  entry_id: Id({ description: 'Delivery log entry id' }),
});
export type RedeliverParams = Static<typeof RedeliverParams>;

export const StreamQuery = Type.Object(
  { endpoint_id: Type.Optional(Id({ description: "Only this endpoint's entries" })) },
  { additionalProperties: false },
);
export type StreamQuery = Static<typeof StreamQuery>;

export const RecoverBody = Type.Object(
  {
    since: Type.String({ format: 'date-time', description: 'Start of the window (RFC 3339)' }),
    until: Type.Optional(Type.String({ format: 'date-time', description: 'End of the window (RFC 3339); default now' })),
  },
  { additionalProperties: false },
);
export type RecoverBody = Static<typeof RecoverBody>;

export const RecoverResult = Type.Object({
  count: Type.Integer({ minimum: 0, description: 'Deliveries queued again' }),
});

export const DeletedWebhook = Type.Object({ id: Type.Integer() });

export const RotateSecretBody = Type.Object(
  {
    secret: Type.Optional(Type.String({ ...Secret, description: 'The new secret; left out, the daemon generates one and answers it (once)' })),
    overlap_seconds: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 604800,
        default: 86400,
        description: 'How long the previous secret still signs (X-Webhook-Signature-Previous) beside the new one; 0 ends it now. Default 86400 (24 h)',
      }),
    ),
  },
  { additionalProperties: false, description: 'Optional; the body may be left out' },
);
export type RotateSecretBody = Static<typeof RotateSecretBody>;

export const RotatedSecret = Type.Object({
  secret: Type.Optional(Type.String({ description: 'The generated secret, shown this once; absent when the body gave one' })),
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], {
    description: 'When the previous secret stops signing and is dropped from the store; null with an overlap of 0',
  }),
});
export type RotatedSecret = Static<typeof RotatedSecret>;

// The parts of the OpenAPI document that do not come from a single route: the introduction,
// security schemes, tag descriptions, error examples and operation ids. Everything is derived
// from the registries (errors, settings, events) rather than copied, so it follows them.
import { API_ERRORS } from '../../shared/errors.js';
import { DEFAULT_SETTINGS } from '../../shared/settings.js';
import { WEBHOOK_PROTOCOL } from './webhooks.js';

export const DOCS_PREFIX = '/api/docs';
export const API_PREFIX = '/api/v1';

export const SECURITY_SCHEMES = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    description:
      'A JWT from `POST /api/v1/auth/login`, or an API key (`ncp_` + 64 hex characters): `Authorization: Bearer <token>`. ' +
      'Creating, listing and deleting API keys (and 2FA changes) require a JWT.',
  },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'X-API-Key',
    description: 'An API key (`ncp_…`) in the `X-API-Key` header, as an alternative to the Bearer header.',
  },
} as const;

/** Descriptions of the operation tags; a tag used by a route but missing here fails the docs test. */
export const TAG_DESCRIPTIONS: Record<string, string> = {
  health: 'Liveness and version, without authentication',
  auth: 'Logging in, the calling user, password reset and two-factor authentication',
  'api-keys': 'Long-lived API keys for automation (managed with a JWT only)',
  webhooks: 'Webhook endpoints, their delivery logs, test deliveries, redelivery and the live delivery stream',
  events: 'The event catalogue and publishing events',
  sites: 'Websites of a subscription',
  subscriptions: 'Hosting subscriptions (the context of customer endpoints)',
  admin: 'Administration: users, settings, subscriptions, publishing events (role `admin`)',
};

/** What each HTTP status means in this API (description section 7, CONTRACT section 3). */
export const STATUS_MEANING: Record<number, string> = {
  200: 'Success',
  201: 'Created',
  400: 'Missing or invalid parameters: malformed JSON, a missing required field or a wrong type',
  401: 'Not authenticated: no credentials, bad credentials, an expired or deleted key, an expired JWT',
  403: 'Role insufficient, an API key where a JWT is required, or a resource of another user',
  404: 'Resource not found',
  405: 'Method not allowed: the path exists, the method does not (`Allow` lists those it has)',
  408: 'The request was not received completely in time',
  409: 'Conflict, for example a duplicate',
  413: 'Request body larger than 1 MiB',
  415: 'Unsupported media type (send `Content-Type: application/json`)',
  422: 'Well-formed but invalid value (the message names the field and the rule)',
  429: 'Too many requests or login attempts; wait `Retry-After` seconds',
  431: 'Request line and headers larger than 16 KiB',
  500: 'Internal server error',
  503: 'Temporarily unavailable (storage failure, the daemon is shutting down, or not ready: see `/health/ready`): try again after `Retry-After` seconds',
};

/** The `error` strings that can accompany a status, from the one error registry. */
export function errorsForStatus(status: number): string[] {
  return Object.values(API_ERRORS)
    .filter((e) => e.status === status)
    .map((e) => e.error);
}

const EXAMPLE_MESSAGES: Record<string, string> = {
  'bad request': 'name: is required',
  'invalid json': 'request body is not valid JSON',
  'not authenticated': 'authentication required: send Authorization: Bearer <JWT or API key>',
  'invalid credentials': 'email or password is wrong',
  '2fa_required': 'a two-factor code is required: send totp_code from your authenticator app',
  'invalid totp code': 'the two-factor code is wrong, expired or already used',
  'invalid token': 'the reset token is unknown, already used or expired: request a new one',
  forbidden: 'this endpoint requires the admin role',
  'jwt required': 'this endpoint requires a JWT from /auth/login, not an API key',
  'not found': 'webhook 7 not found',
  'method not allowed': 'TRACE is not allowed on /api/v1/health; allowed: GET, HEAD',
  'request timeout': 'the request was not received completely in time',
  'request header fields too large': 'the request line and headers exceed 16 KiB',
  conflict: 'a user with email jane@example.com already exists',
  'validation failed': 'name: must NOT have more than 100 characters',
  'rate limit exceeded': 'too many requests: at most 120 per minute here; retry in 42 s',
  too_many_attempts: 'too many failed attempts from your address: try again in 14 minutes',
  'storage unavailable': 'the change could not be saved; nothing was changed. Try again later.',
  'internal error': 'internal server error',
  'not ready': 'not ready: store: the database does not answer (the PostgreSQL store is unavailable) (request id 3f1c…)',
};

/** Named examples of the error envelope for a status, one per `error` string it can carry. */
export function errorExamples(status: number): Record<string, { summary: string; value: object }> {
  const examples: Record<string, { summary: string; value: object }> = {};
  for (const error of errorsForStatus(status)) {
    const data =
      error === 'too_many_attempts'
        ? { remaining_seconds: 840 }
        : error === 'not ready'
          ? { status: 'not ready', checks: { store: 'the database does not answer (the PostgreSQL store is unavailable)', dispatcher: 'ok' } }
          : null;
    examples[error.replace(/[^A-Za-z0-9]+/g, '_')] = {
      summary: error,
      value: { data, error, message: EXAMPLE_MESSAGES[error] ?? error },
    };
  }
  return examples;
}

function errorTable(): string {
  const statuses = [...new Set(Object.values(API_ERRORS).map((e) => e.status))].sort((a, b) => a - b);
  const rows = statuses.map(
    (status) => `| ${status} | ${errorsForStatus(status).map((e) => `\`${e}\``).join(', ')} | ${STATUS_MEANING[status] ?? ''} |`,
  );
  return ['| Status | `error` | Meaning |', '|---|---|---|', ...rows].join('\n');
}

/** The introduction shown at the top of /api/docs. */
export function apiDescription(): string {
  const s = DEFAULT_SETTINGS;
  return `The panel's JSON REST API. Every path starts with \`${API_PREFIX}\`; bodies are JSON
(\`Content-Type: application/json\`, at most 1 MiB).

## Authentication

1. \`POST ${API_PREFIX}/auth/login\` with \`email\` and \`password\` (and \`totp_code\` when 2FA is on) answers a
   JWT (HS256, valid ${s.jwt_ttl_seconds / 3600} hours by default; an admin can change \`jwt_ttl_seconds\`).
2. With that JWT, \`POST ${API_PREFIX}/auth/api-keys\` creates a long-lived API key (\`ncp_\` + 64 hex characters).
   The full key is returned once; only its SHA-256 hash is stored.
3. Send either as \`Authorization: Bearer <token>\`; an API key may also go in \`X-API-Key\`.
   Managing API keys and 2FA requires a JWT (an API key there answers 403 \`jwt required\`).

In this page, **Authorize** takes a JWT or an API key under \`bearer\`, or an API key under \`apiKey\`.

## Envelope and errors

Every answer, errors included, is \`{ "data": …, "error": null | string, "message": string }\`.
On error \`data\` is null (except \`too_many_attempts\`: \`{ "remaining_seconds": n }\`) and \`error\` is one of:

${errorTable()}

The envelope answers requests refused before they reach an operation too:

- A path of this document with a method it does not list: 405 \`method not allowed\`, with an \`Allow\`
  header naming the methods the path has (\`GET\` includes \`HEAD\`).
- A request HTTP itself refuses: 400 \`bad request\` for a URL whose %-escapes are broken, a header
  with a control character, an invalid \`Content-Length\`, \`Content-Length\` together with
  \`Transfer-Encoding\`, or HTTP/1.1 without \`Host\`; 431 when the request line and headers exceed 16 KiB;
  408 when the request does not arrive in time. When the request could not be parsed the answer
  carries \`Connection: close\` and the connection ends.

## Lists

Every list takes \`limit\` (1–1000, default 1000) and \`after\` (an id: the page starts past it) and
answers in id order (delivery logs newest first, where \`after\` means older). When a further page
exists the answer carries \`Link: </api/v1/…?after=N>; rel="next"\`; follow it until no \`Link\` comes.

## Limits

- Request rates (settings \`rate_limit_*\`): login ${s.rate_limit_login_per_minute}/min per IP, password reset
  ${s.rate_limit_reset_per_minute}/min per IP, everything else ${s.rate_limit_user_per_minute}/min per user. Answers carry
  \`X-RateLimit-Limit\`, \`X-RateLimit-Remaining\` and \`X-RateLimit-Reset\`; over the limit: 429 \`rate limit exceeded\`.
- Login lockout: ${s.login_max_attempts} failed logins (or reset attempts) from one IP within ${s.login_lockout_minutes} minutes lock
  that IP for ${s.login_lockout_minutes} minutes: 429 \`too_many_attempts\`.
- Second factor: ${s.totp_max_failures} wrong two-factor codes for one account within ${s.totp_lockout_minutes} minutes, from any addresses,
  lock that account's second factor for ${s.totp_lockout_minutes} minutes (settings \`totp_max_failures\`, \`totp_lockout_minutes\`):
  429 \`too_many_attempts\`, even with the right code. \`POST /admin/unlock\` ends lockouts.
- Every 429 carries \`Retry-After\` (seconds). \`rate_limit_mode\` selects \`requests\`, \`lockout\` or \`both\` (default).

## Webhooks

Deliveries are described under **Webhooks** below (one entry per event): a POST of
\`{ event, timestamp, data }\` with \`User-Agent: ${WEBHOOK_PROTOCOL.userAgent}\`, \`X-Webhook-Event\`,
\`X-Webhook-Delivery\` (a uuid, the same on the retry) and \`X-Webhook-Signature: sha256=<hex>\`, the HMAC-SHA256 of the raw
body keyed with the endpoint's secret. Answer 2xx within ${WEBHOOK_PROTOCOL.timeoutSeconds} s; otherwise one retry follows
after ${WEBHOOK_PROTOCOL.retryDelaySeconds} s.

The integrator guide (\`docs/integrators.md\` in the panelctl repository) has worked examples.`;
}

type Operation = {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: Array<{ in?: string; name?: string }>;
  responses?: Record<string, { description?: string; headers?: Record<string, object>; content?: Record<string, { schema?: unknown; example?: unknown; examples?: unknown }> }>;
};
type Document = {
  components?: { schemas?: Record<string, unknown>; headers?: Record<string, unknown> };
  paths?: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, Operation>>;
  tags?: Array<{ name: string; description?: string }>;
};

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace']);

/** `post` `/api/v1/webhooks/{id}/test` → `post_webhooks_id_test`. */
export function operationIdFor(method: string, path: string): string {
  const rest = path.startsWith(API_PREFIX) ? path.slice(API_PREFIX.length) : path;
  const words = rest
    .split('/')
    .filter(Boolean)
    .map((segment) => segment.replace(/[{}]/g, '').replace(/[^A-Za-z0-9]+/g, '_'));
  return [method, ...words].join('_');
}

/** A paginated list's 200 answer (CONTRACT section 7): where the next page is, as GitHub sends it. */
const LINK = {
  description: 'The next page, when there is one: `<URL>; rel="next"` (a relative URL; absent on the last page)',
  schema: { type: 'string' },
};

const RETRY_AFTER = {
  description: 'Seconds to wait before trying again (always sent with 429; with 503 when the wait is known)',
  schema: { type: 'integer', minimum: 0 },
};

/** Headers of the request-rate limiter (variant A): on every answer of a counted route unless `rate_limit_mode` is `lockout`. */
export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { description: 'Requests allowed in the current one-minute window', schema: { type: 'integer', minimum: 1 } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window', schema: { type: 'integer', minimum: 0 } },
  'X-RateLimit-Reset': { description: 'Unix time (seconds) when the window resets', schema: { type: 'integer' } },
} as const;

export interface CompleteOptions {
  /** Response schemas that become a `$ref` to the component of that name where they occur. */
  shared?: Record<string, object>;
  /** Whether the request limiter counts the operation at this path (its answers carry X-RateLimit-*). */
  limited?: (path: string) => boolean;
}

/** JSON with object keys sorted, to compare schemas regardless of key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

/**
 * Completes what @fastify/swagger generated from the routes: operation ids, response
 * descriptions, named error examples, `Retry-After` on 429 and 503, the limiter's headers, and
 * the tags in use. Response schemas equal to one of `shared` (e.g. the error envelope, which
 * @fastify/swagger inlines at the top of a response) become a `$ref` to that component.
 */
export function completeDocument<T extends Document>(doc: T, { shared = {}, limited = () => false }: CompleteOptions = {}): T {
  doc.components ??= {};
  const sharedByForm = new Map(Object.entries(shared).map(([name, schema]) => [canonical(schema), name]));
  const used = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (!METHODS.has(method)) continue;
      operation.operationId ??= operationIdFor(method, path);
      for (const tag of operation.tags ?? []) used.add(tag);
      const counted = limited(path);
      const paginated = operation.parameters?.some((p) => p.in === 'query' && p.name === 'after') ?? false;
      for (const [code, response] of Object.entries(operation.responses ?? {})) {
        const status = Number(code);
        const meaning = STATUS_MEANING[status];
        if (meaning && (!response.description || response.description === 'Default Response' || status >= 400)) {
          const errors = status >= 400 ? errorsForStatus(status) : [];
          response.description = errors.length ? `${meaning}. \`error\`: ${errors.map((e) => `\`${e}\``).join(', ')}` : meaning;
        }
        for (const media of Object.values(response.content ?? {})) {
          const name = media.schema ? sharedByForm.get(canonical(media.schema)) : undefined;
          if (!name) continue;
          doc.components!.schemas ??= {};
          doc.components.schemas[name] = shared[name];
          media.schema = { $ref: `#/components/schemas/${name}` };
        }
        if (status >= 400) {
          const media = response.content?.['application/json'];
          if (media && !media.example && !media.examples) media.examples = errorExamples(status);
        }
        if (paginated && status === 200) response.headers = { Link: { $ref: '#/components/headers/Link' }, ...response.headers };
        if (status === 429 || status === 503) response.headers = { 'Retry-After': { $ref: '#/components/headers/Retry-After' }, ...response.headers };
        if (counted) {
          const refs = Object.fromEntries(Object.keys(RATE_LIMIT_HEADERS).map((name) => [name, { $ref: `#/components/headers/${name}` }]));
          response.headers = { ...response.headers, ...refs };
        }
      }
    }
  }
  doc.components.headers = { 'Retry-After': RETRY_AFTER, Link: LINK, ...RATE_LIMIT_HEADERS, ...doc.components.headers };
  for (const item of Object.values(doc.webhooks ?? {})) {
    for (const operation of Object.values(item)) for (const tag of operation.tags ?? []) used.add(tag);
  }
  // Known tags in their listed order, then any others (the docs test requires a description).
  const order = Object.keys(TAG_DESCRIPTIONS);
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  const declared = new Map((doc.tags ?? []).map((t) => [t.name, t]));
  doc.tags = [...used]
    .sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
    .map((name) => declared.get(name) ?? { name, description: TAG_DESCRIPTIONS[name] });
  return doc;
}

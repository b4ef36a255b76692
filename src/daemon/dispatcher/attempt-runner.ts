// One attempt of one delivery: the request (signed headers, the sender), its outcome (the
// delivery's next state under the endpoint's retry schedule) and its log entry with the reason.
// Nothing here is stored: the recorder writes what this answers.
import { hostname } from 'node:os';
import type { DeliveryOutcome } from '../../store/store.js';
import type { DeliveryLogEntry, DeliveryRecord, WebhookRecord } from '../../store/types.js';
import type { Clock } from '../services.js';
import { deliveryHeaders, loggedHeaders } from './headers.js';
import type { Answer, EndpointPolicy } from './scheduler.js';
import type { AttemptResult, WebhookSender } from './sender.js';

/** What sends an attempt's request: the real WebhookSender, or a test's fake. */
export type Sender = Pick<WebhookSender, 'send' | 'close'>;

export type NewLogEntry = Omit<DeliveryLogEntry, 'id'>;

/** Which daemon made an attempt, as its log entry says: with several daemons on one database, the one to look at. */
const DAEMON = `${hostname()}:${process.pid}`;

export interface AttemptContext {
  sender: Sender;
  clock: Clock;
  /** Whether private-network targets are allowed now (answered at once where it is known at once). */
  allowPrivate: () => boolean | Promise<boolean>;
}

/** What an attempt came to. */
export type AttemptRun =
  /** Made: the answer (or its absence), the delivery's new state and its log entry. */
  | { kind: 'made'; result: AttemptResult; answer: Answer; outcome: DeliveryOutcome; entry: NewLogEntry }
  /** Not made: the endpoint was deleted, or deactivated after the event was queued; the delivery is cancelled. */
  | { kind: 'cancelled'; why: 'endpoint deleted' | 'endpoint deactivated'; outcome: DeliveryOutcome };

/**
 * Makes one attempt of `delivery` to `endpoint` (undefined: deleted), signed with the secret
 * read just before (so a rotation applies to retries too); resolves once the exchange is over.
 */
export async function runAttempt(delivery: DeliveryRecord, endpoint: WebhookRecord | undefined, policy: EndpointPolicy, context: AttemptContext): Promise<AttemptRun> {
  if (!endpoint || (!endpoint.active && !delivery.manual)) {
    return {
      kind: 'cancelled',
      why: endpoint ? 'endpoint deactivated' : 'endpoint deleted',
      outcome: { id: delivery.id, state: 'cancelled', attempts: delivery.attempts, next_attempt_at: delivery.next_attempt_at },
    };
  }
  const attempt = delivery.attempts + 1;
  const headers = deliveryHeaders(endpoint, delivery, context.clock());
  const createdAt = new Date(context.clock()).toISOString();
  const allowPrivate = context.allowPrivate();
  const result = await context.sender.send(endpoint.url, headers, delivery.body, typeof allowPrivate === 'boolean' ? allowPrivate : await allowPrivate);
  const retryDelay = policy.retryDelaysMs[attempt - 1];
  const state: DeliveryRecord['state'] = result.success ? 'succeeded' : retryDelay === undefined ? 'failed' : 'pending';
  const nextAttemptAt = state === 'pending' ? context.clock() + retryDelay! : null;
  return {
    kind: 'made',
    result,
    answer: result.success ? 'success' : result.status_code === 0 ? 'no answer' : 'failure',
    outcome: {
      id: delivery.id,
      attempts: attempt,
      state,
      next_attempt_at: nextAttemptAt ?? delivery.next_attempt_at,
    },
    entry: {
      event: delivery.event,
      payload: parsePayload(delivery.body),
      status_code: result.status_code,
      response: result.response,
      success: result.success,
      duration_ms: result.duration_ms,
      created_at: createdAt,
      attempt,
      delivery_id: delivery.id,
      endpoint_id: endpoint.id,
      request_headers: loggedHeaders(headers, endpoint),
      reason: result.reason,
      daemon: DAEMON,
      // On a failed attempt: when the retry is due, or null when none is left (what `watch` and
      // `webhooks test` read to tell a pending retry from a failed delivery).
      ...(result.success ? {} : { next_attempt_at: nextAttemptAt === null ? null : new Date(nextAttemptAt).toISOString() }),
    },
  };
}

/**
 * The parsed bodies of recent events, by body: an event's deliveries share one body (the fan-out
 * to each endpoint), so it is parsed once for all their log entries, which share the (never
 * modified) payload. Only small bodies are kept, so the map stays small whatever events carry.
 */
const parsed = new Map<string, unknown>();
const PARSED_MOST = 256;
const PARSED_BODY_MOST = 16 * 1024;

function parsePayload(body: string): unknown {
  const known = parsed.get(body);
  if (known !== undefined) return known;
  let payload: unknown;
  try {
    payload = JSON.parse(body);
  } catch {
    payload = body;
  }
  if (body.length <= PARSED_BODY_MOST) {
    if (parsed.size >= PARSED_MOST) parsed.delete(parsed.keys().next().value!);
    parsed.set(body, payload);
  }
  return payload;
}

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
  /** Whether private-network targets are allowed now. */
  allowPrivate: () => Promise<boolean>;
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
  const result = await context.sender.send(endpoint.url, headers, delivery.body, await context.allowPrivate());
  const retryDelay = policy.retryDelaysMs[attempt - 1];
  const state: DeliveryRecord['state'] = result.success ? 'succeeded' : retryDelay === undefined ? 'failed' : 'pending';
  return {
    kind: 'made',
    result,
    answer: result.success ? 'success' : result.status_code === 0 ? 'no answer' : 'failure',
    outcome: {
      id: delivery.id,
      attempts: attempt,
      state,
      next_attempt_at: state === 'pending' ? context.clock() + retryDelay! : delivery.next_attempt_at,
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
    },
  };
}

function parsePayload(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return body;
  }
}

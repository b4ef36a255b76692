// Where deliveries to `listen:<session>` endpoints go: the open `panelctl listen` sessions. A
// session's endpoint is a real endpoint record, so the bus queues, the dispatcher attempts,
// retries and logs its deliveries like any other; only the last step differs: instead of
// opening a connection (the daemon gets no exception from the SSRF guard), the attempt is
// pushed to the CLI over its event stream, and the CLI reports how the request it made went.
import { truncateUtf8, type AttemptResult, type LocalTargets } from './sender.js';
import { ATTEMPT_TIMEOUT_MS, MAX_RESPONSE_BYTES } from '../../shared/webhook-protocol.js';
import { statusReason, timeoutReason } from './failure-reason.js';

export const LISTEN_SCHEME = 'listen:';

/** What the CLI reports about one forwarded attempt. */
export interface ListenReport {
  delivery_id: string;
  /** The receiver's status; 0 when it gave no answer. */
  status_code: number;
  duration_ms: number;
  /** The start of the answer's body. */
  response?: string;
  /** Why no answer came (`connection refused`), as the CLI saw it. */
  error?: string;
}

/** What the CLI gets for each attempt: the exact request an endpoint would get. */
export interface ListenPush {
  delivery_id: string;
  event: string;
  headers: Record<string, string>;
  body: string;
}

interface Session {
  id: string;
  endpointId: number;
  userId: number;
  /** Writes one SSE frame to the session's stream. */
  push(frame: string): void;
  waiting: Map<string, (report: ListenReport) => void>;
}

export function listenUrl(sessionId: string): string {
  return `${LISTEN_SCHEME}${sessionId}`;
}

export class ListenHub implements LocalTargets {
  readonly #sessions = new Map<string, Session>();

  constructor(private readonly timeoutMs = ATTEMPT_TIMEOUT_MS) {}

  open(session: Omit<Session, 'waiting'>): void {
    this.#sessions.set(session.id, { ...session, waiting: new Map() });
  }

  /** Ends a session: attempts waiting for it fail now rather than at their time-out. */
  close(sessionId: string): void {
    const session = this.#sessions.get(sessionId);
    if (!session) return;
    this.#sessions.delete(sessionId);
    for (const [deliveryId, resolve] of session.waiting) {
      resolve({ delivery_id: deliveryId, status_code: 0, duration_ms: 0, error: 'listen session ended' });
    }
  }

  get(sessionId: string): { endpointId: number; userId: number } | undefined {
    return this.#sessions.get(sessionId);
  }

  handles(url: string): boolean {
    return url.startsWith(LISTEN_SCHEME);
  }

  async send(url: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const session = this.#sessions.get(url.slice(LISTEN_SCHEME.length));
    const failed = (reason: string): AttemptResult => ({
      status_code: 0,
      response: reason,
      success: false,
      duration_ms: Math.round(performance.now() - started),
      reason,
    });
    if (!session) return failed('listen session ended');
    const deliveryId = headers['X-Webhook-Delivery'];
    const push: ListenPush = { delivery_id: deliveryId, event: headers['X-Webhook-Event'], headers, body };
    const report = await new Promise<ListenReport | null>((resolve) => {
      const timer = setTimeout(() => {
        session.waiting.delete(deliveryId);
        resolve(null);
      }, this.timeoutMs);
      session.waiting.set(deliveryId, (value) => {
        clearTimeout(timer);
        session.waiting.delete(deliveryId);
        resolve(value);
      });
      session.push(`event: webhook\ndata: ${JSON.stringify(push)}\n\n`);
    });
    if (!report) return failed(timeoutReason(this.timeoutMs));
    const status = report.status_code;
    const response = truncateUtf8(Buffer.from(report.response ?? report.error ?? '', 'utf8'), MAX_RESPONSE_BYTES);
    const reason = status ? statusReason(status) : report.error || 'no answer';
    return {
      status_code: status,
      response,
      success: status >= 200 && status < 300,
      duration_ms: Math.max(0, Math.min(Math.round(report.duration_ms), this.timeoutMs)),
      reason,
    };
  }

  /** Takes the CLI's report of an attempt; false when nothing of that session waits for it. */
  report(sessionId: string, report: ListenReport): boolean {
    const resolve = this.#sessions.get(sessionId)?.waiting.get(report.delivery_id);
    if (!resolve) return false;
    resolve(report);
    return true;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    listenHub: ListenHub;
  }
}

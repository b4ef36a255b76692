// The one engine that follows live delivery log entries (GET /webhooks/deliveries/stream).
// It knows nothing of how entries are shown: `webhooks deliveries --follow` (text, JSON
// lines) and `panelctl watch` (ink) are visitors of the same engine. It reconnects by itself
// when the daemon goes away, reporting the state, and stops on errors that retrying cannot fix.
import type { DeliveryEntry as DeliveryLogEntry } from '../../shared/api/webhooks.js';
import { ApiRequestError, readBody, type ApiClient, type StreamResponse } from '../api-client.js';
import { SseParser } from './sse.js';

export type StreamState = 'connecting' | 'connected' | 'reconnecting' | 'closed';

/** The daemon changed an endpoint by itself (`event: endpoint`), e.g. disabled it after failures. */
export interface EndpointNotice {
  type: string;
  endpoint: { id: number; user_id: number; url: string; events: string; active: boolean };
  reason: string;
  consecutive_failures: number;
  last_failure_reason: string | null;
  at: string;
}

export interface DeliveryStreamVisitor {
  onEntry(entry: DeliveryLogEntry): void;
  onNotice?(notice: EndpointNotice): void;
  onStatus?(state: StreamState, detail?: string): void;
  /** A fatal error (authentication refused, unknown endpoint): the stream stops. */
  onError?(error: Error): void;
}

export interface FollowOptions {
  endpointId?: number;
  signal: AbortSignal;
  /** Resume after this entry id (entries the caller already has are not sent again). */
  lastEventId?: string;
  /** First reconnect delay; doubles up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  /**
   * A stream silent this long is taken as lost and reopened. The daemon sends a keep-alive
   * comment every 15 s, so only a dead connection (a sleeping laptop, a dropped network, a
   * daemon that vanished without closing it) goes quiet for long. 0 turns the check off.
   */
  idleTimeoutMs?: number;
}

/** Three missed keep-alives. */
export const DEFAULT_IDLE_TIMEOUT_MS = 45_000;

const FATAL = new Set([400, 401, 403, 404, 422]);

/**
 * Follows new delivery log entries until the signal aborts or a fatal error ends the stream.
 * States: 'connecting' once, then 'connected' each time the stream opens, 'reconnecting' (with
 * the reason as detail) each time it is lost, and 'closed' at the end.
 *
 * @example
 * await followDeliveries(client, { signal }, { onEntry: (e) => console.log(e.id), onStatus: (s, d) => console.error(s, d ?? '') });
 */
export async function followDeliveries(client: ApiClient, options: FollowOptions, visitor: DeliveryStreamVisitor): Promise<void> {
  const path = `/webhooks/deliveries/stream${options.endpointId ? `?endpoint_id=${options.endpointId}` : ''}`;
  let delay = options.retryMs ?? 500;
  let lastId: string | undefined = options.lastEventId;
  visitor.onStatus?.('connecting');
  while (!options.signal.aborted) {
    let reason = 'the stream ended';
    try {
      const response = await client.stream(path, options.signal, lastId ? { 'last-event-id': lastId } : {});
      if (response.statusCode !== 200) {
        const error = await errorOf(response);
        if (FATAL.has(response.statusCode)) {
          visitor.onError?.(error);
          visitor.onStatus?.('closed', error.message);
          return;
        }
        throw error;
      }
      visitor.onStatus?.('connected');
      delay = options.retryMs ?? 500;
      const parser = new SseParser((event) => {
        if (event.event === 'endpoint') {
          try {
            visitor.onNotice?.(JSON.parse(event.data) as EndpointNotice);
          } catch {
            // a malformed notice is skipped
          }
          return;
        }
        if (event.event !== 'delivery') return;
        if (event.id) lastId = event.id;
        let entry: DeliveryLogEntry;
        try {
          entry = JSON.parse(event.data) as DeliveryLogEntry;
        } catch {
          return; // a malformed event is skipped, not fatal
        }
        visitor.onEntry(entry);
      });
      response.body.setEncoding('utf8');
      const idle = watchIdle(response.body, options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS);
      try {
        for await (const chunk of response.body) {
          idle.reset();
          parser.push(chunk as string);
        }
      } finally {
        idle.stop();
      }
    } catch (error) {
      if (options.signal.aborted) break;
      reason = (error as Error).message;
    }
    if (options.signal.aborted) break;
    // One 'reconnecting' per lost stream, carrying why, so renderers can show it as it is.
    visitor.onStatus?.('reconnecting', reason);
    await sleep(delay, options.signal);
    delay = Math.min(delay * 2, options.maxRetryMs ?? 5000);
  }
  visitor.onStatus?.('closed');
}

export async function errorOf(response: StreamResponse): Promise<ApiRequestError> {
  const text = await readBody(response.body).catch(() => '');
  let envelope: { error?: string; message?: string } = {};
  try {
    envelope = JSON.parse(text);
  } catch {
    // not JSON
  }
  return new ApiRequestError(response.statusCode, envelope.error ?? 'error', envelope.message || `HTTP ${response.statusCode}`, envelope);
}

/** Destroys `body` with an explaining error when it stays silent for `ms`. */
function watchIdle(body: StreamResponse['body'], ms: number): { reset(): void; stop(): void } {
  if (!ms) return { reset() {}, stop() {} };
  let timer: NodeJS.Timeout;
  const arm = () => {
    timer = setTimeout(() => body.destroy(new Error(`no data from the daemon for ${ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`}`)), ms);
    timer.unref();
  };
  arm();
  return {
    reset() {
      clearTimeout(timer);
      arm();
    },
    stop() {
      clearTimeout(timer);
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

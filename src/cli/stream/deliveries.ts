// The one engine that follows live delivery log entries (GET /webhooks/deliveries/stream).
// It knows nothing of how entries are shown: `webhooks deliveries --follow` (text, JSON
// lines) and `panelctl watch` (ink) are visitors of the same engine. It reconnects by itself
// when the daemon goes away, reporting the state, and stops on errors that retrying cannot fix.
import type { DeliveryLogEntry } from '../../store/types.js';
import { ApiRequestError, type ApiClient } from '../api-client.js';
import { SseParser } from './sse.js';

export type StreamState = 'connecting' | 'connected' | 'reconnecting' | 'closed';

export interface DeliveryStreamVisitor {
  onEntry(entry: DeliveryLogEntry): void;
  onStatus?(state: StreamState, detail?: string): void;
  /** A fatal error (authentication refused, unknown endpoint): the stream stops. */
  onError?(error: Error): void;
}

export interface FollowOptions {
  endpointId?: number;
  signal: AbortSignal;
  /** First reconnect delay; doubles up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
}

const FATAL = new Set([400, 401, 403, 404, 422]);

/** Resolves when the signal aborts or a fatal error ends the stream. */
export async function followDeliveries(client: ApiClient, options: FollowOptions, visitor: DeliveryStreamVisitor): Promise<void> {
  const path = `/webhooks/deliveries/stream${options.endpointId ? `?endpoint_id=${options.endpointId}` : ''}`;
  let delay = options.retryMs ?? 500;
  let lastId: string | undefined;
  let first = true;
  while (!options.signal.aborted) {
    visitor.onStatus?.(first ? 'connecting' : 'reconnecting');
    first = false;
    try {
      const response = await client.stream(path, options.signal, lastId ? { 'last-event-id': lastId } : {});
      if (response.statusCode !== 200) {
        const text = await response.body.text();
        let envelope: { error?: string; message?: string } = {};
        try {
          envelope = JSON.parse(text);
        } catch {
          // not JSON
        }
        const error = new ApiRequestError(response.statusCode, envelope.error ?? 'error', envelope.message || `HTTP ${response.statusCode}`, envelope);
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
        if (event.event !== 'delivery') return;
        if (event.id) lastId = event.id;
        try {
          visitor.onEntry(JSON.parse(event.data) as DeliveryLogEntry);
        } catch {
          // a malformed event is skipped, not fatal
        }
      });
      response.body.setEncoding('utf8');
      for await (const chunk of response.body) parser.push(chunk as string);
    } catch (error) {
      if (options.signal.aborted) break;
      visitor.onStatus?.('reconnecting', (error as Error).message);
    }
    if (options.signal.aborted) break;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      options.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
    delay = Math.min(delay * 2, options.maxRetryMs ?? 5000);
  }
  visitor.onStatus?.('closed');
}

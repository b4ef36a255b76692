// Where `panelctl watch` gets its data: the recent log of each endpoint, then the live stream
// (the shared engine of stream/deliveries.ts), and the two actions (test, redeliver). It only
// dispatches actions; nothing here waits on the view, and the view never waits on it.
import { EXIT } from '../../shared/errors.js';
import type { ApiClient } from '../api-client.js';
import { CliError } from '../errors.js';
import { followDeliveries } from '../stream/deliveries.js';
import { hostOf } from './format.js';
import type { WatchAction, WatchEndpoint, WatchEntry, WatchQueue } from './state.js';

export interface WatchSource {
  /** Starts the initial fill and the live stream; returns the function that stops them. */
  start(dispatch: (action: WatchAction) => void): () => void;
  /** POST /webhooks/:id/test: the first attempt's entry. */
  test(endpointId: number): Promise<WatchEntry>;
  /** POST /webhooks/:id/deliveries/:entry_id/redeliver: the new delivery's first attempt. */
  redeliver(endpointId: number, entryId: number): Promise<WatchEntry>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** Validates an entry from the network (the edge); anything malformed is dropped. */
export function parseEntry(raw: unknown): WatchEntry | null {
  if (!isObject(raw)) return null;
  const { id, delivery_id, endpoint_id, event, attempt, status_code, success, duration_ms, created_at } = raw;
  if (!Number.isInteger(id) || !Number.isInteger(endpoint_id) || typeof event !== 'string' || typeof created_at !== 'string') return null;
  const entry: WatchEntry = {
    id: id as number,
    delivery_id: typeof delivery_id === 'string' ? delivery_id : '',
    endpoint_id: endpoint_id as number,
    event,
    payload: raw.payload ?? null,
    attempt: Number.isInteger(attempt) ? (attempt as number) : 1,
    status_code: Number.isInteger(status_code) ? (status_code as number) : 0,
    response: typeof raw.response === 'string' ? raw.response : '',
    success: success === true,
    duration_ms: typeof duration_ms === 'number' ? duration_ms : 0,
    created_at,
    reason: typeof raw.reason === 'string' ? raw.reason : null,
  };
  if (typeof raw.daemon === 'string') entry.daemon = raw.daemon;
  if (typeof raw.next_attempt_at === 'string' || raw.next_attempt_at === null) entry.next_attempt_at = raw.next_attempt_at;
  if (isObject(raw.request_headers)) {
    entry.request_headers = Object.fromEntries(
      Object.entries(raw.request_headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(', ') : String(value)]),
    );
  }
  return entry;
}

export function parseEndpoint(raw: unknown): WatchEndpoint | null {
  if (!isObject(raw) || !Number.isInteger(raw.id) || typeof raw.url !== 'string') return null;
  const endpoint: WatchEndpoint = { id: raw.id as number, url: raw.url, host: hostOf(raw.url) };
  if (typeof raw.active === 'boolean') endpoint.active = raw.active;
  if (isObject(raw.health) && Number.isInteger(raw.health.consecutive_failures)) endpoint.health = raw.health as unknown as WatchEndpoint['health'];
  if (raw.paused === true) endpoint.paused = Number.isInteger(raw.paused_deliveries) ? (raw.paused_deliveries as number) : 0;
  const schedule = raw.retry_schedule;
  if (Array.isArray(schedule) && schedule.every((s) => Number.isInteger(s)) && Number.isInteger(raw.max_in_flight)) {
    const rate = raw.rate_limit_per_second;
    endpoint.policy = { retrySchedule: schedule as number[], maxInFlight: raw.max_in_flight as number, rateLimit: Number.isInteger(rate) ? (rate as number) : null };
  }
  return endpoint;
}

function parseList<T>(data: unknown, parse: (raw: unknown) => T | null): T[] {
  return Array.isArray(data) ? data.map(parse).filter((x): x is T => x !== null) : [];
}

/** How often watch reads the daemon's queue for its header. */
export const QUEUE_POLL_MS = 5_000;

/** The queue from GET /health's answer (its admin detail); null when absent. */
export function parseQueue(data: unknown): WatchQueue | null {
  const detail = isObject(data) && isObject(data.detail) ? data.detail : null;
  if (!detail || !Number.isInteger(detail.pending_deliveries)) return null;
  const age = detail.oldest_pending_age_seconds;
  return { pending: detail.pending_deliveries as number, oldestAgeSeconds: Number.isInteger(age) ? (age as number) : null };
}

/** Runs `work` over `items`, at most `limit` at a time (the daemon rate-limits per user). */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  const workers = Array.from({ length: Math.min(limit, queue.length) }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  });
  await Promise.all(workers);
}

/**
 * Lists the endpoints watch follows: just `endpointId` (throws when unknown or not the
 * caller's), else the ones the live stream covers: the caller's, or for an admin everyone's.
 */
export async function loadEndpoints(client: ApiClient, endpointId?: number): Promise<WatchEndpoint[]> {
  if (endpointId) {
    const { data } = await client.call<unknown>('GET', `/webhooks/${endpointId}`);
    const endpoint = parseEndpoint(data);
    return endpoint ? [endpoint] : [];
  }
  const { data: me } = await client.call<unknown>('GET', '/auth/me');
  const admin = isObject(me) && me.role === 'admin';
  const { data } = await client.call<unknown>('GET', admin ? '/webhooks?all=true' : '/webhooks');
  return parseList(data, parseEndpoint);
}

export interface ApiSourceOptions {
  endpointId?: number;
  /** Endpoints already loaded (by the command's pre-flight check). */
  endpoints?: WatchEndpoint[];
  /** Stream reconnect back-off, for tests. */
  retryMs?: number;
  maxRetryMs?: number;
}

/** The source backed by the daemon's API. */
export function apiWatchSource(client: ApiClient, options: ApiSourceOptions = {}): WatchSource {
  let endpoints = options.endpoints ?? [];
  const looked = new Set(endpoints.map((e) => e.id));

  return {
    start(dispatch) {
      const controller = new AbortController();
      const { signal } = controller;
      const report = (what: string, error: unknown) => {
        if (!signal.aborted) dispatch({ type: 'status', tone: 'error', text: `${what}: ${(error as Error).message}` });
      };

      // An entry of an endpoint created after start: learn its URL once. `again` reloads a known
      // one (its health changed: a delivery failed for good, or one succeeded after failures).
      const refreshing = new Set<number>();
      const unhealthy = new Set<number>();
      const note = (endpoint: WatchEndpoint) => {
        if (endpoint.health?.consecutive_failures) unhealthy.add(endpoint.id);
        else unhealthy.delete(endpoint.id);
      };
      const learn = (id: number, again = false) => {
        if (again ? refreshing.has(id) : looked.has(id)) return;
        looked.add(id);
        refreshing.add(id);
        client.call<unknown>('GET', `/webhooks/${id}`).then(
          ({ data }) => {
            const endpoint = parseEndpoint(data);
            refreshing.delete(id);
            if (endpoint) note(endpoint);
            if (endpoint && !signal.aborted) dispatch({ type: 'endpoints', endpoints: [endpoint] });
          },
          () => refreshing.delete(id), // the row keeps showing the bare id
        );
      };

      // The recent log of each endpoint. Run at start and after each reconnect, to fill what
      // happened while the stream was down (entries are merged by id, so overlaps are harmless).
      // The pre-flight's list serves the first fill; a refill lists again (endpoints may be new).
      let listed = options.endpoints !== undefined;
      const fill = async () => {
        const relist = !options.endpointId && !listed;
        listed = false;
        if (relist) {
          try {
            endpoints = await loadEndpoints(client);
          } catch (error) {
            return report('could not list the webhook endpoints', error);
          }
        }
        if (signal.aborted) return;
        for (const endpoint of endpoints) {
          looked.add(endpoint.id);
          note(endpoint);
        }
        dispatch({ type: 'endpoints', endpoints });
        const failed: number[] = [];
        let lastError: unknown;
        await pool(endpoints, 4, async (endpoint) => {
          try {
            const { data } = await client.call<unknown>('GET', `/webhooks/${endpoint.id}/deliveries`);
            if (!signal.aborted) dispatch({ type: 'entries', entries: parseList(data, parseEntry) });
          } catch (error) {
            failed.push(endpoint.id);
            lastError = error;
          }
        });
        // One line for all failures (many endpoints can meet the per-user rate limit at once).
        if (failed.length) {
          const which = failed.length === 1 ? `endpoint #${failed[0]}` : `${failed.length} endpoints`;
          report(`could not load the recent log of ${which}`, lastError);
        }
      };

      // The queue for the header: GET /health's admin detail, read now and every QUEUE_POLL_MS
      // (no detail for a customer: the queue is every customer's, and the header leaves it out).
      const readQueue = () =>
        client.call<unknown>('GET', '/health').then(
          ({ data }) => {
            const queue = parseQueue(data);
            if (queue && !signal.aborted) dispatch({ type: 'queue', queue });
          },
          () => undefined,
        );
      void readQueue();
      const queueTimer = setInterval(() => void readQueue(), QUEUE_POLL_MS);
      queueTimer.unref?.();
      signal.addEventListener('abort', () => clearInterval(queueTimer));

      let connectedBefore = false;
      void fill();
      void followDeliveries(
        client,
        { endpointId: options.endpointId, signal, retryMs: options.retryMs, maxRetryMs: options.maxRetryMs },
        {
          onEntry(raw) {
            const entry = parseEntry(raw);
            if (!entry) return;
            dispatch({ type: 'entries', entries: [entry] });
            learn(entry.endpoint_id, entry.success ? unhealthy.has(entry.endpoint_id) : entry.attempt > 1);
          },
          onNotice(notice) {
            if (signal.aborted) return;
            dispatch({ type: 'status', tone: 'error', text: `webhook #${notice.endpoint.id} ${notice.reason}` });
            learn(notice.endpoint.id, true);
          },
          onStatus(state, detail) {
            if (signal.aborted) return;
            dispatch({ type: 'connection', state, detail });
            if (state === 'connected') {
              if (connectedBefore) void fill();
              connectedBefore = true;
            }
          },
          onError(error) {
            const auth = error instanceof CliError && error.exitCode === EXIT.AUTH;
            report(auth ? 'the live stream was refused (panelctl login, or another --token)' : 'the live stream stopped', error);
          },
        },
      );
      return () => controller.abort();
    },

    async test(endpointId) {
      const { data } = await client.call<unknown>('POST', `/webhooks/${endpointId}/test`);
      return expectEntry(data);
    },

    async redeliver(endpointId, entryId) {
      const { data } = await client.call<unknown>('POST', `/webhooks/${endpointId}/deliveries/${entryId}/redeliver`);
      return expectEntry(data);
    },
  };
}

function expectEntry(data: unknown): WatchEntry {
  const entry = parseEntry(data);
  if (!entry) throw new Error('the daemon answered without a delivery log entry');
  return entry;
}

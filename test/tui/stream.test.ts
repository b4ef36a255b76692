// The shared delivery stream engine and the watch view's data source, against a scripted
// HTTP server on loopback (the daemon end to end is covered by watch-e2e.test.ts).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiClient } from '../../src/cli/api-client.js';
import { followDeliveries, type StreamState } from '../../src/cli/stream/deliveries.js';
import { SseParser, type SseEvent } from '../../src/cli/stream/sse.js';
import { apiWatchSource, loadEndpoints, parseEntry, parseQueue } from '../../src/cli/ui/source.js';
import { initialState, reducer, type WatchAction } from '../../src/cli/ui/state.js';
import { entry } from './fixtures.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

const servers: Server[] = [];
const clients: ApiClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(handler: Handler): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

function client(url: string): ApiClient {
  const c = new ApiClient({ baseUrl: url, token: 'test-token' });
  clients.push(c);
  return c;
}

const sse = (e: ReturnType<typeof entry>) => `event: delivery\nid: ${e.id}\ndata: ${JSON.stringify(e)}\n\n`;

describe('SseParser', () => {
  it('assembles events across chunks and line endings, skips comments', () => {
    const events: SseEvent[] = [];
    const parser = new SseParser((e) => events.push(e));
    parser.push(': keep-alive\n\nevent: deliv');
    parser.push('ery\r\nid: 7\r\ndata: {"a":\ndata: 1}\n');
    expect(events).toEqual([]);
    parser.push('\n');
    expect(events).toEqual([{ event: 'delivery', id: '7', data: '{"a":\n1}' }]);
  });
});

describe('followDeliveries', () => {
  it('passes entries on, reconnects with Last-Event-ID when the stream drops, reports each state once', async () => {
    const seen: Array<string | undefined> = [];
    let connections = 0;
    const { url } = await serve((req, res) => {
      expect(req.headers.authorization).toBe('Bearer test-token');
      expect(req.url).toBe('/api/v1/webhooks/deliveries/stream?endpoint_id=3');
      seen.push(req.headers['last-event-id'] as string | undefined);
      connections++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      if (connections === 1) {
        res.write(sse(entry({ id: 11 })));
        res.write('event: delivery\ndata: not json\n\n'); // skipped, not fatal
        res.end(sse(entry({ id: 12 }))); // then the "daemon" goes away
      } else res.write(sse(entry({ id: 13 })));
    });
    const controller = new AbortController();
    const ids: number[] = [];
    const states: Array<[StreamState, string | undefined]> = [];
    const done = followDeliveries(client(url), { endpointId: 3, signal: controller.signal, retryMs: 20 }, {
      onEntry: (e) => ids.push(e.id),
      onStatus: (state, detail) => states.push([state, detail]),
    });
    await vi.waitFor(() => expect(ids).toHaveLength(3), { timeout: 30_000, interval: 10 });
    controller.abort();
    await done;
    expect(ids).toEqual([11, 12, 13]);
    expect(seen).toEqual([undefined, '12']);
    expect(states).toEqual([
      ['connecting', undefined],
      ['connected', undefined],
      ['reconnecting', 'the stream ended'],
      ['connected', undefined],
      ['closed', undefined],
    ]);
  });

  it('keeps retrying while the daemon is down, with the reason, and backs off', async () => {
    const { url, server } = await serve(() => undefined);
    const closed = new Promise((resolve) => server.close(resolve));
    server.closeAllConnections();
    await closed;
    const controller = new AbortController();
    const states: Array<[StreamState, string | undefined]> = [];
    const done = followDeliveries(client(url), { signal: controller.signal, retryMs: 20, maxRetryMs: 40 }, {
      onEntry: () => undefined,
      onStatus: (state, detail) => states.push([state, detail]),
    });
    await vi.waitFor(() => expect(states.length).toBeGreaterThanOrEqual(4), { timeout: 30_000, interval: 10 });
    controller.abort();
    await done;
    expect(states[0]).toEqual(['connecting', undefined]);
    expect(states[1][0]).toBe('reconnecting');
    expect(states[1][1]).toContain('connection refused');
    expect(states.at(-1)).toEqual(['closed', undefined]);
  });

  it('takes a stream silent past the idle time-out as lost and reopens it', async () => {
    let connections = 0;
    const { url } = await serve((_req, res) => {
      connections++;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': connected\n\n'); // and then nothing, not even keep-alives
    });
    const controller = new AbortController();
    const states: Array<[StreamState, string | undefined]> = [];
    const done = followDeliveries(client(url), { signal: controller.signal, retryMs: 20, idleTimeoutMs: 150 }, {
      onEntry: () => undefined,
      onStatus: (state, detail) => states.push([state, detail]),
    });
    // The second connection as the client sees it (answer headers in), not only as the server does.
    await vi.waitFor(() => expect(connections >= 2 && states.filter(([state]) => state === 'connected').length >= 2).toBe(true), { timeout: 30_000, interval: 10 });
    controller.abort();
    await done;
    expect(states.slice(0, 4)).toEqual([
      ['connecting', undefined],
      ['connected', undefined],
      ['reconnecting', 'no data from the daemon for 150 ms'],
      ['connected', undefined],
    ]);
  });

  it('stops on an answer retrying cannot fix (401), with the API message', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: null, error: 'not authenticated', message: 'token expired' }));
    });
    const errors: Error[] = [];
    const states: StreamState[] = [];
    await followDeliveries(client(url), { signal: new AbortController().signal, retryMs: 20 }, {
      onEntry: () => undefined,
      onStatus: (state) => states.push(state),
      onError: (error) => errors.push(error),
    });
    expect(errors.map((e) => e.message)).toEqual(['token expired']);
    expect(states).toEqual(['connecting', 'closed']);
  });
});

describe('apiWatchSource', () => {
  it('fills from each endpoint\'s recent log, follows the stream, learns new endpoints, refills after a reconnect', async () => {
    let logReads = 0;
    let streams = 0;
    const { url } = await serve((req, res) => {
      const json = (data: unknown) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data, error: null, message: 'ok' }));
      };
      const path = req.url!.replace('/api/v1', '');
      // An admin's stream covers every user's endpoints, so the fill lists them all.
      if (path === '/auth/me') return json({ id: 1, role: 'admin' });
      if (path === '/webhooks?all=true') return json([{ id: 1, url: 'https://one.example/x' }, { id: 2, url: 'https://two.example:9443/' }]);
      if (path === '/webhooks/1/deliveries') return logReads++, json([entry({ id: 1, endpoint_id: 1 })]);
      if (path === '/webhooks/2/deliveries') return json([entry({ id: 2, endpoint_id: 2 }), { junk: true }]);
      if (path === '/webhooks/9') return json({ id: 9, url: 'https://nine.example/' });
      if (path === '/webhooks/deliveries/stream') {
        streams++;
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        if (streams === 1) res.end(sse(entry({ id: 3, endpoint_id: 9 })));
        else res.write(': connected\n\n');
        return;
      }
      res.writeHead(404).end();
    });
    let state = initialState({ baseUrl: url });
    const actions: WatchAction[] = [];
    const source = apiWatchSource(client(url), { retryMs: 20 });
    const stop = source.start((action) => {
      actions.push(action);
      state = reducer(state, action);
    });
    try {
      await vi.waitFor(() => expect(streams >= 2 && logReads >= 2 && state.connection.state === 'connected' && Boolean(state.endpoints[9])).toBe(true), { timeout: 30_000, interval: 10 });
    } finally {
      stop();
    }
    expect(state.entries.map((e) => e.id)).toEqual(expect.arrayContaining([1, 2, 3]));
    expect(state.entries).toHaveLength(3);
    expect(state.endpoints[2].host).toBe('two.example:9443');
    expect(state.endpoints[9].host).toBe('nine.example');
    expect(actions.some((a) => a.type === 'connection' && a.state === 'reconnecting')).toBe(true);
  });

  it('lists only the caller\'s endpoints for a customer, one for --endpoint, and reports failed log loads in one line', async () => {
    const paths: string[] = [];
    const { url } = await serve((req, res) => {
      const path = req.url!.replace('/api/v1', '');
      paths.push(path);
      const json = (status: number, data: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ data, error: status >= 400 ? 'rate limit exceeded' : null, message: status >= 400 ? 'slow down' : 'ok' }));
      };
      if (path === '/auth/me') return json(200, { id: 5, role: 'customer' });
      if (path === '/webhooks') return json(200, [{ id: 1, url: 'https://one.example/' }, { id: 2, url: 'https://two.example/' }, { id: 3, url: 'https://three.example/' }]);
      if (path === '/webhooks/3') return json(200, { id: 3, url: 'https://three.example/' });
      if (path.endsWith('/deliveries')) return json(429, null);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(': connected\n\n');
    });
    const c = client(url);
    expect((await loadEndpoints(c)).map((e) => e.id)).toEqual([1, 2, 3]);
    expect((await loadEndpoints(c, 3)).map((e) => e.host)).toEqual(['three.example']);
    expect(paths).toEqual(['/auth/me', '/webhooks', '/webhooks/3']);

    let state = initialState({ baseUrl: url });
    const stop = apiWatchSource(c).start((action) => (state = reducer(state, action)));
    try {
      await vi.waitFor(() => expect(state.status).not.toBeNull(), { timeout: 30_000, interval: 10 });
    } finally {
      stop();
    }
    expect(state.status).toEqual({ tone: 'error', text: 'could not load the recent log of 3 endpoints: slow down' });
  });

  it('shows a refused stream as closed, with what to do', async () => {
    const { url } = await serve((req, res) => {
      const stream = req.url!.includes('/stream');
      res.writeHead(stream ? 401 : 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(stream ? { data: null, error: 'not authenticated', message: 'token expired' } : { data: [], error: null, message: 'ok' }));
    });
    let state = initialState({ baseUrl: url, endpointId: 4 });
    const stop = apiWatchSource(client(url), { endpointId: 4, endpoints: [] }).start((action) => (state = reducer(state, action)));
    try {
      await vi.waitFor(() => expect(state.connection.state).toBe('closed'), { timeout: 30_000, interval: 10 });
    } finally {
      stop();
    }
    expect(state.connection).toEqual({ state: 'closed', detail: 'token expired' });
    expect(state.status?.text).toBe('the live stream was refused (panelctl login, or another --token): token expired');
  });

  it('test and redeliver post to the documented paths and return the first attempt', async () => {
    const posts: string[] = [];
    const { url } = await serve((req, res) => {
      posts.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: entry({ id: 77, endpoint_id: 4 }), error: null, message: 'ok' }));
    });
    const source = apiWatchSource(client(url));
    expect((await source.test(4)).id).toBe(77);
    expect((await source.redeliver(4, 12)).id).toBe(77);
    expect(posts).toEqual(['POST /api/v1/webhooks/4/test', 'POST /api/v1/webhooks/4/deliveries/12/redeliver']);
  });

  it('reads the queue for the header from GET /health\'s admin detail; none without it', async () => {
    let detail = true;
    const { url } = await serve((req, res) => {
      const path = req.url!.replace('/api/v1', '');
      res.writeHead(200, { 'content-type': path.includes('/stream') ? 'text/event-stream' : 'application/json' });
      if (path.includes('/stream')) return void res.write(': connected\n\n');
      const health = { status: 'ok', version: '1', ...(detail ? { detail: { pending_deliveries: 7, oldest_pending_age_seconds: 42 } } : {}) };
      res.end(JSON.stringify({ data: path === '/health' ? health : [], error: null, message: '' }));
    });
    let state = initialState({ baseUrl: url, endpointId: 4 });
    let stop = apiWatchSource(client(url), { endpointId: 4, endpoints: [] }).start((action) => (state = reducer(state, action)));
    try {
      await vi.waitFor(() => expect(state.queue).not.toBeNull(), { timeout: 30_000, interval: 10 });
    } finally {
      stop();
    }
    expect(state.queue).toEqual({ pending: 7, oldestAgeSeconds: 42 });
    expect(parseQueue({ status: 'ok', version: '1' })).toBeNull();
    detail = false;
    state = initialState({ baseUrl: url, endpointId: 4 });
    stop = apiWatchSource(client(url), { endpointId: 4, endpoints: [] }).start((action) => (state = reducer(state, action)));
    try {
      await vi.waitFor(() => expect(state.connection.state).toBe('connected'), { timeout: 30_000, interval: 10 });
    } finally {
      stop();
    }
    expect(state.queue).toBeNull();
  });

  it('parseEntry keeps the headers sent and drops malformed entries', () => {
    expect(parseEntry({ id: 'x' })).toBeNull();
    const parsed = parseEntry({ ...entry({ id: 5 }), request_headers: { 'X-Webhook-Delivery': 'u', 'X-Many': ['a', 'b'] } });
    expect(parsed?.request_headers).toEqual({ 'X-Webhook-Delivery': 'u', 'X-Many': 'a, b' });
  });
});

// The one HTTPS webhook receiver of the tests, on 127.0.0.1: a self-signed certificate (SAN
// localhost, 127.0.0.1, ::1) written to a CA file the daemon trusts through NODE_EXTRA_CA_CERTS,
// and servers that record every request (raw body bytes, headers, arrival time) and answer as a
// test says: a status, a delay, an answer held until the test releases it, a hostile answer.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateCertificate } from '../../src/daemon/tls.js';
import { templates } from './templates.js';

export interface ReceiverTls {
  cert: string;
  key: string;
  /** A PEM file holding the certificate, for NODE_EXTRA_CA_CERTS. */
  caFile: string;
  dispose(): Promise<void>;
}

/** Creates the receivers' certificate and its CA file. */
export async function makeReceiverTls(): Promise<ReceiverTls> {
  // The same kind of certificate the daemon makes for itself (localhost, 127.0.0.1, ::1).
  const pems = templates()?.receiver ?? (await generateCertificate(2));
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-receiver-'));
  const caFile = join(dir, 'ca.pem');
  await writeFile(caFile, pems.cert);
  return { cert: pems.cert, key: pems.key, caFile, dispose: () => rm(dir, { recursive: true, force: true }) };
}

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The exact body bytes as text. */
  body: string;
  /** Date.now() when the request had fully arrived. */
  at: number;
}

export interface Reply {
  status?: number;
  body?: string | Buffer;
  headers?: Record<string, string>;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Answer only once this settles (the test decides when, not a timer). */
  until?: Promise<unknown>;
  /** Send the body start, then keep the response open, trickling bytes, never ending it. */
  endless?: boolean;
  /** Never answer; the connection stays open until the client gives up. */
  never?: boolean;
  /** Destroy the connection instead of answering. */
  reset?: boolean;
  /** Write the answer yourself (e.g. a huge body); status, body and headers are ignored. */
  raw?: (res: ServerResponse) => void;
}

export type Handler = (request: ReceivedRequest, index: number) => Reply;

export interface Receiver {
  /** https://127.0.0.1:PORT/hook */
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** The highest number of requests it was handling at once. */
  maxConcurrent(): number;
  /** How many TLS connections were opened to it (keep-alive reuses them). */
  connections(): number;
  /** Replaces how it answers (default: 200 "ok"). */
  handle(handler: Handler): void;
  /** Answers these statuses to the next requests in turn, the last one repeating. */
  respondWith(...statuses: number[]): void;
  /** Resolves once `count` requests have arrived (rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /**
   * Resolves once `count` requests have arrived, for long runs whose total time depends on the
   * machine: rejects only when none arrives for `stallMs` (the sender has stopped), not after a
   * fixed total.
   */
  waitForProgress(count: number, stallMs: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

export async function startReceiver(tls: Pick<ReceiverTls, 'cert' | 'key'>, handler: Handler = () => ({})): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const waiters: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let current = handler;
  let active = 0;
  let peak = 0;
  let connections = 0;

  const server: Server = createServer({ cert: tls.cert, key: tls.key }, (req, res) => {
    active++;
    peak = Math.max(peak, active);
    // Counted until the answer is written: the client may start its next request before 'close'.
    let counted = true;
    const release = () => {
      if (counted) active--;
      counted = false;
    };
    res.on('close', release);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const received: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      const index = requests.push(received) - 1;
      for (const wake of waiters.splice(0)) wake();
      const reply = current(received, index);
      const answer = () => {
        if (res.destroyed || reply.never) return;
        if (reply.reset) return void req.socket.destroy();
        if (reply.raw) {
          release();
          return reply.raw(res);
        }
        res.writeHead(reply.status ?? 200, { 'content-type': 'text/plain', ...reply.headers });
        if (!reply.endless) {
          release();
          res.end(reply.body ?? 'ok');
          return;
        }
        res.write(reply.body ?? 'x'.repeat(8192));
        const trickle = setInterval(() => (res.destroyed ? clearInterval(trickle) : res.write('x')), 100);
        timers.add(trickle);
      };
      if (reply.until) void reply.until.then(answer, answer);
      else if (reply.delayMs) {
        const timer = setTimeout(answer, reply.delayMs);
        timers.add(timer);
      } else answer();
    });
  });
  server.on('secureConnection', () => connections++);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;

  const receiver: Receiver = {
    url: `https://127.0.0.1:${port}/hook`,
    port,
    requests,
    maxConcurrent: () => peak,
    connections: () => connections,
    handle(next) {
      current = next;
    },
    respondWith(...statuses) {
      const queue = [...statuses];
      current = () => {
        const status = queue.length > 1 ? queue.shift()! : queue[0];
        return { status, body: status < 300 ? 'ok' : 'nope' };
      };
    },
    async waitFor(count, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (requests.length < count) {
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`receiver got ${requests.length} of ${count} requests in ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 250));
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return requests.slice(0, count);
    },
    async waitForProgress(count, stallMs) {
      while (requests.length < count) {
        try {
          await receiver.waitFor(requests.length + 1, stallMs);
        } catch {
          throw new Error(`receiver got ${requests.length} of ${count} requests, then none for ${stallMs} ms`);
        }
      }
      return requests.slice(0, count);
    },
    async close() {
      for (const timer of timers) {
        clearTimeout(timer);
        clearInterval(timer);
      }
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return receiver;
}

/**
 * How many requests a receiver has had for each `data.schedule_id` of their bodies (the events
 * the reliability and soak tests publish), each request parsed once however often it is asked:
 * those tests ask about every event while thousands arrive, in the process that runs the
 * receivers, and parsing every request at every question stalled the receivers.
 */
export function scheduleCounter(receiver: Receiver): (scheduleId: number) => number {
  const counts = new Map<number, number>();
  let counted = 0;
  return (scheduleId) => {
    for (; counted < receiver.requests.length; counted++) {
      const id = (JSON.parse(receiver.requests[counted].body) as { data: { schedule_id: number } }).data.schedule_id;
      counts.set(id, (counts.get(id) ?? 0) + 1);
    }
    return counts.get(scheduleId) ?? 0;
  };
}

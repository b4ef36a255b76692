// The metrics listener: plain HTTP on its own port (loopback by default), answering GET
// /metrics with the exposition and 404 for anything else. Apart from the API's listener, so a
// scraper needs no TLS trust or credentials, and the API's port can face the network while
// this one does not.
// The listener runs in a worker thread (listener-worker.ts) and asks this thread for each
// exposition. Served from the API's thread, a plain-HTTP socket would run through the same
// node:http, net and stream functions as the API's TLS sockets, and V8 would recompile that
// hot path for both kinds of socket; a worker has its own V8 isolate, so the API's path stays
// compiled for its sockets alone. See docs/decisions/observability.md.
import { Worker } from 'node:worker_threads';
import type { PrometheusMetrics } from './prometheus.js';

export interface MetricsListener {
  /** `http://host:port/metrics`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/** What the listener thread is started with. */
export interface ListenerOptions {
  host: string;
  port: number;
}

/** Messages from the listener thread. */
export type FromListener =
  | { type: 'listening'; port: number }
  | { type: 'failed'; message: string; code?: string; syscall?: string }
  | { type: 'scrape'; id: number };

/** Messages to the listener thread. */
export type ToListener =
  | { type: 'exposition'; id: number; contentType: string; body: string }
  | { type: 'scrape-failed'; id: number; message: string }
  | { type: 'close' };

/**
 * Listens on `host:port` (port 0: any free one) and serves the exposition of `metrics`.
 * Rejects with the listen error (its `code`, `syscall`) when the port cannot be had.
 * @example
 * const listener = await serveMetrics(metrics, '127.0.0.1', 9464);
 */
export async function serveMetrics(metrics: PrometheusMetrics, host: string, port: number): Promise<MetricsListener> {
  const worker = new Worker(new URL('./listener-worker.js', import.meta.url), { workerData: { host, port } satisfies ListenerOptions });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const tell = (message: ToListener) => worker.postMessage(message);
  // After start-up, a listener thread that fails ends the metrics only (the scraper sees the
  // target down); the daemon keeps serving.
  worker.on('error', () => undefined);
  const bound = await new Promise<number>((resolve, reject) => {
    worker.on('message', (message: FromListener) => {
      if (message.type === 'listening') resolve(message.port);
      else if (message.type === 'failed') reject(Object.assign(new Error(message.message), { code: message.code, syscall: message.syscall }));
      else
        metrics.exposition().then(
          ({ contentType, body }) => tell({ type: 'exposition', id: message.id, contentType, body }),
          (error: Error) => tell({ type: 'scrape-failed', id: message.id, message: error.message }),
        );
    });
    worker.once('error', reject);
    exited.then(() => reject(new Error('the metrics listener stopped while starting')));
  }).catch(async (error: unknown) => {
    await worker.terminate();
    throw error;
  });
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${bound}/metrics`,
    port: bound,
    close: async () => {
      tell({ type: 'close' });
      await exited;
    },
  };
}

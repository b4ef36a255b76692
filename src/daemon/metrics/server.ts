// The metrics listener: plain HTTP on its own port (loopback by default), answering GET
// /metrics with the exposition and 404 for anything else. Apart from the API's listener, so a
// scraper needs no TLS trust or credentials, and the API's port can face the network while
// this one does not.
import { createServer, type Server } from 'node:http';
import type { PrometheusMetrics } from './prometheus.js';

export interface MetricsListener {
  /** `http://host:port/metrics`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

/**
 * Listens on `host:port` (port 0: any free one) and serves the exposition of `metrics`.
 * @example
 * const listener = await serveMetrics(metrics, '127.0.0.1', 9464);
 */
export async function serveMetrics(metrics: PrometheusMetrics, host: string, port: number): Promise<MetricsListener> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(path === '/metrics' ? 405 : 404, { 'content-type': 'text/plain; charset=utf-8', ...(path === '/metrics' ? { allow: 'GET, HEAD' } : {}) });
      response.end(path === '/metrics' ? 'method not allowed\n' : 'not found: the metrics are at /metrics\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => {
        response.writeHead(200, { 'content-type': contentType });
        response.end(request.method === 'HEAD' ? undefined : body);
      },
      (error: Error) => {
        response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
        response.end(`metrics could not be collected: ${error.message}\n`);
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${bound}/metrics`,
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

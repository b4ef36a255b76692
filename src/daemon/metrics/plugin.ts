// Hands the daemon's metrics (NO_METRICS unless --metrics-port) to plugins and routes as
// `app.metrics`, and counts every answered request by method, route template and status. The
// request hook (and the store's commit timing) is added only when metrics are on.
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { routeOf } from '../plugins/auth.js';
import { NO_METRICS, type DaemonMetrics } from './metrics.js';

/** The route label of a request no route matched (404, 405): raw paths would be unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

declare module 'fastify' {
  interface FastifyInstance {
    metrics: DaemonMetrics;
  }
}

export default fp(
  async function metricsPlugin(app: FastifyInstance) {
    const metrics = app.daemon.metrics ?? NO_METRICS;
    app.decorate('metrics', metrics);
    if (!metrics.enabled) return;
    const { store } = app.daemon;
    store.observeCommits((seconds) => metrics.storeCommit(seconds));
    app.addHook('onClose', async () => store.observeCommits(null));
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.is404 ? UNMATCHED_ROUTE : (routeOf(request).url ?? UNMATCHED_ROUTE);
      metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  },
  { name: 'metrics' },
);

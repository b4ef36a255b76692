// The fastify application, built without listening so tests can drive it with app.inject.
// Order matters: the error handler first (everything after it answers with the envelope),
// then shared services, then authentication (routes rely on request.principal), then routes.
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { childLoggerFactory } from './request-logger.js';
import { TokenService } from './auth/tokens.js';
import { EventBus } from './dispatcher/bus.js';
import dispatcherPlugin from './dispatcher/plugin.js';
import authPlugin from './plugins/auth.js';
import docsPlugin from './plugins/docs.js';
import errorsPlugin from './plugins/errors.js';
import { requestId } from './plugins/request-id.js';
import metricsPlugin from './metrics/plugin.js';
import { clientErrorHandler, frameworkErrors } from './plugins/protocol-errors.js';
import { validatorCompiler } from './plugins/validation.js';
import lockoutPlugin from './plugins/lockout.js';
import rateLimitPlugin from './plugins/rate-limit.js';
import apiKeyRoutes from './routes/api-keys/index.js';
import authRoutes from './routes/auth/index.js';
import settingsRoutes from './routes/admin/settings.js';
import unlockRoutes from './routes/admin/unlock.js';
import healthRoutes from './routes/health/index.js';
import userRoutes from './routes/users/index.js';
import eventRoutes from './routes/events/index.js';
import subscriptionRoutes from './routes/subscriptions/index.js';
import siteRoutes from './routes/sites/index.js';
import webhookRoutes from './routes/webhooks/index.js';
import type { DaemonOptions } from './services.js';
import { SettingsCache } from './settings-cache.js';

export interface RouteSummary {
  method: string;
  url: string;
  auth: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    routeList: RouteSummary[];
  }
}

export const BODY_LIMIT = 1024 * 1024;

/** Request and response fields that never reach a log line. */
export const LOG_REDACT = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  '*.password',
  '*.secret',
  '*.token',
  '*.key',
  '*.totp_code',
];

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/** Fastify's own serializer compiler, each serializer built at its first use. */
const lazySerializers: SerializerFactory = (externalSchemas, options) => {
  const build = SerializerSelector()(externalSchemas, options);
  return (route) => {
    let serialize: ((data: unknown) => string) | null = null;
    return (data: unknown) => (serialize ??= build(route))(data);
  };
};

export async function buildApp(options: DaemonOptions, server: FastifyServerOptions & { https?: object | null } = {}): Promise<FastifyInstance> {
  // node answers a request without Host with an empty 400 of its own; the errors plugin answers
  // it with the envelope instead.
  const noHostCheck = { requireHostHeader: false };
  const app = Fastify({
    bodyLimit: BODY_LIMIT,
    logger: false,
    trustProxy: false,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    childLoggerFactory,
    // X-Request-Id: a client's valid one is kept, else one is made (plugins/request-id.ts); log
    // lines carry it as req_id (the label is the log controller's, see RequestLines).
    genReqId: requestId,
    // Response serializers are built when a route first answers with them (as validators are
    // compiled, plugins/validation.ts), so a start does not build the whole API's.
    schemaController: { compilersFactory: { buildSerializer: lazySerializers } },
    // Errors raised before routing answer with the envelope too (plugins/protocol-errors.ts).
    clientErrorHandler,
    frameworkErrors,
    ...server,
    ...(server.https ? { https: { ...server.https, ...noHostCheck } } : { http: { ...noHostCheck } }),
  } as FastifyServerOptions);
  app.setValidatorCompiler(validatorCompiler);
  // Every route with its access level, for the API docs test and the route fuzzer.
  const routes: RouteSummary[] = [];
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD') routes.push({ method, url: route.url, auth: route.config?.auth ?? 'user' });
    }
  });
  app.decorate('routeList', routes);

  // The errors plugin's first hook puts the request id on every answer, and its handler names it in 5xx messages.
  await app.register(errorsPlugin);
  app.decorate('daemon', options);
  // Before the dispatcher and the request limits, which report to it.
  await app.register(metricsPlugin);
  app.decorate('store', options.store);
  app.decorate('clock', options.clock ?? Date.now);
  app.decorate('tokens', new TokenService(options.jwtSecret, options.clock ?? Date.now));
  // Read once here and followed through the change feed: the request hooks read it without waiting.
  const settings = await SettingsCache.open(options.store, (error) => app.log.error({ err: error }, 'settings could not be read again'));
  app.decorate('settings', settings);
  app.addHook('onClose', async () => settings.close());
  app.decorate('events', new EventBus(options.store, options.clock ?? Date.now));
  await app.register(dispatcherPlugin);
  await app.register(authPlugin);
  // Request limits after auth (windows are per user) and before the routes (they hook every route).
  await app.register(rateLimitPlugin);
  await app.register(lockoutPlugin);
  // Before the routes: the OpenAPI generator collects routes as they are added.
  await app.register(docsPlugin);

  await app.register(
    async (api) => {
      await api.register(healthRoutes);
      await api.register(authRoutes);
      await api.register(apiKeyRoutes);
      await api.register(settingsRoutes);
      await api.register(unlockRoutes);
      await api.register(userRoutes);
      await api.register(eventRoutes);
      await api.register(subscriptionRoutes);
      await api.register(siteRoutes);
      await api.register(webhookRoutes);
    },
    { prefix: '/api/v1' },
  );
  return app;
}

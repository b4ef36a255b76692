// The API reference served by the daemon: the OpenAPI 3.1 document generated from the routes'
// own schemas (@fastify/swagger), GET /api/docs/openapi.{yaml,json}, and the interactive page
// at /api/docs (@fastify/swagger-ui, assets from the package: the daemon may run offline).
// Registered before the routes: @fastify/swagger collects them as they are added.
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import type { FastifyInstance } from 'fastify';
import { ErrorEnvelope } from '../../shared/envelope.js';
import { VERSION } from '../../shared/version.js';
import { API_PREFIX, DOCS_PREFIX, SECURITY_SCHEMES, TAG_DESCRIPTIONS, apiDescription, completeDocument } from '../docs/document.js';
import { webhookDocument } from '../docs/webhooks.js';
import { EXEMPT_ROUTES } from './rate-limit.js';

/** Routes the request limiter counts (plugins/rate-limit.ts): every /api/v1 route but the exempt ones. */
function isLimited(url: string): boolean {
  return url.startsWith(`${API_PREFIX}/`) && !EXEMPT_ROUTES.has(url);
}

export default fp(
  async function docs(app: FastifyInstance) {
    // The reference is public. swagger-ui and @fastify/static register their own routes, which
    // cannot carry our route config, so every route under the docs prefix is marked here; the
    // auth hook then lets it through like any other `auth: 'none'` route.
    app.addHook('onRoute', (route) => {
      if (route.url === DOCS_PREFIX || route.url.startsWith(`${DOCS_PREFIX}/`)) {
        route.config = { ...route.config, auth: 'none' };
      }
      // The limiter can answer 429 on any route it counts, whatever the route's own code does:
      // declared here once, so the document and the serializer know it on every such route.
      const response = route.schema?.response as Record<string, unknown> | undefined;
      if (response && isLimited(route.url) && !('429' in response)) {
        route.schema = { ...route.schema, response: { ...response, 429: ErrorEnvelope } };
      }
    });

    const { webhooks, schemas } = webhookDocument();
    await app.register(fastifySwagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'panelctl hosting panel API',
          version: VERSION,
          description: apiDescription(),
          license: { name: 'MIT', identifier: 'MIT' },
        },
        // Relative to the document's own origin, so the page works on whatever host and port serve it.
        servers: [{ url: '/', description: 'This daemon' }],
        components: {
          securitySchemes: SECURITY_SCHEMES,
          schemas,
        },
        tags: Object.entries(TAG_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
        webhooks,
      } as object,
      // Shared schemas with an `$id` become components under that name instead of `def-N`.
      refResolver: {
        buildLocalReference(json, _baseUri, _fragment, i) {
          return typeof json.$id === 'string' ? json.$id : `def-${i}`;
        },
      },
      transformObject: (document) =>
        completeDocument((document as { openapiObject: object }).openapiObject, {
          shared: { ErrorEnvelope: asComponent(ErrorEnvelope) },
          limited: (path) => isLimited(path.replace(/\{([^}]+)\}/g, ':$1')),
        }),
    });

    await app.register(fastifySwaggerUi, {
      routePrefix: DOCS_PREFIX,
      uiConfig: {
        persistAuthorization: true,
        displayRequestDuration: true,
        docExpansion: 'list',
        defaultModelsExpandDepth: 0,
      },
      theme: { title: 'panelctl API reference' },
    });

    const hidden = { hide: true };
    app.get(`${DOCS_PREFIX}/openapi.json`, { config: { auth: 'none' }, schema: hidden }, async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send(app.swagger()),
    );
    app.get(`${DOCS_PREFIX}/openapi.yaml`, { config: { auth: 'none' }, schema: hidden }, async (_request, reply) =>
      reply.type('application/yaml; charset=utf-8').send(app.swagger({ yaml: true })),
    );
  },
  { name: 'docs', dependencies: ['errors'] },
);

/** A TypeBox schema as @fastify/swagger emits it: plain JSON without `$id`. */
function asComponent(schema: object): object {
  const { $id: _id, ...rest } = JSON.parse(JSON.stringify(schema)) as { $id?: string };
  return rest;
}

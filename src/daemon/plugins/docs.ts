// The API reference served by the daemon: the OpenAPI 3.1 document generated from the routes'
// own schemas (@fastify/swagger), GET /api/docs/openapi.{yaml,json}, and the interactive page
// at /api/docs (@fastify/swagger-ui, assets from the package: the daemon may run offline).
// Registered before the routes: @fastify/swagger collects them as they are added.
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import fp from 'fastify-plugin';
import { MAX_ID } from '../../shared/envelope.js';
import type { FastifyInstance } from 'fastify';
import { stringify as toYaml } from 'yaml';
import { ErrorEnvelope } from '../../shared/envelope.js';
import { VERSION } from '../../shared/version.js';
import { API_PREFIX, DOCS_PREFIX, SECURITY_SCHEMES, TAG_DESCRIPTIONS, apiDescription, completeDocument } from '../docs/document.js';
import { LOGO_SVG, PAGE_CSS, plainSummaries } from '../docs/page.js';
import { webhookDocument } from '../docs/webhooks.js';
import { EXEMPT_ROUTES } from './rate-limit.js';

/** Routes the request limiter counts (plugins/rate-limit.ts): every /api/v1 route but the exempt ones. */
function isLimited(url: string): boolean {
  return url.startsWith(`${API_PREFIX}/`) && !EXEMPT_ROUTES.has(url);
}

/** Keywords whose failure is a 422 (well-formed but invalid, plugins/validation.ts), not a 400. */
const VALUE_RULES = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'pattern', 'format', 'enum', 'const', 'minItems', 'maxItems', 'multipleOf']);

/** An id of the path or query (the `Id()` schema): out of range is a 400 there (plugins/validation.ts). */
function isId(schema: unknown): boolean {
  const s = schema as { type?: unknown; minimum?: unknown; maximum?: unknown };
  return s?.type === 'integer' && s.minimum === 1 && s.maximum === MAX_ID;
}

/** A string field: a NUL in it is a 422 on every route (plugins/errors.ts, `nulPath`). */
function isStringType(key: string, value: unknown): boolean {
  return key === 'type' && (value === 'string' || (Array.isArray(value) && value.includes('string')));
}

/** Whether a request schema has a rule whose failure answers 422 (`idsAre400`: in the path or query). */
function hasValueRule(schema: unknown, idsAre400 = false): boolean {
  if (!schema || typeof schema !== 'object') return false;
  if (Array.isArray(schema)) return schema.some((item) => hasValueRule(item, idsAre400));
  if (idsAre400 && isId(schema)) return false;
  return Object.entries(schema).some(([key, value]) =>
    // Under `properties` the keys are field names, not keywords.
    key === 'properties'
      ? Object.values(value as object).some((field) => hasValueRule(field, idsAre400))
      : VALUE_RULES.has(key) || isStringType(key, value) || hasValueRule(value, idsAre400),
  );
}

/**
 * The error statuses a route can answer whatever its handler does, derived from its schemas so
 * the document cannot miss them: 400 on every route (a malformed request, e.g. HTTP/1.1 without
 * Host, reaches the route and is refused there), 422 where a request schema has value rules or
 * a string field (a NUL in it), 429 where the request limiter counts.
 */
function implicitErrors(url: string, schema: Record<string, unknown>): number[] {
  const statuses = [400];
  if (hasValueRule(schema.body) || hasValueRule(schema.querystring, true) || hasValueRule(schema.params, true)) statuses.push(422);
  if (isLimited(url)) statuses.push(429);
  return statuses;
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
      // Statuses a route answers whatever its own code does (the limiter's 429, a validation
      // 422, a malformed request's 400): declared here once, so the document and the serializer
      // know them on every such route.
      const response = route.schema?.response as Record<string, unknown> | undefined;
      if (response && route.url.startsWith(`${API_PREFIX}/`)) {
        const missing = implicitErrors(route.url, route.schema as Record<string, unknown>).filter((status) => !(String(status) in response));
        if (missing.length) route.schema = { ...route.schema, response: { ...response, ...Object.fromEntries(missing.map((s) => [s, ErrorEnvelope])) } };
        // Public operations say so (`security: []`), rather than leaving it to the document's default.
        if (route.config?.auth === 'none' && !route.schema?.security) route.schema = { ...route.schema, security: [] };
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
        plainSummaries(
          completeDocument((document as { openapiObject: object }).openapiObject, {
            shared: { ErrorEnvelope: asComponent(ErrorEnvelope) },
            limited: (path) => isLimited(path.replace(/\{([^}]+)\}/g, ':$1')),
          }),
        ),
    });

    await app.register(fastifySwaggerUi, {
      routePrefix: DOCS_PREFIX,
      uiConfig: {
        persistAuthorization: true,
        displayRequestDuration: true,
        docExpansion: 'list',
        defaultModelsExpandDepth: 0,
      },
      theme: { title: 'panelctl API reference', css: [{ filename: 'panelctl.css', content: PAGE_CSS }] },
      logo: { type: 'image/svg+xml', content: LOGO_SVG, href: DOCS_PREFIX },
    });

    const hidden = { hide: true };
    app.get(`${DOCS_PREFIX}/openapi.json`, { config: { auth: 'none' }, schema: hidden }, async (_request, reply) =>
      reply.type('application/json; charset=utf-8').send(app.swagger()),
    );
    // Written for YAML 1.1 readers too (PyYAML, js-yaml's defaults): strings such as example
    // timestamps that a 1.1 loader would turn into dates or booleans are quoted, so every loader
    // reads the same document as the JSON form, and the documented signatures verify.
    let yamlText: string | null = null;
    app.get(`${DOCS_PREFIX}/openapi.yaml`, { config: { auth: 'none' }, schema: hidden }, async (_request, reply) => {
      yamlText ??= toYaml(app.swagger(), { version: '1.1', lineWidth: 0 });
      return reply.type('application/yaml; charset=utf-8').send(yamlText);
    });
  },
  { name: 'docs', dependencies: ['errors'] },
);

/** A TypeBox schema as @fastify/swagger emits it: plain JSON without `$id`. */
function asComponent(schema: object): object {
  const { $id: _id, ...rest } = JSON.parse(JSON.stringify(schema)) as { $id?: string };
  return rest;
}

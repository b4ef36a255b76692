// Helpers for the docs tests: fetch the served OpenAPI document and compile the response
// schema of any documented operation and status with ajv (JSON Schema 2020-12, as in OAS 3.1).
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formatsPlugin from 'ajv-formats';
import type { TestDaemon } from '../helpers/daemon.js';

export type Json = any;
export const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** `/api/v1/admin/users/:id` → `/api/v1/admin/users/{id}` (fastify to OpenAPI path syntax). */
export function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

export async function fetchDocument(daemon: Pick<TestDaemon, 'request'>): Promise<Json> {
  const response = await daemon.request('GET', '/api/docs/openapi.json');
  if (response.status !== 200) throw new Error(`openapi.json answered ${response.status}: ${response.text}`);
  return response.body;
}

/** Every operation of the document as `METHOD path`. */
export function operations(doc: Json): string[] {
  const out: string[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of HTTP_METHODS) if (item[method]) out.push(`${method.toUpperCase()} ${path}`);
  }
  return out.sort();
}

export function makeAjv(): Ajv2020 {
  // strict off: OpenAPI adds annotation keywords (example, discriminator, xml) ajv does not know.
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const addFormats = ((formatsPlugin as { default?: unknown }).default ?? formatsPlugin) as (ajv: Ajv2020) => Ajv2020;
  addFormats(ajv);
  return ajv;
}

/**
 * Compiles response schemas out of a dereferenced copy of the document.
 * `schemaFor('DELETE /api/v1/admin/users/{id}', 404)` is undefined when that status is not documented.
 */
export async function responseSchemas(doc: Json) {
  const resolved: Json = await SwaggerParser.dereference(structuredClone(doc));
  const ajv = makeAjv();
  const cache = new Map<string, ValidateFunction>();
  return {
    resolved,
    statuses(op: string): number[] {
      const [method, path] = op.split(' ');
      const operation = resolved.paths?.[path]?.[method.toLowerCase()];
      return operation ? Object.keys(operation.responses).map(Number) : [];
    },
    /** The resolved response object of an operation and status (throws when undocumented). */
    response(op: string, status: number): Json {
      const [method, path] = op.split(' ');
      const response = resolved.paths?.[path]?.[method.toLowerCase()]?.responses?.[String(status)];
      if (!response) throw new Error(`${op} does not document ${status}`);
      return response;
    },
    /** The compiled schema of that response's media type, or undefined when it has none. */
    schemaFor(op: string, status: number, mediaType = 'application/json'): ValidateFunction | undefined {
      const key = `${op} ${status} ${mediaType}`;
      if (cache.has(key)) return cache.get(key);
      const schema = this.response(op, status).content?.[mediaType]?.schema;
      if (!schema) return undefined;
      const validate = ajv.compile(schema);
      cache.set(key, validate);
      return validate;
    },
  };
}

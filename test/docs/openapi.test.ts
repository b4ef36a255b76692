// The OpenAPI document as the app serves it (in-process, app.inject): public, valid OpenAPI 3.1, the same in YAML
// and JSON, and complete: every /api/v1 route the app registers is in it with its security,
// every catalogue event is described as a webhook, every registry error in the introduction.
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_ERRORS } from '../../src/shared/errors.js';
import { EVENT_CATALOGUE } from '../../src/shared/events.js';
import { VERSION } from '../../src/shared/version.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { listRoutes } from '../helpers/routes.js';
import type { RouteSummary } from '../../src/daemon/app.js';
import { HTTP_METHODS, fetchDocument, makeAjv, openapiPath, operations, type Json } from './openapi.js';

const EXAMPLE_SECRET = 'example-endpoint-secret';

describe('OpenAPI document', () => {
  let api: TestApp;
  let doc: Json;
  let yamlText: string;
  let routes: RouteSummary[];

  beforeAll(async () => {
    [api, routes] = await Promise.all([buildTestApp(), listRoutes()]);
    doc = await fetchDocument(api);
    const yaml = await api.request('GET', '/api/docs/openapi.yaml');
    expect(yaml.status).toBe(200);
    yamlText = yaml.text;
  });
  afterAll(async () => {
    await api?.close();
  });

  it('is served as YAML and JSON without authentication', async () => {
    const json = await api.request('GET', '/api/docs/openapi.json');
    expect(json.status).toBe(200);
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    const yaml = await api.request('GET', '/api/docs/openapi.yaml');
    expect(yaml.status).toBe(200);
    expect(yaml.headers['content-type']).toMatch(/^application\/yaml/);
    expect(yaml.text).toMatch(/^openapi: 3\.1\.0$/m);
  });

  it('validates as OpenAPI 3.1, in both forms, and they are the same document', async () => {
    const fromYaml = parseYaml(yamlText);
    expect(fromYaml).toEqual(doc);
    for (const form of [doc, fromYaml]) {
      const validated: Json = await SwaggerParser.validate(structuredClone(form));
      expect(validated.openapi).toBe('3.1.0');
    }
    expect(doc.info.version).toBe(VERSION);
    expect(doc.servers).toEqual([{ url: '/', description: expect.any(String) }]);
  });

  it('lists exactly the /api/v1 routes the app registers', () => {
    const registered = routes
      .filter((r) => r.url.startsWith('/api/v1/'))
      .map((r) => `${r.method} ${openapiPath(r.url)}`)
      .sort();
    expect(registered.length).toBeGreaterThanOrEqual(10);
    expect(operations(doc)).toEqual(registered);
    // Only the API is documented, not the docs' own routes.
    expect(Object.keys(doc.paths).every((p) => p.startsWith('/api/v1/'))).toBe(true);
  });

  it('has both security schemes, and each route documents the credentials it accepts', () => {
    expect(doc.components.securitySchemes).toEqual({
      bearer: { type: 'http', scheme: 'bearer', description: expect.stringMatching(/JWT.*API key/s) },
      apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: expect.any(String) },
    });
    for (const route of routes.filter((r) => r.url.startsWith('/api/v1/'))) {
      const op = doc.paths[openapiPath(route.url)][route.method.toLowerCase()];
      const where = `${route.method} ${route.url} (auth ${route.auth})`;
      if (route.auth === 'none') {
        expect(op.security ?? [], where).toEqual([]);
      } else if (route.auth === 'jwt' || route.auth === 'admin_jwt') {
        expect(op.security, where).toEqual([{ bearer: [] }]);
      } else {
        expect(op.security, where).toEqual([{ bearer: [] }, { apiKey: [] }]);
      }
      if (route.auth !== 'none') expect(Object.keys(op.responses), `${where} must document 401`).toContain('401');
      if (route.auth.startsWith('admin')) expect(Object.keys(op.responses), `${where} must document 403`).toContain('403');
    }
  });

  it('gives every operation a summary, described tags, a success response and error envelopes with examples', () => {
    const described = new Map<string, string>(doc.tags.map((t: Json) => [t.name, t.description]));
    const knownErrors = new Set(Object.values(API_ERRORS).map((e) => e.error));
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const method of HTTP_METHODS) {
        const op = item[method];
        if (!op) continue;
        const where = `${method.toUpperCase()} ${path}`;
        expect(op.summary, where).toEqual(expect.any(String));
        expect(op.operationId, where).toEqual(expect.any(String));
        expect(op.tags?.length, where).toBeGreaterThan(0);
        for (const tag of op.tags) expect(described.get(tag), `${where}: tag ${tag} needs a description`).toEqual(expect.any(String));
        const statuses = Object.keys(op.responses).map(Number);
        expect(statuses.some((s) => s >= 200 && s < 300), where).toBe(true);
        for (const status of statuses.filter((s) => s >= 400)) {
          const media = op.responses[status].content['application/json'];
          expect(media.schema, `${where} ${status}`).toEqual({ $ref: '#/components/schemas/ErrorEnvelope' });
          const examples = Object.values<Json>(media.examples);
          expect(examples.length, `${where} ${status}`).toBeGreaterThan(0);
          for (const example of examples) {
            expect(knownErrors.has(example.value.error), `${where} ${status}: ${example.value.error}`).toBe(true);
            expect(API_ERRORS[Object.keys(API_ERRORS).find((k) => API_ERRORS[k as keyof typeof API_ERRORS].error === example.value.error) as keyof typeof API_ERRORS].status).toBe(status);
          }
          if (status === 429) expect(op.responses[status].headers['Retry-After'], where).toBeDefined();
        }
      }
    }
    const ids = operations(doc).map((o) => {
      const [method, path] = o.split(' ');
      return doc.paths[path][method.toLowerCase()].operationId;
    });
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('introduces authentication, limits and every error of the registry', () => {
    const intro: string = doc.info.description;
    const rows = new Map([...intro.matchAll(/^\| (\d{3}) \| (.+?) \|/gm)].map((m) => [Number(m[1]), m[2]]));
    for (const { status, error } of Object.values(API_ERRORS)) expect(rows.get(status), `${status} ${error}`).toContain(`\`${error}\``);
    for (const words of ['X-API-Key', 'Authorization: Bearer', 'Retry-After', 'X-RateLimit-Remaining', 'too_many_attempts', 'X-Webhook-Signature']) {
      expect(intro).toContain(words);
    }
  });

  it('describes every catalogue event as a webhook: payload schema, headers, example and its real signature', () => {
    const ajv = makeAjv();
    expect(Object.keys(doc.webhooks).sort()).toEqual(EVENT_CATALOGUE.map((e) => e.name).sort());
    for (const type of EVENT_CATALOGUE) {
      const post = doc.webhooks[type.name].post;
      const media = post.requestBody.content['application/json'];
      const component = doc.components.schemas[media.schema.$ref.replace('#/components/schemas/', '')];
      expect(component.properties.event.enum).toEqual([type.name]);
      expect(component.properties.data.required.sort()).toEqual(Object.keys(type.fields).sort());
      for (const [field, kind] of Object.entries(type.fields)) expect(component.properties.data.properties[field].type).toBe(kind);

      // The example validates; a payload missing its data fields does not.
      const validate = ajv.compile(component);
      expect(validate(media.example), JSON.stringify(validate.errors)).toBe(true);
      expect(validate({ ...media.example, data: {} })).toBe(false);

      const headers = new Map<string, Json>(post.parameters.map((p: Json) => [p.name, p]));
      expect([...headers.keys()].sort()).toEqual(['User-Agent', 'X-Webhook-Delivery', 'X-Webhook-Event', 'X-Webhook-Signature', 'X-Webhook-Signature-Previous']);
      // Sent only during a secret rotation's overlap.
      expect(headers.get('X-Webhook-Signature-Previous').required).toBe(false);
      expect(headers.get('User-Agent').schema.enum).toEqual(['Panel-WebPanel-Webhook/1.0']);
      expect(headers.get('X-Webhook-Event').schema.enum).toEqual([type.name]);
      expect(headers.get('X-Webhook-Delivery').schema.format).toBe('uuid');
      // The documented signature is the HMAC-SHA256 of the compact example body with the documented secret.
      const expected = createHmac('sha256', EXAMPLE_SECRET).update(JSON.stringify(media.example)).digest('hex');
      expect(headers.get('X-Webhook-Signature').example).toBe(`sha256=${expected}`);
      expect(headers.get('X-Webhook-Signature').description).toContain(EXAMPLE_SECRET);
      expect(Object.keys(post.responses).sort()).toEqual(['2XX', '403', 'default']);
      expect(post.description).toMatch(/10 s.*retry follows 2 s later/s);
    }
    // Identifiers: integers every JSON reader represents exactly.
    const site = ajv.compile(doc.components.schemas.SiteCreatedEvent);
    expect(site({ event: 'site.created', timestamp: '2025-01-15T10:30:00Z', data: { site_id: 1, domain: 'a.example' } })).toBe(true);
    expect(site({ event: 'site.created', timestamp: '2025-01-15T10:30:00Z', data: { site_id: 2 ** 53, domain: 'a.example' } })).toBe(false);
  });

  it("lints clean under Redocly's recommended rules (no error, no warning)", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-lint-'));
    try {
      const file = join(dir, 'openapi.yaml');
      await writeFile(file, yamlText);
      const bin = join(dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')), 'bin', 'cli.js');
      const output = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, [bin, 'lint', file, '--extends', 'recommended', '--format', 'json'], { cwd: dir, env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' } }, (error, stdout, stderr) =>
          // Exit 1 when there are errors: the JSON report says which.
          stdout.trim().startsWith('{') ? resolve(stdout) : reject(error ?? new Error(stderr)),
        ),
      );
      const report = JSON.parse(output) as { totals: { errors: number; warnings: number }; problems: Array<{ ruleId: string; message: string; location: Array<{ pointer: string }> }> };
      const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`);
      expect(problems).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('reads the same with a YAML 1.1 loader, and its webhook examples keep signatures that verify', async () => {
    const asYaml11 = parseYaml(yamlText, { version: '1.1' });
    // A fresh copy: earlier tests sort arrays of `doc` in place.
    expect(asYaml11).toEqual(await fetchDocument(api));
    expect(yamlText).toMatch(/timestamp: "2025-01-15T10:30:00Z"/);
    for (const type of EVENT_CATALOGUE) {
      const post = asYaml11.webhooks[type.name].post;
      const example = post.requestBody.content['application/json'].example;
      expect(typeof example.timestamp, type.name).toBe('string');
      const signature = post.parameters.find((p: Json) => p.name === 'X-Webhook-Signature').example;
      expect(signature, type.name).toBe(`sha256=${createHmac('sha256', EXAMPLE_SECRET).update(JSON.stringify(example)).digest('hex')}`);
    }
  });

  it('says which operations are public (security: []) and documents what every operation can answer', () => {
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      for (const method of HTTP_METHODS) {
        const op = item[method];
        if (!op) continue;
        const route = routes.find((r) => r.method.toLowerCase() === method && openapiPath(r.url) === path)!;
        if (route.auth === 'none') expect(op.security, `${method} ${path}`).toEqual([]);
        // A malformed request (HTTP/1.1 without Host, say) reaches any operation: 400 everywhere.
        expect(Object.keys(op.responses), `${method} ${path}`).toContain('400');
        // Path and query ids out of range are a 400 (plugins/validation.ts); other rules are 422s.
        const isId = (p: Json) => p.schema?.type === 'integer' && p.schema?.minimum === 1 && p.schema?.maximum === Number.MAX_SAFE_INTEGER;
        const constrained = JSON.stringify([(op.parameters ?? []).filter((p: Json) => !isId(p)), op.requestBody ?? {}]);
        if (/"(minimum|maximum|minLength|maxLength|pattern|format|enum|const)"/.test(constrained)) {
          expect(Object.keys(op.responses), `${method} ${path} has value rules: 422`).toContain('422');
        }
      }
    }
    for (const item of Object.values<Json>(doc.webhooks)) expect(item.post.security).toEqual([]);
    // 405 is documented where it is sent: for methods a path does not list, in the introduction.
    expect(doc.info.description).toMatch(/405 `method not allowed`, with an `Allow`/);
  });

  it('serves the reference page and its assets from the api itself, without authentication', async () => {
    for (const path of ['/api/docs', '/api/docs/']) {
      const page = await api.request('GET', path);
      expect(page.status).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
      expect(assets.length).toBeGreaterThanOrEqual(4);
      for (const asset of assets) {
        expect(asset, 'no CDN: assets come from the daemon').not.toMatch(/^(https?:)?\/\//);
        const url = asset.startsWith('/') ? asset : `/api/docs/${asset.replace(/^\.\//, '')}`;
        const fetched = await api.request('GET', url);
        expect([url, fetched.status]).toEqual([url, 200]);
      }
    }
    const init = await api.request('GET', '/api/docs/static/swagger-initializer.js');
    expect(init.text).toContain('persistAuthorization');
    // No call to the public validator service either.
    expect(init.text).toContain('validatorUrl: null');
  });

  it('keeps the API itself authenticated', async () => {
    const me = await api.request('GET', '/auth/me');
    expect(me.status).toBe(401);
    expect(me.body.error).toBe('not authenticated');
  });
});

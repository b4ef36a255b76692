// Contract: real answers of the app (in-process, app.inject; streams over its listening port),
// success and error cases of every route, checked against what the served document says for that
// path, method and status: the body against the response schema, the documented headers
// present, the `error` string the row expects.
// Adding a route means adding rows (test/docs/contract/rows-*.ts): an operation of the document
// without a success row, an error row, or a row for each documented status (or a stated reason)
// fails the test. Probes send malformed ids and bodies to every operation: whatever they answer
// must be documented too.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import type { HttpResult } from '../helpers/daemon.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { buildContext, credentials, send, type Ctx, type Row } from './contract/harness.js';
import { CORE_ROWS } from './contract/rows-core.js';
import { IDENTITY_ROWS, LIMIT_ROWS } from './contract/rows-identity.js';
import { SOURCES_ROWS } from './contract/rows-sources.js';
import { WEBHOOK_ROWS } from './contract/rows-webhooks.js';
import { fetchDocument, operations, responseSchemas, type Json } from './openapi.js';

/** In table order; LIMIT_ROWS last, as they lower limits and lock the test's address out. */
const ROWS: Row[] = [...CORE_ROWS, ...SOURCES_ROWS, ...IDENTITY_ROWS, ...WEBHOOK_ROWS, ...LIMIT_ROWS];

/** Statuses a route may document without a row of its own, with the reason. */
const ANY_ROUTE: Record<number, string> = {
  400: 'every operation documents 400: an HTTP/1.1 request without Host reaches it and is refused; raw-socket test in test/daemon/pre-routing.test.ts',
  429: "the request limiter's 429: exercised once per window (login, reset, user) and for the lockout in LIMIT_ROWS",
  503: 'storage failure or shutdown: provoked on a full or read-only disk by test/reliability/disk.test.ts',
};
/** Documented statuses of one operation no row provokes, with the reason. */
const UNEXERCISED: Record<string, string> = {};

describe('contract: responses match the document', () => {
  let ctx: Ctx;
  let api: TestApp;
  let tls: ReceiverTls;
  let receiver: Receiver;
  let doc: Json;
  let schemas: Awaited<ReturnType<typeof responseSchemas>>;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls);
    api = await buildTestApp({ allowPrivateWebhooks: true, webhookCa: [await readFile(tls.caFile, 'utf8')] });
    doc = await fetchDocument(api);
    schemas = await responseSchemas(doc);
    ctx = await buildContext(Object.assign(api, { url: await api.listen() }), receiver.url);
  }, 120_000);
  afterAll(async () => {
    await api?.close();
    await receiver?.close();
    await tls?.dispose();
  });

  /** Checks one answer against the document; `row` adds the expected status and error. */
  function conforms(operation: string, response: HttpResult, where: string): void {
    const documented = schemas.statuses(operation);
    expect(documented, `${where}: answered ${response.status}, which the document does not describe (${response.text.slice(0, 200)})`).toContain(
      response.status,
    );
    const spec = schemas.response(operation, response.status);
    for (const header of Object.keys(spec.headers ?? {})) {
      // A list's Link comes only when a further page exists (test/daemon/pagination.test.ts).
      if (header === 'Link') continue;
      expect(response.headers[header.toLowerCase()], `${where}: documented header ${header} missing`).toBeDefined();
    }
    const type = String(response.headers['content-type'] ?? '').split(';')[0];
    expect(Object.keys(spec.content ?? {}), `${where}: content type ${type} not documented`).toContain(type);
    const validate = schemas.schemaFor(operation, response.status, type);
    if (!validate) return; // a documented media type without a schema (the event stream's text)
    const valid = validate(response.body);
    expect(valid, `${where}: ${JSON.stringify(validate.errors)} in ${response.text.slice(0, 500)}`).toBe(true);
  }

  it('has a success row, an error row and a row (or a reason) for every documented status of every operation', () => {
    const missing: string[] = [];
    const all = operations(doc);
    for (const operation of all) {
      const rows = ROWS.filter((r) => r.op === operation);
      if (!rows.some((r) => r.status < 300)) missing.push(`${operation}: no success row`);
      const statuses = schemas.statuses(operation);
      // Statuses any route may document (ANY_ROUTE) do not call for an error row of their own.
      if (statuses.some((s) => s >= 400 && !ANY_ROUTE[s]) && !rows.some((r) => r.status >= 400)) missing.push(`${operation}: no error row`);
      for (const status of statuses) {
        if (!rows.some((r) => r.status === status) && !ANY_ROUTE[status] && !UNEXERCISED[`${operation} ${status}`]) {
          missing.push(`${operation}: no row for ${status}`);
        }
      }
    }
    for (const row of ROWS) if (!all.includes(row.op)) missing.push(`row for an undocumented operation: ${row.op}`);
    for (const key of Object.keys(UNEXERCISED)) {
      const [method, path, status] = key.split(' ');
      if (!schemas.statuses(`${method} ${path}`).includes(Number(status))) missing.push(`stale UNEXERCISED entry: ${key}`);
    }
    expect(missing).toEqual([]);
  });

  it('documents what malformed ids and bodies answer, on every operation', async () => {
    let probes = 0;
    for (const operation of operations(doc)) {
      const [method, path] = operation.split(' ');
      const spec = schemas.resolved.paths[path][method.toLowerCase()];
      const hasParams = /\{[^}]+\}/.test(path);
      const hasBody = Boolean(spec.requestBody);
      if (!hasParams && !hasBody) continue;
      const headers = credentials('admin', ctx);
      const url = (id: string) => path.replace(/\{[^}]+\}/g, id);
      const attempts: Array<{ path: string; body?: unknown; raw?: string }> = [];
      if (hasParams) for (const id of ['0', '-1', 'abc', '1.5', '99999999']) attempts.push({ path: url(id), body: hasBody ? {} : undefined });
      if (hasBody) {
        attempts.push({ path: url('1'), body: {} }, { path: url('1'), body: { no_such_field: 1 } }, { path: url('1'), body: [] });
        attempts.push({ path: url('1'), raw: '{"broken": ' });
      }
      for (const attempt of attempts) {
        const response = await ctx.daemon.request(method, attempt.path, {
          headers: attempt.raw === undefined ? headers : { ...headers, 'content-type': 'application/json' },
          body: attempt.body,
          rawBody: attempt.raw,
        });
        conforms(operation, response, `${method} ${attempt.path} ${attempt.raw ?? JSON.stringify(attempt.body) ?? ''}`);
        probes++;
      }
    }
    expect(probes).toBeGreaterThan(50);
  }, 60_000);

  it.each(ROWS)('$op → $status ($case)', async (row) => {
    const response = await send(row, ctx);
    expect(response.status, response.text.slice(0, 500)).toBe(row.status);
    conforms(row.op, response, `${row.op} (${row.case})`);
    if (row.status >= 400) expect(response.body.error).toBe(row.error);
    else if (row.stream) expect(response.text).toMatch(/^: connected\n\n/);
    else expect(response.body.error).toBeNull();
    if (row.status === 429) expect(Number(response.headers['retry-after'])).toBeGreaterThan(0);
  });
});

// Property-based fuzzing of every API route with fast-check: random bodies, types, sizes,
// unicode, prototype-pollution keys, bad ids and query strings, missing and broken auth.
// Invariants: never a 5xx, always the envelope, refused requests change nothing, the app alive.
// The many runs go to the app in-process (app.inject: the same plugins, hooks, validation and
// store as the daemon); a few runs per route go over HTTPS to a real daemon, so the same inputs
// also pass node's HTTP parser and what answers before fastify routes (pre-routing.test.ts
// checks those errors one by one).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSummary } from '../../src/daemon/app.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startLoggedIn, type HttpResult, type RequestOptions, type TestDaemon } from '../helpers/daemon.js';

const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 40);
const RUNS_OVER_HTTPS = Number(process.env.FUZZ_HTTPS_RUNS ?? 5);
const SKIP = [/\/stream$/, /\/events\/listen$/, /^\/api\/docs/]; // long-lived streams or static pages; covered by their own tests
// Fuzzing sends thousands of requests: lift the request limits so they do not mask behaviour.
const LIFTED = { rate_limit_mode: 'lockout', login_max_attempts: 1000, rate_limit_login_per_minute: 100000, rate_limit_user_per_minute: 1000000, rate_limit_reset_per_minute: 100000 };

interface Target {
  request<T = any>(method: string, path: string, options?: RequestOptions): Promise<HttpResult<T>>;
  tokens: { admin: string; customer: string };
}

let api: TestApp;
let daemon: TestDaemon;
let inProcess: Target;
let overHttps: Target;
let routes: RouteSummary[];
let fuzzed = 0;

const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.string(),
    fc.string({ unit: 'grapheme', maxLength: 200 }),
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom('', ' ', '\u0000', '*', 'https://127.0.0.1/', 'http://x', '2020-01-01T00:00:00Z', 'ncp_' + 'a'.repeat(64), 'x'.repeat(5000)),
    fc.array(tie('value'), { maxLength: 4 }),
    tie('object'),
  ),
  object: fc.dictionary(
    fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('__proto__', 'constructor', 'prototype', 'name', 'url', 'events', 'secret', 'email', 'password', 'role', 'data', 'event', 'id')),
    tie('value'),
    { maxKeys: 6 },
  ),
}));

const badId = fc.constantFrom('abc', '-1', '1.5', '0', '9'.repeat(30), '%00', '1e3', ' 1', '1', '2', '999999');
const authChoice = fc.constantFrom('none', 'broken', 'basic', 'bad-key', 'bad-jwt', 'admin', 'customer');
const rawBody = fc.oneof(
  jsonValue.value.map((v) => JSON.stringify(v)),
  fc.constantFrom('{', '{"__proto__": {"admin": true}}', '{"constructor": {"prototype": {"x": 1}}}', '[]', 'null', '"str"', '\u0000', '{"a":' + '['.repeat(5000)),
  fc.string({ unit: 'binary', maxLength: 300 }),
);
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom('?subscription_id=abc', '?subscription_id=1.5', '?subscription_id=' + '9'.repeat(30), '?endpoint_id=-1', '?limit=__proto__', '?a=1&a=2', '?%zz'),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 20 }), { maxKeys: 3 }).map((d) => '?' + new URLSearchParams(d).toString()),
);

function authHeaders(choice: string, tokens: Target['tokens']): Record<string, string> {
  switch (choice) {
    case 'broken':
      return { authorization: 'Bearer' };
    case 'basic':
      return { authorization: 'Basic YWRtaW46YWRtaW4=' };
    case 'bad-key':
      return { 'x-api-key': 'ncp_' + '0'.repeat(64) };
    case 'bad-jwt':
      return { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIiwicm9sZSI6ImFkbWluIn0.' };
    case 'admin':
      return { authorization: `Bearer ${tokens.admin}` };
    case 'customer':
      return { authorization: `Bearer ${tokens.customer}` };
    default:
      return {};
  }
}

/** What an admin can see of the state; refused requests must leave it as it was. */
async function snapshot(target: Target): Promise<string> {
  const parts: unknown[] = [];
  for (const path of ['/admin/users', '/admin/settings', '/webhooks', '/subscriptions', '/sites']) {
    const result = await target.request('GET', path, { token: target.tokens.admin });
    parts.push(result.status === 200 ? result.body.data : result.status);
  }
  return JSON.stringify(parts);
}

function expectEnvelope(status: number, body: any, label: string): void {
  expect(status, label).toBeLessThan(500);
  expect(body, label).toBeTypeOf('object');
  expect(body, label).not.toBeNull();
  expect(Object.keys(body).sort(), label).toEqual(['data', 'error', 'message']);
  expect(typeof body.message, label).toBe('string');
  if (status >= 400) {
    expect(body.error, label).toBeTypeOf('string');
  } else expect(body.error, label).toBeNull();
}

/** The admin's and a customer's tokens on a fresh panel with the request limits lifted. */
async function signIn(target: Pick<Target, 'request'> & { login(email?: string, password?: string): Promise<string> }): Promise<Target['tokens']> {
  const admin = await target.login();
  const customer = await target.request('POST', '/admin/users', { token: admin, body: { email: 'fuzz@example.com', name: 'Fuzz', password: 'fuzz-password-1', role: 'customer' } });
  expect(customer.status, customer.text).toBe(201);
  return { admin, customer: await target.login('fuzz@example.com', 'fuzz-password-1') };
}

/** Sends `runs` random requests to `route` of `target`: every answer the envelope, never a 5xx; whether any changed state. */
async function fuzzRoute(target: Target, route: RouteSummary, runs: number): Promise<boolean> {
  let mutated = false;
  await fc.assert(
    fc.asyncProperty(authChoice, badId, badId, query, fc.option(rawBody, { nil: undefined }), fc.boolean(), async (auth, id1, id2, qs, body, jsonType) => {
      const path = route.url.replace(':id', encodeURIComponent(id1)).replace(/:[a-z_]+/g, encodeURIComponent(id2)) + qs;
      const headers = authHeaders(auth, target.tokens);
      if (body !== undefined) headers['content-type'] = jsonType ? 'application/json' : 'text/plain';
      const result = await target.request(route.method, path.replace(/^\/api\/v1/, ''), { rawBody: body, headers });
      fuzzed++;
      const label = `${route.method} ${path} auth=${auth} body=${String(body).slice(0, 200)} → ${result.status} ${result.text.slice(0, 300)}`;
      expectEnvelope(result.status, result.body, label);
      if (result.status < 300 && route.method !== 'GET') mutated = true;
    }),
    { numRuns: runs, endOnFailure: true },
  );
  return mutated;
}

beforeAll(async () => {
  // The app and the daemon come up side by side: the daemon's start is a child process's work.
  [api, { daemon }] = await Promise.all([buildTestApp({ settings: LIFTED }), startLoggedIn({ settings: LIFTED })]);
  routes = api.app.routeList.filter((r) => r.url.startsWith('/api/v1') && !SKIP.some((re) => re.test(r.url)));
  inProcess = { request: api.request, tokens: await signIn(api) };
  overHttps = { request: daemon.request, tokens: await signIn(daemon) };
}, 60_000);

afterAll(async () => {
  console.log(`fuzz: ${fuzzed} requests over ${routes?.length ?? 0} routes`);
  await Promise.all([api?.close(), daemon?.dispose()]);
});

describe('route fuzzing', () => {
  it('finds the routes to fuzz', () => {
    expect(routes.length).toBeGreaterThan(5);
  });

  it('never answers 5xx, always answers the envelope, and refused requests change nothing', async () => {
    for (const route of routes) {
      const before = await snapshot(inProcess);
      const mutated = await fuzzRoute(inProcess, route, RUNS_PER_ROUTE);
      if (!mutated) expect(await snapshot(inProcess), `${route.method} ${route.url} changed state while refusing`).toBe(before);
      expect((await inProcess.request('GET', '/health')).status).toBe(200);
    }
    // Thousands of requests one after another: the bound catches a hang, and leaves room for a
    // busy machine, which slows each of them several times over.
  }, 600_000);

  it('over HTTPS to a real daemon too: never 5xx, always the envelope, the daemon alive', async () => {
    // What a refused request leaves unchanged is the app's and store's business, checked above.
    for (const route of routes) {
      await fuzzRoute(overHttps, route, RUNS_OVER_HTTPS);
      expect(daemon.proc.exitCode, daemon.output().slice(-2000)).toBeNull();
      expect((await daemon.request('GET', '/health')).status).toBe(200);
    }
  }, 300_000);
});

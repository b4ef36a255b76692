// Contract: real answers of the running daemon, success and error cases of every route, checked
// against the response schema the served document gives for that path, method and status.
// Adding a route means adding rows here: an operation of the document without a success row,
// an error row, or a row for each documented status (or a stated reason) fails the test.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type HttpResult, type TestDaemon } from '../helpers/daemon.js';
import { fetchDocument, operations, responseSchemas, type Json } from './openapi.js';

type Caller = 'none' | 'admin' | 'customer' | 'garbage';
type Dyn<T> = T | ((ctx: Ctx) => T | Promise<T>);

interface Ctx {
  daemon: TestDaemon;
  tokens: Record<Exclude<Caller, 'none' | 'garbage'>, string>;
  adminId: number;
  customerId: number;
  customerEmail: string;
  /** Creates a throwaway customer and answers its id. */
  newUser(): Promise<number>;
  /** Creates a subscription (of the customer by default) and answers its id. */
  newSubscription(customerId?: number): Promise<number>;
  /** Creates a site in that subscription and answers its id. */
  newSite(subscriptionId: number): Promise<number>;
  /** A fresh host name. */
  domain(): string;
  /** The customer's default subscription, its main domain, a site domain in use, another customer's subscription and site. */
  ownSubscriptionId: number;
  ownMainDomain: string;
  takenSiteDomain: string;
  otherSubscriptionId: number;
  otherSiteId: number;
}

interface Row {
  /** `METHOD /openapi/path/{param}` as in the document. */
  op: string;
  status: number;
  case: string;
  as: Caller;
  /** The `error` string expected in an error envelope. */
  error?: string;
  params?: Dyn<Record<string, string | number>>;
  query?: Dyn<Record<string, string | number>>;
  body?: Dyn<unknown>;
  /** Sent verbatim as application/json (malformed bodies). */
  raw?: string;
}

const ADMIN_SETTINGS = 'admin/settings';
const op = (method: string, path: string) => `${method} /api/v1/${path}`;

/** Users, login, settings, events. */
const CORE_ROWS: Row[] = [
  // health
  { op: op('GET', 'health'), status: 200, case: 'liveness without credentials', as: 'none' },

  // auth/login
  { op: op('POST', 'auth/login'), status: 200, case: 'valid email and password', as: 'none', body: { email: 'admin@localhost', password: 'admin-password-1' } },
  { op: op('POST', 'auth/login'), status: 400, case: 'password missing', as: 'none', error: 'bad request', body: { email: 'admin@localhost' } },
  { op: op('POST', 'auth/login'), status: 400, case: 'malformed JSON', as: 'none', error: 'invalid json', raw: '{"email": ' },
  { op: op('POST', 'auth/login'), status: 401, case: 'wrong password', as: 'none', error: 'invalid credentials', body: { email: 'admin@localhost', password: 'wrong-password' } },
  { op: op('POST', 'auth/login'), status: 422, case: 'empty email', as: 'none', error: 'validation failed', body: { email: '', password: 'x' } },

  // auth/me
  { op: op('GET', 'auth/me'), status: 200, case: 'admin JWT', as: 'admin' },
  { op: op('GET', 'auth/me'), status: 200, case: 'customer JWT', as: 'customer' },
  { op: op('GET', 'auth/me'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', 'auth/me'), status: 401, case: 'a token that is not one', as: 'garbage', error: 'not authenticated' },

  // admin/users
  { op: op('GET', 'admin/users'), status: 200, case: 'admin lists users', as: 'admin' },
  { op: op('GET', 'admin/users'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', 'admin/users'), status: 403, case: 'customer', as: 'customer', error: 'forbidden' },
  { op: op('POST', 'admin/users'), status: 201, case: 'new customer', as: 'admin', body: { email: 'contract-new@example.com', name: 'New', password: 'password-123', role: 'customer' } },
  { op: op('POST', 'admin/users'), status: 400, case: 'role missing', as: 'admin', error: 'bad request', body: { email: 'x@example.com', name: 'X', password: 'password-123' } },
  { op: op('POST', 'admin/users'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: { email: 'y@example.com', name: 'Y', password: 'password-123', role: 'customer' } },
  { op: op('POST', 'admin/users'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: { email: 'y@example.com', name: 'Y', password: 'password-123', role: 'customer' } },
  { op: op('POST', 'admin/users'), status: 409, case: 'duplicate email', as: 'admin', error: 'conflict', body: (ctx) => ({ email: ctx.customerEmail, name: 'Dup', password: 'password-123', role: 'customer' }) },
  { op: op('POST', 'admin/users'), status: 422, case: 'password too short', as: 'admin', error: 'validation failed', body: { email: 'z@example.com', name: 'Z', password: 'short', role: 'customer' } },
  { op: op('DELETE', 'admin/users/{id}'), status: 200, case: 'admin deletes a user', as: 'admin', params: async (ctx) => ({ id: await ctx.newUser() }) },
  { op: op('DELETE', 'admin/users/{id}'), status: 400, case: 'id not a number', as: 'admin', error: 'bad request', params: { id: 'abc' } },
  { op: op('DELETE', 'admin/users/{id}'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: { id: 1 } },
  { op: op('DELETE', 'admin/users/{id}'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.adminId }) },
  { op: op('DELETE', 'admin/users/{id}'), status: 404, case: 'unknown id', as: 'admin', error: 'not found', params: { id: 999999 } },
  { op: op('DELETE', 'admin/users/{id}'), status: 409, case: 'own account', as: 'admin', error: 'conflict', params: (ctx) => ({ id: ctx.adminId }) },

  // admin/settings
  { op: op('GET', ADMIN_SETTINGS), status: 200, case: 'admin reads', as: 'admin' },
  { op: op('GET', ADMIN_SETTINGS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', ADMIN_SETTINGS), status: 403, case: 'customer', as: 'customer', error: 'forbidden' },
  { op: op('PUT', ADMIN_SETTINGS), status: 200, case: 'partial update', as: 'admin', body: { jwt_ttl_seconds: 86400 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 400, case: 'unknown setting', as: 'admin', error: 'bad request', body: { no_such_setting: 1 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: { jwt_ttl_seconds: 86400 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: { jwt_ttl_seconds: 86400 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 422, case: 'out of range', as: 'admin', error: 'validation failed', body: { jwt_ttl_seconds: 1 } },

  // events
  { op: op('GET', 'events/types'), status: 200, case: 'the catalogue', as: 'customer' },
  { op: op('GET', 'events/types'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('POST', 'admin/events'), status: 200, case: 'publish a valid event', as: 'admin', body: { event: 'site.created', data: { site_id: 1, domain: 'contract.example' } } },
  { op: op('POST', 'admin/events'), status: 400, case: 'data missing', as: 'admin', error: 'bad request', body: { event: 'site.created' } },
  { op: op('POST', 'admin/events'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: { event: 'site.created', data: {} } },
  { op: op('POST', 'admin/events'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: { event: 'site.created', data: {} } },
  { op: op('POST', 'admin/events'), status: 422, case: 'unknown event', as: 'admin', error: 'validation failed', body: { event: 'no.such', data: {} } },
];

const SUBSCRIPTIONS = 'admin/subscriptions';
const SUSPEND = 'admin/subscriptions/{id}/suspend';

/** Subscriptions and sites. */
const SOURCES_ROWS: Row[] = [
  // subscriptions
  { op: op('GET', 'subscriptions'), status: 200, case: "customer's own", as: 'customer' },
  { op: op('GET', 'subscriptions'), status: 200, case: 'admin sees all', as: 'admin' },
  { op: op('GET', 'subscriptions'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('POST', SUBSCRIPTIONS), status: 201, case: 'for a customer', as: 'admin', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.domain() }) },
  { op: op('POST', SUBSCRIPTIONS), status: 400, case: 'main_domain missing', as: 'admin', error: 'bad request', body: (ctx) => ({ customer_id: ctx.customerId }) },
  { op: op('POST', SUBSCRIPTIONS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.domain() }) },
  { op: op('POST', SUBSCRIPTIONS), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.domain() }) },
  { op: op('POST', SUBSCRIPTIONS), status: 409, case: 'main domain taken', as: 'admin', error: 'conflict', body: (ctx) => ({ customer_id: ctx.customerId, main_domain: ctx.ownMainDomain }) },
  { op: op('POST', SUBSCRIPTIONS), status: 422, case: 'customer_id is an admin', as: 'admin', error: 'validation failed', body: (ctx) => ({ customer_id: ctx.adminId, main_domain: ctx.domain() }) },
  { op: op('POST', SUSPEND), status: 200, case: 'an active subscription', as: 'admin', params: async (ctx) => ({ id: await ctx.newSubscription() }) },
  { op: op('POST', SUSPEND), status: 400, case: 'id not a number', as: 'admin', error: 'bad request', params: { id: 'abc' } },
  { op: op('POST', SUSPEND), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: (ctx) => ({ id: ctx.ownSubscriptionId }) },
  { op: op('POST', SUSPEND), status: 403, case: 'customer', as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.ownSubscriptionId }) },
  { op: op('POST', SUSPEND), status: 404, case: 'unknown id', as: 'admin', error: 'not found', params: { id: 999999 } },
  {
    op: op('POST', SUSPEND), status: 409, case: 'already suspended', as: 'admin', error: 'conflict',
    params: async (ctx) => {
      const id = await ctx.newSubscription();
      const first = await ctx.daemon.request('POST', `/admin/subscriptions/${id}/suspend`, { token: ctx.tokens.admin });
      if (first.status !== 200) throw new Error(`suspend failed: ${first.text}`);
      return { id };
    },
  },
  { op: op('POST', SUSPEND), status: 422, case: 'id 0', as: 'admin', error: 'validation failed', params: { id: 0 } },

  // sites
  { op: op('GET', 'sites'), status: 200, case: "customer's default subscription", as: 'customer' },
  { op: op('GET', 'sites'), status: 200, case: 'a named subscription', as: 'customer', query: (ctx) => ({ subscription_id: ctx.ownSubscriptionId }) },
  { op: op('GET', 'sites'), status: 400, case: 'subscription_id not a number', as: 'customer', error: 'bad request', query: { subscription_id: 'abc' } },
  { op: op('GET', 'sites'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', 'sites'), status: 403, case: "another customer's subscription", as: 'customer', error: 'forbidden', query: (ctx) => ({ subscription_id: ctx.otherSubscriptionId }) },
  { op: op('GET', 'sites'), status: 404, case: 'unknown subscription', as: 'customer', error: 'not found', query: { subscription_id: 999999 } },
  { op: op('POST', 'sites'), status: 201, case: 'in the default subscription', as: 'customer', body: (ctx) => ({ domain: ctx.domain() }) },
  { op: op('POST', 'sites'), status: 400, case: 'admin without subscription_id', as: 'admin', error: 'bad request', body: (ctx) => ({ domain: ctx.domain() }) },
  { op: op('POST', 'sites'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: (ctx) => ({ domain: ctx.domain() }) },
  { op: op('POST', 'sites'), status: 403, case: "another customer's subscription", as: 'customer', error: 'forbidden', body: (ctx) => ({ domain: ctx.domain(), subscription_id: ctx.otherSubscriptionId }) },
  { op: op('POST', 'sites'), status: 404, case: 'unknown subscription', as: 'customer', error: 'not found', body: (ctx) => ({ domain: ctx.domain(), subscription_id: 999999 }) },
  { op: op('POST', 'sites'), status: 409, case: 'domain taken', as: 'customer', error: 'conflict', body: (ctx) => ({ domain: ctx.takenSiteDomain }) },
  { op: op('POST', 'sites'), status: 422, case: 'not a host name', as: 'customer', error: 'validation failed', body: { domain: 'not a host!' } },
  { op: op('DELETE', 'sites/{id}'), status: 200, case: 'own site', as: 'customer', params: async (ctx) => ({ id: await ctx.newSite(ctx.ownSubscriptionId) }) },
  { op: op('DELETE', 'sites/{id}'), status: 400, case: 'id not a number', as: 'customer', error: 'bad request', params: { id: 'abc' } },
  { op: op('DELETE', 'sites/{id}'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: (ctx) => ({ id: ctx.otherSiteId }) },
  { op: op('DELETE', 'sites/{id}'), status: 403, case: "another customer's site", as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.otherSiteId }) },
  { op: op('DELETE', 'sites/{id}'), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 } },
  { op: op('DELETE', 'sites/{id}'), status: 422, case: 'id 0', as: 'customer', error: 'validation failed', params: { id: 0 } },
];

const ROWS: Row[] = [...CORE_ROWS, ...SOURCES_ROWS];

const PUBLISH_FAILURE = 'the event cannot be queued: provoked on a full or read-only disk by test/reliability/disk.test.ts';

/** Documented statuses no row provokes, each with the reason it cannot be provoked here. */
const UNEXERCISED: Record<string, string> = {
  [`${op('POST', 'admin/events')} 503`]: 'storage failure: provoked on a read-only tmpfs by test/reliability/disk.test.ts',
  [`${op('POST', SUBSCRIPTIONS)} 503`]: PUBLISH_FAILURE,
  [`${op('POST', SUSPEND)} 503`]: PUBLISH_FAILURE,
  [`${op('POST', 'sites')} 503`]: PUBLISH_FAILURE,
  [`${op('DELETE', 'sites/{id}')} 503`]: PUBLISH_FAILURE,
  [`${op('POST', 'auth/login')} 429`]: 'rate limit: not enforced in this build yet',
};

async function value<T>(dyn: Dyn<T> | undefined, ctx: Ctx): Promise<T | undefined> {
  return typeof dyn === 'function' ? (dyn as (ctx: Ctx) => T | Promise<T>)(ctx) : dyn;
}

async function send(row: Row, ctx: Ctx): Promise<HttpResult> {
  const [method, template] = row.op.split(' ');
  const params = (await value(row.params, ctx)) ?? {};
  let path = template.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    if (!(name in params)) throw new Error(`${row.op}: row "${row.case}" lacks path parameter ${name}`);
    return encodeURIComponent(String(params[name]));
  });
  const query = await value(row.query, ctx);
  if (query) path += `?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`;
  const headers: Record<string, string> = {};
  let token: string | undefined;
  if (row.as === 'garbage') token = 'not-a-token';
  else if (row.as !== 'none') token = ctx.tokens[row.as];
  const body = await value(row.body, ctx);
  if (row.raw !== undefined) headers['content-type'] = 'application/json';
  return ctx.daemon.request(method, path, { token, headers, body, rawBody: row.raw });
}

describe('contract: responses match the document', () => {
  let ctx: Ctx;
  let doc: Json;
  let schemas: Awaited<ReturnType<typeof responseSchemas>>;

  beforeAll(async () => {
    const daemon = await startDaemon();
    doc = await fetchDocument(daemon);
    schemas = await responseSchemas(doc);
    const admin = await daemon.login();
    let users = 0;
    const newUser = async () => {
      users++;
      const created = await daemon.request('POST', '/admin/users', {
        token: admin,
        body: { email: `contract-${users}@example.com`, name: `Contract ${users}`, password: 'customer-password-1', role: 'customer' },
      });
      if (created.status !== 201) throw new Error(`user creation failed: ${created.text}`);
      return created.body.data.id as number;
    };
    const customerId = await newUser();
    const customerEmail = `contract-${users}@example.com`;
    const customer = await daemon.login(customerEmail, 'customer-password-1');
    const me = await daemon.request('GET', '/auth/me', { token: admin });

    let domains = 0;
    const domain = () => `d${++domains}.contract.example`;
    const created = async (path: string, body: object) => {
      const answer = await daemon.request('POST', path, { token: admin, body });
      if (answer.status !== 201) throw new Error(`POST ${path} failed: ${answer.text}`);
      return answer.body.data as { id: number; main_domain?: string };
    };
    const newSubscription = async (owner = customerId) => (await created('/admin/subscriptions', { customer_id: owner, main_domain: domain() })).id;
    const newSite = async (subscriptionId: number) => (await created('/sites', { domain: domain(), subscription_id: subscriptionId })).id;
    const own = await created('/admin/subscriptions', { customer_id: customerId, main_domain: domain() });
    const takenSiteDomain = domain();
    await created('/sites', { domain: takenSiteDomain, subscription_id: own.id });
    const otherSubscriptionId = await newSubscription(await newUser());
    const otherSiteId = await newSite(otherSubscriptionId);
    ctx = {
      daemon,
      tokens: { admin, customer },
      adminId: me.body.data.id,
      customerId,
      customerEmail,
      newUser,
      newSubscription,
      newSite,
      domain,
      ownSubscriptionId: own.id,
      ownMainDomain: own.main_domain!,
      takenSiteDomain,
      otherSubscriptionId,
      otherSiteId,
    };
  });
  afterAll(async () => {
    await ctx?.daemon.dispose();
  });

  it('has a success row, an error row and a row (or a reason) for every documented status of every operation', () => {
    const missing: string[] = [];
    for (const operation of operations(doc)) {
      const rows = ROWS.filter((r) => r.op === operation);
      if (!rows.some((r) => r.status < 300)) missing.push(`${operation}: no success row`);
      const statuses = schemas.statuses(operation);
      if (statuses.some((s) => s >= 400) && !rows.some((r) => r.status >= 400)) missing.push(`${operation}: no error row`);
      for (const status of statuses) {
        if (!rows.some((r) => r.status === status) && !UNEXERCISED[`${operation} ${status}`]) missing.push(`${operation}: no row for ${status}`);
      }
    }
    for (const row of ROWS) if (!operations(doc).includes(row.op)) missing.push(`row for an undocumented operation: ${row.op}`);
    for (const key of Object.keys(UNEXERCISED)) {
      const [method, path, status] = key.split(' ');
      if (!schemas.statuses(`${method} ${path}`).includes(Number(status))) missing.push(`stale UNEXERCISED entry: ${key}`);
    }
    expect(missing).toEqual([]);
  });

  it.each(ROWS)('$op → $status ($case)', async (row) => {
    const response = await send(row, ctx);
    expect(response.status, response.text).toBe(row.status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const validate = schemas.schemaFor(row.op, row.status);
    expect(validate, `${row.op} answered ${row.status}, which the document does not describe`).toBeDefined();
    const valid = validate!(response.body);
    expect(valid, `${row.op} ${row.status}: ${JSON.stringify(validate!.errors)} in ${response.text}`).toBe(true);
    if (row.status >= 400) expect(response.body.error).toBe(row.error);
    else expect(response.body.error).toBeNull();
  });
});

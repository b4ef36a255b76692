// The contract test's machinery: the fixture every row can draw on (users, tokens, API keys,
// subscriptions, sites, a 2FA user), the row type, and how a row becomes a real request.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { authenticator } from 'otplib';
import { Agent, request as undiciRequest } from 'undici';
import { vi } from 'vitest';
import type { HttpResult, TestDaemon } from '../../helpers/daemon.js';

export const PASSWORD = 'customer-password-1';

/** Who sends the request: nobody, a broken token, a JWT, or an API key (Bearer or X-API-Key). */
export type Caller = 'none' | 'garbage' | 'admin' | 'customer' | 'flow2fa' | 'on2fa' | 'adminKey' | 'customerKey';
export type Dyn<T> = T | ((ctx: Ctx) => T | Promise<T>);
/** A JSON body (not `unknown`, so a row's `(ctx) => …` body is typed by its context). */
export type JsonBody = Record<string, unknown> | unknown[] | string | number | boolean | null;

export interface Row {
  /** `METHOD /api/v1/path/{param}` as in the document. */
  op: string;
  status: number;
  case: string;
  as: Caller;
  /** The `error` string expected in an error envelope. */
  error?: string;
  params?: Dyn<Record<string, string | number>>;
  query?: Dyn<Record<string, string | number>>;
  body?: Dyn<JsonBody>;
  /** Sent verbatim as application/json (malformed bodies). */
  raw?: string;
  /** A Server-Sent Events answer: the first bytes are read, then the connection is closed. */
  stream?: boolean;
  /** Runs before the request (e.g. lowers a limit). */
  prepare?: (ctx: Ctx) => Promise<void>;
}

export const op = (method: string, path: string) => `${method} /api/v1/${path}`;

/** What the rows are sent to: a daemon, or the app in-process with a listening URL for streams. */
export type Target = Pick<TestDaemon, 'request' | 'login' | 'dataDir' | 'url'> & { ca?: string };

export interface Ctx {
  daemon: Target;
  tokens: Record<Exclude<Caller, 'none' | 'garbage' | 'adminKey' | 'customerKey'>, string>;
  keys: { admin: string; customer: string; adminKeyId: number };
  adminId: number;
  customerId: number;
  customerEmail: string;
  /** A user with 2FA enabled (its secret), for logins with and without a code. */
  on2fa: { email: string; secret: string };
  /** Values rows hand to later rows (e.g. the secret the 2FA flow enabled). */
  scratch: Record<string, any>;
  /** Creates a throwaway customer; answers its id and email. */
  newUser(): Promise<{ id: number; email: string }>;
  /** Creates a subscription (of the customer by default) and answers its id. */
  newSubscription(customerId?: number): Promise<number>;
  /** Creates a site in that subscription and answers its id. */
  newSite(subscriptionId: number): Promise<number>;
  /** A fresh host name. */
  domain(): string;
  ownSubscriptionId: number;
  ownMainDomain: string;
  takenSiteDomain: string;
  otherSubscriptionId: number;
  otherSiteId: number;
  /** The HTTPS receiver's URL; the customer's endpoint on it, one of its log entries, another customer's endpoint. */
  receiverUrl: string;
  ownWebhookId: number;
  ownEntryId: number;
  otherWebhookId: number;
  /** The TOTP code of a secret, `stepsAhead` 30 s steps from now (the daemon accepts one step of drift). */
  totp(secret: string, stepsAhead?: number): string;
  /** Admin PUT /admin/settings. */
  settings(patch: Record<string, unknown>): Promise<void>;
  /** The reset token mailed to `email` (the daemon writes mails to files without SMTP). */
  resetToken(email: string): Promise<string>;
}

/** Limits high enough that the table's own traffic never trips them; the limit rows lower them. */
export const RELAXED = {
  rate_limit_mode: 'both',
  rate_limit_login_per_minute: 100_000,
  rate_limit_reset_per_minute: 100_000,
  rate_limit_user_per_minute: 100_000,
  login_max_attempts: 1000,
};

/** Builds the fixture on a daemon that trusts the receiver at `receiverUrl` and may reach loopback. */
export async function buildContext(daemon: Target, receiverUrl: string): Promise<Ctx> {
  const admin = await daemon.login();
  const call = async (method: string, path: string, token: string, body?: unknown, expected = 200) => {
    const answer = await daemon.request(method, path, { token, body });
    if (answer.status !== expected) throw new Error(`${method} ${path} answered ${answer.status}: ${answer.text}`);
    return answer.body.data;
  };
  const settings = async (patch: Record<string, unknown>) => void (await call('PUT', '/admin/settings', admin, patch));
  await settings(RELAXED);

  let users = 0;
  const newUser = async () => {
    const email = `contract-${++users}@example.com`;
    const user = await call('POST', '/admin/users', admin, { email, name: `Contract ${users}`, password: PASSWORD, role: 'customer' }, 201);
    return { id: user.id as number, email };
  };
  let domains = 0;
  const domain = () => `d${++domains}.contract.example`;
  const newSubscription = async (owner?: number) =>
    (await call('POST', '/admin/subscriptions', admin, { customer_id: owner ?? customer.id, main_domain: domain() }, 201)).id as number;
  const newSite = async (subscriptionId: number) =>
    (await call('POST', '/sites', admin, { domain: domain(), subscription_id: subscriptionId }, 201)).id as number;
  const totp = (secret: string, stepsAhead = 0) => authenticator.clone({ epoch: Date.now() + stepsAhead * 30_000 }).generate(secret);

  const customer = await newUser();
  const customerToken = await daemon.login(customer.email, PASSWORD);
  const me = await call('GET', '/auth/me', admin);

  const own = await call('POST', '/admin/subscriptions', admin, { customer_id: customer.id, main_domain: domain() }, 201);
  const takenSiteDomain = domain();
  await call('POST', '/sites', admin, { domain: takenSiteDomain, subscription_id: own.id }, 201);
  const otherUser = await newUser();
  const otherSubscriptionId = await newSubscription(otherUser.id);
  const otherSiteId = await newSite(otherSubscriptionId);

  const hook = { url: receiverUrl, secret: 'contract-secret', events: '*' };
  const ownWebhook = await call('POST', '/webhooks', customerToken, hook, 201);
  const otherWebhook = await call('POST', '/webhooks', await daemon.login(otherUser.email, PASSWORD), hook, 201);
  const firstEntry = await call('POST', `/webhooks/${ownWebhook.id}/test`, customerToken, {});
  if (!firstEntry.success) throw new Error(`the receiver did not take the test delivery: ${JSON.stringify(firstEntry)}`);

  const adminKey = await call('POST', '/auth/api-keys', admin, { name: 'contract admin' }, 201);
  const customerKey = await call('POST', '/auth/api-keys', customerToken, { name: 'contract customer' }, 201);

  // A user who goes through setup → enable → disable in the rows, and one with 2FA already on.
  const flow = await newUser();
  const on = await newUser();
  const onToken = await daemon.login(on.email, PASSWORD);
  const { secret } = await call('POST', '/auth/2fa/setup', onToken);
  await call('POST', '/auth/2fa/enable', onToken, { totp_code: totp(secret) });

  return {
    daemon,
    tokens: { admin, customer: customerToken, flow2fa: await daemon.login(flow.email, PASSWORD), on2fa: onToken },
    keys: { admin: adminKey.key, customer: customerKey.key, adminKeyId: adminKey.id },
    adminId: me.id,
    customerId: customer.id,
    customerEmail: customer.email,
    on2fa: { email: on.email, secret },
    scratch: {},
    newUser,
    newSubscription,
    newSite,
    domain,
    ownSubscriptionId: own.id,
    ownMainDomain: own.main_domain,
    takenSiteDomain,
    otherSubscriptionId,
    otherSiteId,
    receiverUrl,
    ownWebhookId: ownWebhook.id,
    ownEntryId: firstEntry.id,
    otherWebhookId: otherWebhook.id,
    totp,
    settings,
    resetToken: (email) => mailedToken(daemon, email),
  };
}

function mailedToken(daemon: Target, email: string): Promise<string> {
  const dir = join(daemon.dataDir, 'mail');
  return vi.waitFor(
    async () => {
      const names = await readdir(dir).catch(() => [] as string[]);
      for (const name of names.filter((n) => n.endsWith('.eml'))) {
        const mail = await readFile(join(dir, name), 'utf8');
        const token = /^ {4}([A-Za-z0-9_-]{43})$/m.exec(mail);
        if (mail.includes(`To: ${email}`) && token) return token[1];
      }
      throw new Error(`no reset mail for ${email}`);
    },
    { timeout: 30_000, interval: 50 },
  );
}

async function value<T>(dyn: Dyn<T> | undefined, ctx: Ctx): Promise<T | undefined> {
  return typeof dyn === 'function' ? (dyn as (ctx: Ctx) => T | Promise<T>)(ctx) : dyn;
}

/** The credentials headers of a caller. */
export function credentials(caller: Caller, ctx: Ctx): Record<string, string> {
  switch (caller) {
    case 'none':
      return {};
    case 'garbage':
      return { authorization: 'Bearer not-a-token' };
    case 'adminKey':
      return { 'x-api-key': ctx.keys.admin };
    case 'customerKey':
      return { authorization: `Bearer ${ctx.keys.customer}` };
    default:
      return { authorization: `Bearer ${ctx.tokens[caller]}` };
  }
}

/** Sends a row's request and answers what came back. */
export async function send(row: Row, ctx: Ctx): Promise<HttpResult> {
  await row.prepare?.(ctx);
  const [method, template] = row.op.split(' ');
  const params = (await value(row.params, ctx)) ?? {};
  let path = template.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    if (!(name in params)) throw new Error(`${row.op}: row "${row.case}" lacks path parameter ${name}`);
    return encodeURIComponent(String(params[name]));
  });
  const query = await value(row.query, ctx);
  if (query) path += `?${new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]))}`;
  const headers = credentials(row.as, ctx);
  const body = await value(row.body, ctx);
  if (row.raw !== undefined) headers['content-type'] = 'application/json';
  if (row.stream) return openStream(ctx.daemon, path, headers);
  return ctx.daemon.request(method, path, { headers, body, rawBody: row.raw });
}

/** GET of an event stream: status, headers and the first chunk, then the connection is dropped. */
async function openStream(daemon: Target, path: string, headers: Record<string, string>): Promise<HttpResult> {
  const agent = new Agent({ connect: { ca: daemon.ca } });
  const controller = new AbortController();
  try {
    const response = await undiciRequest(`${daemon.url}${path}`, { headers, dispatcher: agent, signal: controller.signal });
    let text = '';
    if (response.statusCode === 200) {
      for await (const chunk of response.body) {
        text += chunk;
        break;
      }
    } else {
      text = await response.body.text();
    }
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // an event stream
    }
    return { status: response.statusCode, headers: response.headers, body, text };
  } finally {
    controller.abort();
    await agent.destroy().catch(() => undefined);
  }
}

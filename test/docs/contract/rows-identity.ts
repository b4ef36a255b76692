// Contract rows of identity: logins with 2FA, API keys, 2FA setup/enable/disable, password reset,
// and (last, since they lower limits and lock the test's IP out) the request limits.
import { PASSWORD, op, type Ctx, type Row } from './harness.js';

const LOGIN = op('POST', 'auth/login');
const LOGOUT = op('POST', 'auth/logout');
const KEYS = 'auth/api-keys';
const KEY = 'auth/api-keys/{id}';
const SETUP = op('POST', 'auth/2fa/setup');
const ENABLE = op('POST', 'auth/2fa/enable');
const DISABLE = op('POST', 'auth/2fa/disable');
const FORGOT = op('POST', 'auth/forgot-password');
const RESET = op('POST', 'auth/reset-password');
const WRONG_CODE = { totp_code: '000000' };

export const IDENTITY_ROWS: Row[] = [
  // login with 2FA
  { op: LOGIN, status: 401, case: '2FA on, no code', as: 'none', error: '2fa_required', body: (ctx) => ({ email: ctx.on2fa.email, password: PASSWORD }) },
  { op: LOGIN, status: 401, case: '2FA on, wrong code', as: 'none', error: 'invalid totp code', body: (ctx) => ({ email: ctx.on2fa.email, password: PASSWORD, ...WRONG_CODE }) },
  // The code of the next step: the current one was used to enable 2FA, and a code is accepted once.
  { op: LOGIN, status: 200, case: '2FA on, a fresh code', as: 'none', body: (ctx) => ({ email: ctx.on2fa.email, password: PASSWORD, totp_code: ctx.totp(ctx.on2fa.secret, 1) }) },

  // API keys
  { op: op('POST', KEYS), status: 201, case: 'with a JWT', as: 'customer', body: { name: 'contract key', expires_at: '2099-01-01T00:00:00Z' } },
  { op: op('POST', KEYS), status: 400, case: 'name missing', as: 'customer', error: 'bad request', body: {} },
  { op: op('POST', KEYS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: { name: 'x' } },
  { op: op('POST', KEYS), status: 403, case: 'with an API key (Bearer)', as: 'customerKey', error: 'jwt required', body: { name: 'x' } },
  { op: op('POST', KEYS), status: 422, case: 'expires_at in the past', as: 'customer', error: 'validation failed', body: { name: 'old', expires_at: '2000-01-01T00:00:00Z' } },
  { op: op('GET', KEYS), status: 200, case: "the caller's keys", as: 'customer' },
  { op: op('GET', KEYS), status: 422, case: 'limit out of range', as: 'customer', error: 'validation failed', query: { limit: 1001 } },
  { op: op('GET', KEYS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', KEYS), status: 403, case: 'with an API key (X-API-Key)', as: 'adminKey', error: 'jwt required' },
  {
    op: op('DELETE', KEY), status: 200, case: 'own key', as: 'customer',
    params: async (ctx) => {
      const created = await ctx.daemon.request('POST', '/auth/api-keys', { token: ctx.tokens.customer, body: { name: 'to delete' } });
      return { id: created.body.data.id };
    },
  },
  { op: op('DELETE', KEY), status: 400, case: 'id not a number', as: 'customer', error: 'bad request', params: { id: 'abc' } },
  { op: op('DELETE', KEY), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: { id: 1 } },
  { op: op('DELETE', KEY), status: 403, case: "another user's key", as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.keys.adminKeyId }) },
  { op: op('DELETE', KEY), status: 404, case: 'unknown id', as: 'customer', error: 'not found', params: { id: 999999 } },
  { op: op('DELETE', KEY), status: 400, case: 'id 0', as: 'customer', error: 'bad request', params: { id: 0 } },

  // 2FA: the flow user sets up, enables and disables
  { op: SETUP, status: 200, case: 'a new pending secret', as: 'flow2fa' },
  { op: SETUP, status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: SETUP, status: 403, case: 'with an API key', as: 'customerKey', error: 'jwt required' },
  { op: SETUP, status: 409, case: 'already enabled', as: 'on2fa', error: 'conflict' },
  { op: ENABLE, status: 400, case: 'code missing', as: 'flow2fa', error: 'bad request', body: {} },
  { op: ENABLE, status: 401, case: 'wrong code', as: 'flow2fa', error: 'invalid totp code', body: WRONG_CODE },
  { op: ENABLE, status: 403, case: 'with an API key', as: 'customerKey', error: 'jwt required', body: WRONG_CODE },
  { op: ENABLE, status: 409, case: 'no pending setup', as: 'customer', error: 'conflict', body: WRONG_CODE },
  { op: ENABLE, status: 422, case: 'empty code', as: 'flow2fa', error: 'validation failed', body: { totp_code: '' } },
  {
    op: ENABLE, status: 200, case: 'a current code of the pending secret', as: 'flow2fa',
    body: async (ctx) => {
      const setup = await ctx.daemon.request('POST', '/auth/2fa/setup', { token: ctx.tokens.flow2fa });
      ctx.scratch.flowSecret = setup.body.data.secret;
      return { totp_code: ctx.totp(ctx.scratch.flowSecret) };
    },
  },
  { op: DISABLE, status: 400, case: 'code missing', as: 'flow2fa', error: 'bad request', body: {} },
  { op: DISABLE, status: 401, case: 'wrong code', as: 'on2fa', error: 'invalid totp code', body: WRONG_CODE },
  { op: DISABLE, status: 403, case: 'with an API key', as: 'customerKey', error: 'jwt required', body: WRONG_CODE },
  { op: DISABLE, status: 409, case: 'not enabled', as: 'customer', error: 'conflict', body: WRONG_CODE },
  { op: DISABLE, status: 422, case: 'empty code', as: 'flow2fa', error: 'validation failed', body: { totp_code: '' } },
  { op: DISABLE, status: 200, case: 'a fresh code', as: 'flow2fa', body: (ctx: Ctx) => ({ totp_code: ctx.totp(ctx.scratch.flowSecret, 1) }) },

  // logout (after the 2FA flow: it revokes that user's token, which no later row uses)
  { op: LOGOUT, status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: LOGOUT, status: 403, case: 'with an API key', as: 'customerKey', error: 'jwt required' },
  { op: LOGOUT, status: 200, case: 'the presented JWT is revoked', as: 'flow2fa' },

  // password reset
  { op: FORGOT, status: 200, case: 'an existing account', as: 'none', body: (ctx) => ({ email: ctx.customerEmail }) },
  { op: FORGOT, status: 200, case: 'an unknown account, the same answer', as: 'none', body: { email: 'nobody@example.com' } },
  { op: FORGOT, status: 400, case: 'email missing', as: 'none', error: 'bad request', body: {} },
  { op: FORGOT, status: 422, case: 'not an email', as: 'none', error: 'validation failed', body: { email: 'not-an-email' } },
  {
    op: RESET, status: 200, case: 'the mailed token', as: 'none',
    body: async (ctx) => {
      const { email } = await ctx.newUser();
      const forgot = await ctx.daemon.request('POST', '/auth/forgot-password', { body: { email } });
      if (forgot.status !== 200) throw new Error(`forgot-password failed: ${forgot.text}`);
      return { token: await ctx.resetToken(email), password: 'a-new-password-1' };
    },
  },
  { op: RESET, status: 400, case: 'token missing', as: 'none', error: 'bad request', body: { password: 'a-new-password-1' } },
  { op: RESET, status: 400, case: 'unknown token', as: 'none', error: 'invalid token', body: { token: 'x'.repeat(43), password: 'a-new-password-1' } },
  { op: RESET, status: 422, case: 'password too short', as: 'none', error: 'validation failed', body: { token: 'x'.repeat(43), password: 'short' } },
];

const settings = (patch: Record<string, unknown>) => (ctx: Ctx) => ctx.settings(patch);

/** Limits, run last: each lowers a limit the table's earlier traffic has already used up. */
export const LIMIT_ROWS: Row[] = [
  {
    op: LOGIN, status: 429, case: 'over the login request rate', as: 'none', error: 'rate limit exceeded',
    prepare: settings({ rate_limit_login_per_minute: 1 }),
    body: { email: 'admin@localhost', password: 'admin-password-1' },
  },
  {
    op: RESET, status: 429, case: 'over the password-reset request rate', as: 'none', error: 'rate limit exceeded',
    prepare: async (ctx) => ctx.settings({ rate_limit_login_per_minute: 100_000, rate_limit_reset_per_minute: 1 }),
    body: { token: 'x'.repeat(43), password: 'a-new-password-1' },
  },
  {
    // One failed login at a threshold of 1 locks the IP out of login and password reset.
    op: FORGOT, status: 429, case: 'IP locked out after failed logins', as: 'none', error: 'too_many_attempts',
    prepare: async (ctx) => {
      await ctx.settings({ rate_limit_reset_per_minute: 100_000, login_max_attempts: 1 });
      await ctx.daemon.request('POST', '/auth/login', { body: { email: 'admin@localhost', password: 'wrong-password' } });
    },
    body: (ctx) => ({ email: ctx.customerEmail }),
  },
  { op: LOGIN, status: 429, case: 'IP locked out, even with the right password', as: 'none', error: 'too_many_attempts', body: { email: 'admin@localhost', password: 'admin-password-1' } },
  {
    // Last of all: the admin's own window is used up too once the per-user limit is 1.
    op: op('GET', 'auth/me'), status: 429, case: 'over the per-user request rate', as: 'customer', error: 'rate limit exceeded',
    prepare: settings({ rate_limit_user_per_minute: 1 }),
  },
];

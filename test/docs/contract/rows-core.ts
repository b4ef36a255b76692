// Contract rows of the foundation routes: health, login, users, settings, events.
import { op, type Row } from './harness.js';

const ADMIN_SETTINGS = 'admin/settings';

/** Health, login, users, settings, events. */
export const CORE_ROWS: Row[] = [
  // health
  { op: op('GET', 'health'), status: 200, case: 'liveness without credentials', as: 'none' },
  { op: op('GET', 'health'), status: 200, case: 'an admin also gets the detail (pending deliveries, private webhooks)', as: 'admin' },
  { op: op('GET', 'health'), status: 200, case: 'a customer gets the plain answer', as: 'customer' },
  { op: op('GET', 'health'), status: 200, case: 'a bad credential is not refused', as: 'garbage' },
  { op: op('GET', 'health/ready'), status: 200, case: 'readiness without credentials', as: 'none' },
  { op: op('GET', 'health/ready'), status: 200, case: 'a credential changes nothing', as: 'customer' },

  // auth/login
  { op: op('POST', 'auth/login'), status: 200, case: 'valid email and password', as: 'none', body: { email: 'admin@localhost', password: 'admin-password-1' } },
  { op: op('POST', 'auth/login'), status: 400, case: 'password missing', as: 'none', error: 'bad request', body: { email: 'admin@localhost' } },
  { op: op('POST', 'auth/login'), status: 400, case: 'malformed JSON', as: 'none', error: 'invalid json', raw: '{"email": ' },
  { op: op('POST', 'auth/login'), status: 401, case: 'wrong password', as: 'none', error: 'invalid credentials', body: { email: 'admin@localhost', password: 'wrong-password' } },
  { op: op('POST', 'auth/login'), status: 422, case: 'empty email', as: 'none', error: 'validation failed', body: { email: '', password: 'x' } },
  { op: op('POST', 'auth/login'), status: 422, case: 'not an email address', as: 'none', error: 'validation failed', body: { email: 'admin', password: 'x' } },

  // auth/me
  { op: op('GET', 'auth/me'), status: 200, case: 'admin JWT', as: 'admin' },
  { op: op('GET', 'auth/me'), status: 200, case: 'customer JWT', as: 'customer' },
  { op: op('GET', 'auth/me'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', 'auth/me'), status: 401, case: 'a token that is not one', as: 'garbage', error: 'not authenticated' },

  // admin/users
  { op: op('GET', 'admin/users'), status: 200, case: 'admin lists users', as: 'admin' },
  { op: op('GET', 'admin/users'), status: 422, case: 'limit out of range', as: 'admin', error: 'validation failed', query: { limit: 0 } },
  { op: op('GET', 'admin/users'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', 'admin/users'), status: 403, case: 'customer', as: 'customer', error: 'forbidden' },
  { op: op('POST', 'admin/users'), status: 201, case: 'new customer', as: 'admin', body: { email: 'contract-new@example.com', name: 'New', password: 'password-123', role: 'customer' } },
  { op: op('POST', 'admin/users'), status: 400, case: 'role missing', as: 'admin', error: 'bad request', body: { email: 'x@example.com', name: 'X', password: 'password-123' } },
  { op: op('POST', 'admin/users'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: { email: 'y@example.com', name: 'Y', password: 'password-123', role: 'customer' } },
  { op: op('POST', 'admin/users'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: { email: 'y@example.com', name: 'Y', password: 'password-123', role: 'customer' } },
  { op: op('POST', 'admin/users'), status: 409, case: 'duplicate email', as: 'admin', error: 'conflict', body: (ctx) => ({ email: ctx.customerEmail, name: 'Dup', password: 'password-123', role: 'customer' }) },
  { op: op('POST', 'admin/users'), status: 422, case: 'password too short', as: 'admin', error: 'validation failed', body: { email: 'z@example.com', name: 'Z', password: 'short', role: 'customer' } },
  { op: op('POST', 'admin/users/{id}/password'), status: 200, case: 'admin sets a password', as: 'admin', params: async (ctx) => ({ id: (await ctx.newUser()).id }), body: { password: 'password-456' } },
  { op: op('POST', 'admin/users/{id}/password'), status: 400, case: 'password missing', as: 'admin', error: 'bad request', params: (ctx) => ({ id: ctx.customerId }), body: {} },
  { op: op('POST', 'admin/users/{id}/password'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: (ctx) => ({ id: ctx.customerId }), body: { password: 'password-456' } },
  { op: op('POST', 'admin/users/{id}/password'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.customerId }), body: { password: 'password-456' } },
  { op: op('POST', 'admin/users/{id}/password'), status: 403, case: 'admin API key', as: 'adminKey', error: 'jwt required', params: (ctx) => ({ id: ctx.customerId }), body: { password: 'password-456' } },
  { op: op('POST', 'admin/users/{id}/password'), status: 404, case: 'unknown id', as: 'admin', error: 'not found', params: { id: 999999 }, body: { password: 'password-456' } },
  { op: op('POST', 'admin/users/{id}/password'), status: 422, case: 'password too short', as: 'admin', error: 'validation failed', params: (ctx) => ({ id: ctx.customerId }), body: { password: 'short' } },
  { op: op('DELETE', 'admin/users/{id}'), status: 200, case: 'admin deletes a user', as: 'admin', params: async (ctx) => ({ id: (await ctx.newUser()).id }) },
  { op: op('DELETE', 'admin/users/{id}'), status: 400, case: 'id not a number', as: 'admin', error: 'bad request', params: { id: 'abc' } },
  { op: op('DELETE', 'admin/users/{id}'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', params: { id: 1 } },
  { op: op('DELETE', 'admin/users/{id}'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', params: (ctx) => ({ id: ctx.adminId }) },
  { op: op('DELETE', 'admin/users/{id}'), status: 404, case: 'unknown id', as: 'admin', error: 'not found', params: { id: 999999 } },
  { op: op('DELETE', 'admin/users/{id}'), status: 409, case: 'own account', as: 'admin', error: 'conflict', params: (ctx) => ({ id: ctx.adminId }) },
  { op: op('DELETE', 'admin/users/{id}'), status: 400, case: 'id 0', as: 'admin', error: 'bad request', params: { id: 0 } },

  // admin/settings
  { op: op('GET', ADMIN_SETTINGS), status: 200, case: 'admin reads', as: 'admin' },
  { op: op('GET', ADMIN_SETTINGS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('GET', ADMIN_SETTINGS), status: 403, case: 'customer', as: 'customer', error: 'forbidden' },
  { op: op('PUT', ADMIN_SETTINGS), status: 200, case: 'partial update', as: 'admin', body: { jwt_ttl_seconds: 86400 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 400, case: 'unknown setting', as: 'admin', error: 'bad request', body: { no_such_setting: 1 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: { jwt_ttl_seconds: 86400 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: { jwt_ttl_seconds: 86400 } },
  { op: op('PUT', ADMIN_SETTINGS), status: 422, case: 'out of range', as: 'admin', error: 'validation failed', body: { jwt_ttl_seconds: 1 } },
  // admin/unlock (an address nobody uses, so no other row's lockout ends)
  { op: op('POST', 'admin/unlock'), status: 200, case: 'one address', as: 'admin', body: { ip: '192.0.2.1' } },
  { op: op('POST', 'admin/unlock'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: {} },
  { op: op('POST', 'admin/unlock'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: {} },
  { op: op('POST', 'admin/unlock'), status: 404, case: 'unknown email', as: 'admin', error: 'not found', body: { email: 'nobody@example.invalid' } },
  { op: op('POST', 'admin/unlock'), status: 422, case: 'not an address', as: 'admin', error: 'validation failed', body: { ip: 'not-an-address' } },

  // events
  { op: op('GET', 'events/types'), status: 200, case: 'the catalogue', as: 'customer' },
  { op: op('GET', 'events/types'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated' },
  { op: op('POST', 'admin/events'), status: 200, case: 'publish a valid event', as: 'admin', body: { event: 'site.created', data: { site_id: 1, domain: 'contract.example' } } },
  { op: op('POST', 'admin/events'), status: 400, case: 'data missing', as: 'admin', error: 'bad request', body: { event: 'site.created' } },
  { op: op('POST', 'admin/events'), status: 401, case: 'no credentials', as: 'none', error: 'not authenticated', body: { event: 'site.created', data: {} } },
  { op: op('POST', 'admin/events'), status: 403, case: 'customer', as: 'customer', error: 'forbidden', body: { event: 'site.created', data: {} } },
  { op: op('POST', 'admin/events'), status: 422, case: 'unknown event', as: 'admin', error: 'validation failed', body: { event: 'no.such', data: {} } },
  { op: op('POST', 'admin/events'), status: 422, case: 'identifier beyond 2^53 - 1', as: 'admin', error: 'validation failed', raw: '{"event":"site.created","data":{"site_id":9007199254740993,"domain":"a.example"}}' },
  { op: op('POST', 'admin/events'), status: 422, case: 'owner_id 1e300', as: 'admin', error: 'validation failed', raw: '{"event":"site.created","data":{"site_id":1,"domain":"a.example"},"owner_id":1e300}' },
];

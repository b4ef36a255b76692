// Observability in-process (app.inject): request ids on every answer and in 5xx messages,
// readiness and its failing checks, the metrics the request hooks and limits feed, the reason
// classes of attempts, and the JSON store's readiness after a failed journal write.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/daemon/app.js';
import { errorReason, statusReason, timeoutReason } from '../../src/daemon/dispatcher/failure-reason.js';
import { RecentAttempts } from '../../src/daemon/dispatcher/recent-attempts.js';
import { BlockedTargetError } from '../../src/daemon/dispatcher/ssrf.js';
import { reasonClass } from '../../src/daemon/metrics/metrics.js';
import { PrometheusMetrics } from '../../src/daemon/metrics/prometheus.js';
import { newRequestId, requestId } from '../../src/daemon/plugins/request-id.js';
import { layout } from '../../src/shared/paths.js';
import { runCli } from '../helpers/cli.js';
import { sample } from '../helpers/prometheus.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import { StoreUnavailableError } from '../../src/store/store.js';
import { realFileOps } from '../../src/store/json/file-ops.js';

const NOW = () => new Date().toISOString();
const USER = { name: 'x', password_hash: 'x', totp_secret: null, totp_pending_secret: null, two_factor_enabled: false, totp_last_step: null };

describe('request ids, readiness and request metrics (in-process)', () => {
  let dir: string;
  let store: JsonStore;
  let app: FastifyInstance;
  let metrics: PrometheusMetrics;
  let admin: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-obs-'));
    store = await JsonStore.open(layout(dir), { create: true });
    metrics = new PrometheusMetrics();
    metrics.readQueueFrom({ stats: () => store.outbox.stats(), endpoints: () => store.webhooks.countByState(), now: Date.now });
    app = await buildApp({ store, paths: layout(dir), jwtSecret: new TextEncoder().encode('s'.repeat(64)), metrics });
    // A route that fails as a bug would: the 500's message must carry the request id.
    app.get('/api/v1/test-boom', { config: { auth: 'none' } }, async () => {
      throw new Error('secret internals');
    });
    // A store that fails: its 503 names the request id as every 5xx does.
    app.get('/api/v1/test-store-down', { config: { auth: 'none' } }, async () => {
      throw new StoreUnavailableError('the JSON store is unavailable', { cause: new Error('EIO: secret path') });
    });
    const adminUser = await store.users.insert({ ...USER, email: 'admin@example.com', role: 'admin', created_at: NOW(), updated_at: NOW() });
    admin = await app.tokens.issue(adminUser.id, 'admin', 3600);
    await app.ready();
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(() => vi.restoreAllMocks());

  it('X-Request-Id: a valid incoming one is kept, anything else replaced by a new id, on every answer', async () => {
    const kept = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': 'edge:42.a_b-C' } });
    expect(kept.headers['x-request-id']).toBe('edge:42.a_b-C');
    const long = 'a'.repeat(128);
    expect((await app.inject({ method: 'GET', url: '/api/v1/health', headers: { 'x-request-id': long } })).headers['x-request-id']).toBe(long);
    for (const bad of ['a'.repeat(129), 'has space', 'semi;colon', 'ünï', '']) {
      const answer = await app.inject({ method: 'GET', url: '/api/v1/nope', headers: { 'x-request-id': bad } });
      expect(answer.statusCode).toBe(404);
      expect(answer.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      expect(answer.headers['x-request-id']).not.toBe(bad);
    }
    const first = await app.inject({ method: 'GET', url: '/api/v1/sites' });
    const second = await app.inject({ method: 'GET', url: '/api/v1/sites' });
    expect(first.statusCode).toBe(401);
    expect(first.headers['x-request-id']).not.toBe(second.headers['x-request-id']);
    expect(requestId({ headers: { 'x-request-id': ['a', 'b'] } } as never)).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('a new request id is a random (version 4) UUID, a different one each time, across refills of its random bytes', () => {
    const seen = new Set<string>();
    const digits = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const id = newRequestId();
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      seen.add(id);
      for (const digit of id.replaceAll('-', '')) digits.add(digit);
    }
    expect(seen.size).toBe(2000);
    expect(digits.size).toBe(16);
  });

  it('a 5xx envelope names the request id in its message and keeps its three fields; the internals stay out', async () => {
    const answer = await app.inject({ method: 'GET', url: '/api/v1/test-boom', headers: { 'x-request-id': 'quote-me-1' } });
    expect(answer.statusCode).toBe(500);
    expect(answer.json()).toEqual({ data: null, error: 'internal error', message: 'internal server error (request id quote-me-1)' });
    expect(answer.body).not.toContain('secret internals');
    const down = await app.inject({ method: 'GET', url: '/api/v1/test-store-down', headers: { 'x-request-id': 'quote-me-2' } });
    expect([down.statusCode, down.headers['retry-after'], down.headers['x-request-id']]).toEqual([503, '5', 'quote-me-2']);
    expect(down.json()).toEqual({ data: null, error: 'storage unavailable', message: 'the store is unavailable; nothing was changed. Try again later. (request id quote-me-2)' });
    // A 4xx keeps its message as it was.
    expect((await app.inject({ method: 'GET', url: '/api/v1/nope' })).json().message).toBe('no route GET /api/v1/nope');
  });

  it('GET /health/ready: 200 with both checks ok, without credentials and outside the request limits', async () => {
    const answer = await app.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toEqual({ data: { status: 'ready', checks: { store: 'ok', dispatcher: 'ok' } }, error: null, message: '' });
  });

  it('GET /health/ready: 503 `not ready` naming the failing check (store, then a stalled dispatcher), with the request id', async () => {
    vi.spyOn(store, 'ready').mockResolvedValue('the last journal write failed (ENOSPC)');
    const answer = await app.inject({ method: 'GET', url: '/api/v1/health/ready', headers: { 'x-request-id': 'probe-1' } });
    expect(answer.statusCode).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.json()).toEqual({
      data: { status: 'not ready', checks: { store: 'the last journal write failed (ENOSPC)', dispatcher: 'ok' } },
      error: 'not ready',
      message: 'not ready: store: the last journal write failed (ENOSPC) (request id probe-1)',
    });
    vi.restoreAllMocks();
    vi.spyOn(app.dispatcher, 'loopState').mockReturnValue({ running: true, sinceTurnMs: 20_000 });
    const stalled = await app.inject({ method: 'GET', url: '/api/v1/health/ready' });
    expect(stalled.statusCode).toBe(503);
    expect(stalled.json().data.checks).toEqual({ store: 'ok', dispatcher: "the dispatcher's loop has not turned for 20 s" });
    // Liveness does not depend on either.
    expect((await app.inject({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(200);
  });

  it('GET /health gives an admin the queue and the last minute\'s attempts', async () => {
    const answer = await app.inject({ method: 'GET', url: '/api/v1/health', headers: { authorization: `Bearer ${admin}` } });
    expect(answer.json().data.detail).toMatchObject({ pending_deliveries: 0, oldest_pending_age_seconds: null, attempts_last_minute: 0, failures_last_minute: 0 });
  });

  it('counts requests by method, route template and status: never a raw path or id; 429s by scope; lockouts', async () => {
    const hook = await app.inject({ method: 'GET', url: '/api/v1/webhooks/987654321', headers: { authorization: `Bearer ${admin}` } });
    expect(hook.statusCode).toBe(404);
    await store.settings.update({ rate_limit_user_per_minute: 2, login_max_attempts: 1 });
    const limited = [];
    for (let i = 0; i < 4; i++) limited.push((await app.inject({ method: 'GET', url: '/api/v1/sites', headers: { authorization: `Bearer ${admin}` } })).statusCode);
    expect(limited).toContain(429);
    const failedLogin = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'nobody-secret@example.com', password: 'wrong-password' } });
    expect(failedLogin.statusCode).toBe(401);
    const locked = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'nobody-secret@example.com', password: 'wrong-password' } });
    expect(locked.statusCode).toBe(429);

    const { body } = await metrics.exposition();
    expect(sample(body, 'panelctl_http_requests_total', { method: 'GET', route: '/api/v1/webhooks/:id', status: '404' })).toBe(1);
    expect(sample(body, 'panelctl_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(sample(body, 'panelctl_http_requests_total', { method: 'GET', route: '/api/v1/sites', status: '429' })).toBe(limited.filter((s) => s === 429).length);
    expect(sample(body, 'panelctl_http_request_duration_seconds_count', { method: 'GET', route: '/api/v1/health/ready' })).toBeGreaterThanOrEqual(1);
    expect(sample(body, 'panelctl_rate_limited_total', { scope: 'user' })).toBe(limited.filter((s) => s === 429).length);
    expect(sample(body, 'panelctl_rate_limited_total', { scope: 'lockout' })).toBe(1);
    expect(sample(body, 'panelctl_login_lockouts_total')).toBe(1);
    expect(sample(body, 'panelctl_store_commit_duration_seconds_count')).toBeGreaterThan(0);
    expect(sample(body, 'panelctl_outbox_pending')).toBe(0);
    expect(sample(body, 'panelctl_webhook_endpoints', { state: 'active' })).toBe(0);
    expect(sample(body, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(body).toMatch(/^nodejs_heap_size_used_bytes \d/m);
    // No raw id, path, e-mail, token or free text in any label.
    expect(body).not.toContain('987654321');
    expect(body).not.toContain('/api/v1/nope');
    expect(body).not.toContain('nobody-secret');
    expect(body).not.toContain(admin);
    expect(body).not.toContain('quote-me');
    await store.settings.update({ rate_limit_user_per_minute: 120, login_max_attempts: 5 });
  });
});

describe('reason classes', () => {
  it('classes every reason failure-reason.ts gives into the fixed set', () => {
    const errno = (code: string, message = code) => Object.assign(new Error(message), { code });
    expect(reasonClass(200, statusReason(200))).toBe('none');
    expect(reasonClass(301, statusReason(301))).toBe('redirect');
    expect(reasonClass(404, statusReason(404))).toBe('http_4xx');
    expect(reasonClass(503, statusReason(503))).toBe('http_5xx');
    expect(reasonClass(0, timeoutReason(10_000))).toBe('timeout');
    expect(reasonClass(0, errorReason(errno('UND_ERR_CONNECT_TIMEOUT')))).toBe('timeout');
    expect(reasonClass(0, errorReason(errno('ECONNREFUSED')))).toBe('connection');
    expect(reasonClass(0, errorReason(errno('ECONNRESET')))).toBe('connection');
    expect(reasonClass(0, errorReason(errno('EHOSTUNREACH')))).toBe('connection');
    expect(reasonClass(0, errorReason(Object.assign(errno('ENOTFOUND'), { hostname: 'x.test' })))).toBe('connection');
    expect(reasonClass(0, errorReason(new Error('socket hang up')))).toBe('connection');
    expect(reasonClass(0, errorReason(errno('DEPTH_ZERO_SELF_SIGNED_CERT')))).toBe('tls');
    expect(reasonClass(0, errorReason(errno('ERR_TLS_CERT_ALTNAME_INVALID')))).toBe('tls');
    expect(reasonClass(0, errorReason(new BlockedTargetError('10.0.0.5', '10.0.0.5', 'private')))).toBe('blocked');
    expect(reasonClass(0, 'listen session ended')).toBe('connection');
    expect(reasonClass(0, 'something nobody expected')).toBe('other');
    expect(reasonClass(0, null)).toBe('other');
    expect(reasonClass(102, 'HTTP 102')).toBe('other');
  });

  it('RecentAttempts counts the last 60 s only', () => {
    const recent = new RecentAttempts();
    const t = 1_700_000_000_000;
    recent.add(t, true);
    recent.add(t + 10_000, false);
    recent.add(t + 59_000, true);
    expect(recent.lastMinute(t + 59_500)).toEqual({ attempts: 3, failures: 1 });
    expect(recent.lastMinute(t + 61_000)).toEqual({ attempts: 2, failures: 1 });
    recent.add(t + 130_000, false);
    expect(recent.lastMinute(t + 130_000)).toEqual({ attempts: 1, failures: 1 });
  });
});

describe('JSON store readiness', () => {
  it('is not ready after a failed journal write, naming only the error code, and ready again once the disk takes writes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-obs-ready-'));
    let failing = false;
    const store = await JsonStore.open(layout(dir), {
      create: true,
      fileOps: {
        sync: async (handle) => {
          if (failing) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
          return realFileOps.sync(handle);
        },
      },
    });
    try {
      expect(await store.ready()).toBeNull();
      failing = true;
      await expect(store.users.insert({ ...USER, email: 'x@example.com', role: 'customer', created_at: NOW(), updated_at: NOW() })).rejects.toThrow();
      const finding = await store.ready();
      expect(finding).toMatch(/^the last journal write failed( \(EIO\))?$/);
      expect(finding).not.toContain(dir);
      failing = false;
      expect(await store.ready()).toBeNull();
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('daemon start --metrics-port', () => {
  it('refuses a port that is not one, and --metrics-host without --metrics-port, as usage errors', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-obs-flags-'));
    try {
      const bad = await runCli(['daemon', 'start', '--data-dir', dir, '--metrics-port', 'x']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('--metrics-port must be an integer from 0 to 65535, got "x"');
      const env = await runCli(['daemon', 'start', '--data-dir', dir], { env: { PANELCTL_METRICS_PORT: '70000' } });
      expect(env.code).toBe(2);
      expect(env.stderr).toContain('--metrics-port must be an integer from 0 to 65535, got "70000"');
      const host = await runCli(['daemon', 'start', '--data-dir', dir, '--metrics-host', '0.0.0.0']);
      expect(host.code).toBe(2);
      expect(host.stderr).toContain('--metrics-host needs --metrics-port');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a metrics port in use fails the start, naming --metrics-port, and leaves no daemon behind', async () => {
    // The listener runs in its own thread: its listen error must still reach the start.
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-obs-taken-'));
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      expect((await runCli(['init', '--data-dir', dir, '--password-stdin'], { input: 'obs-password-1\n' })).code).toBe(0);
      const started = await runCli(['daemon', 'start', '--foreground', '--data-dir', dir, '--port', '0', '--metrics-port', String(port)]);
      expect(started.code).toBe(1);
      expect(started.stderr).toContain(`port ${port} is in use on 127.0.0.1: another daemon? try --metrics-port N`);
      expect(existsSync(layout(dir).stateFile)).toBe(false);
    } finally {
      await new Promise<void>((resolve) => taken.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    }
  });
});

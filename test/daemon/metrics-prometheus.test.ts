// The metrics as an operator gets them: a real Prometheus server scrapes a real daemon every
// second while it delivers webhooks that succeed and fail (loopback HTTPS receivers), and the
// counts are read back through Prometheus's query API. promtool accepts the exposition. Also,
// on the same daemon: request ids in its log lines and on pre-routing refusals, and what
// `daemon status` shows. Skips (saying why) without the `prometheus` package.
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { request } from 'undici';
import { runCli } from '../helpers/cli.js';
import { startLoggedIn, type LoggedIn } from '../helpers/daemon.js';
import { freePort, metricsUrlOf, prometheusMissing, promtoolCheck, startPrometheus, type PrometheusServer } from '../helpers/prometheus.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { customer, endpoint, publish, waitForEntries } from '../dispatcher/fixtures.js';

const missing = prometheusMissing();
if (missing) console.warn(`skipping the Prometheus tests: ${missing}`);

const EVENTS = 3;

describe.skipIf(missing !== null)('metrics scraped by a real Prometheus', { timeout: 120_000 }, () => {
  let tls: ReceiverTls;
  let ok: Receiver;
  let failing: Receiver;
  let world: LoggedIn;
  let prom: PrometheusServer;
  let metricsUrl: string;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    ok = await startReceiver(tls);
    failing = await startReceiver(tls, () => ({ status: 500, body: 'broken' }));
    world = await startLoggedIn({
      args: ['--allow-private-webhooks', '--metrics-port', '0', '--log-level', 'info'],
      env: { NODE_EXTRA_CA_CERTS: tls.caFile },
      settings: { rate_limit_mode: 'lockout' },
    });
    metricsUrl = (await metricsUrlOf(world.daemon.dataDir))!;
    expect(metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    prom = await startPrometheus([new URL(metricsUrl).host]);
    // Scraped once before anything happens, so rates see every increment that follows.
    await vi.waitFor(async () => expect(await prom.scalar('up{job="panelctl"}')).toBe(1), { timeout: 30_000, interval: 250 });
  }, 90_000);

  afterAll(async () => {
    await prom?.stop();
    await world?.daemon.dispose();
    await ok?.close();
    await failing?.close();
    await tls?.dispose();
  });

  it('counts successful and failed attempts by reason class, lag and the queue, as Prometheus reads them', async () => {
    const c = await customer(world);
    const good = await endpoint(world, c.token, { url: ok.url });
    const bad = await endpoint(world, c.token, { url: failing.url });
    const refused = await endpoint(world, c.token, { url: `https://127.0.0.1:${await freePort()}/hook` });
    for (let i = 0; i < EVENTS; i++) expect(await publish(world, 'site.created', { site_id: i + 1, domain: `m${i}.example` }, c.id)).toBe(3);
    // Each failing delivery is tried twice (the default retry after 2 s).
    await waitForEntries(world, c.token, good, EVENTS);
    await waitForEntries(world, c.token, bad, 2 * EVENTS);
    await waitForEntries(world, c.token, refused, 2 * EVENTS);

    const attempts = (outcome: string, reason: string) => `sum(panelctl_webhook_attempts_total{job="panelctl",outcome="${outcome}",reason="${reason}"})`;
    await vi.waitFor(
      async () => {
        expect(await prom.scalar(attempts('success', 'none'))).toBe(EVENTS);
        expect(await prom.scalar(attempts('failure', 'http_5xx'))).toBe(2 * EVENTS);
        expect(await prom.scalar(attempts('failure', 'connection'))).toBe(2 * EVENTS);
        expect(await prom.scalar('sum(panelctl_webhook_attempts_total{outcome="failure",reason=~"timeout|tls|blocked|redirect|other|http_4xx"})')).toBe(0);
        // The lag is observed at each delivery's first attempt.
        expect(await prom.scalar('panelctl_webhook_delivery_lag_seconds_count')).toBe(3 * EVENTS);
        expect(await prom.scalar('sum(panelctl_webhook_attempt_duration_seconds_count)')).toBe(5 * EVENTS);
        expect(await prom.scalar('panelctl_outbox_pending')).toBe(0);
        expect(await prom.scalar('panelctl_outbox_oldest_pending_age_seconds')).toBe(0);
        expect(await prom.scalar('panelctl_webhook_endpoints{state="active"}')).toBe(3);
        expect(await prom.scalar('sum(panelctl_http_requests_total{route="/api/v1/admin/events",method="POST",status="200"})')).toBe(EVENTS);
      },
      { timeout: 30_000, interval: 500 },
    );
    expect(await prom.scalar('up{job="panelctl"}')).toBe(1);
    // Percentiles as the dashboard asks for them: a number, not an error.
    await vi.waitFor(
      async () => {
        const p95 = await prom.query('histogram_quantile(0.95, sum by (le) (rate(panelctl_webhook_delivery_lag_seconds_bucket[1m])))');
        expect(p95, JSON.stringify(await prom.query('panelctl_webhook_delivery_lag_seconds_bucket'))).toHaveLength(1);
        expect(p95[0].value).toBeGreaterThan(0);
      },
      { timeout: 15_000, interval: 500 },
    );
    expect(await prom.scalar('process_resident_memory_bytes{job="panelctl"}')).toBeGreaterThan(0);
    expect(await prom.scalar('nodejs_heap_size_used_bytes{job="panelctl"}')).toBeGreaterThan(0);
    // Route templates only: no series names an endpoint's id.
    const routes = (await prom.query('panelctl_http_requests_total')).map((s) => s.metric.route);
    expect(routes).toContain('/api/v1/webhooks/:id/deliveries');
    for (const route of routes) expect(route).not.toMatch(/\/\d+(\/|$)/);
  });

  it('promtool check metrics accepts the exposition', async () => {
    const answer = await request(metricsUrl);
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const exposition = await answer.body.text();
    const check = promtoolCheck(exposition);
    expect(check.output).toBe('');
    expect(check.code).toBe(0);
    // And nothing but GET and HEAD /metrics is served there.
    expect((await request(metricsUrl.replace('/metrics', '/'))).statusCode).toBe(404);
    const post = await request(metricsUrl, { method: 'POST', body: 'x' });
    expect(post.statusCode).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    await post.body.text();
    const head = await request(metricsUrl, { method: 'HEAD' });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(await head.body.text()).toBe('');
  });

  it('X-Request-Id in the answer and as req_id in the log lines of that request, pre-routing refusals included', async () => {
    const answer = await world.daemon.request('GET', '/sites', { token: world.admin, headers: { 'x-request-id': 'trace-me-42' } });
    expect(answer.status).toBe(200);
    expect(answer.headers['x-request-id']).toBe('trace-me-42');
    await vi.waitFor(() => {
      const lines = world.daemon
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{') && l.includes('trace-me-42'))
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['incoming request', 'request completed']));
      for (const line of lines) expect(line.req_id).toBe('trace-me-42');
    });
    // Refused by the router (a broken %-escape): the envelope, with an id.
    const badUrl = await world.daemon.request('GET', '/api/v1/sites/%E0%A4%A', { token: world.admin });
    expect(badUrl.status).toBe(400);
    expect(badUrl.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    // Refused by node's HTTP parser (a control character in a header): raw bytes, with an id.
    const { hostname, port } = new URL(world.daemon.url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect({ host: hostname, port: Number(port), ca: world.daemon.ca, servername: 'localhost' }, () => {
        socket.write('GET /api/v1/health HTTP/1.1\r\nHost: localhost\r\nX-Bad: a\u0001b\r\n\r\n');
      });
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw).toMatch(/\r\nX-Request-Id: [0-9a-f-]{36}\r\n/);
  });

  it('daemon status: readiness, queue depth and age, the last minute\'s attempts, the metrics URL', async () => {
    const env = { PANELCTL_TOKEN: world.admin, PANELCTL_URL: '' };
    const result = await runCli(['daemon', 'status', '--data-dir', world.daemon.dataDir, '--json'], { env });
    expect(result.code, result.stderr).toBe(0);
    const status = JSON.parse(result.stdout);
    expect(status).toMatchObject({
      readiness: { ready: true, checks: { store: 'ok', dispatcher: 'ok' } },
      pending_deliveries: 0,
      oldest_pending_age_seconds: null,
      metrics_url: metricsUrl,
    });
    expect(status.attempts_last_minute).toBeGreaterThanOrEqual(5 * EVENTS);
    expect(status.failures_last_minute).toBeGreaterThanOrEqual(4 * EVENTS);
    const text = await runCli(['daemon', 'status', '--data-dir', world.daemon.dataDir], { env });
    expect(text.stdout).toMatch(/readiness\s+ready/);
    expect(text.stdout).toMatch(/oldest pending\s+none pending/);
    expect(text.stdout).toMatch(/last minute\s+\d+ attempts, \d+ failed \(this daemon\)/);
    expect(text.stdout).toContain(`metrics             ${metricsUrl}`);
    // --wait-ready (the systemd unit's ExecStartPost): at once when ready; exit 1 naming why when no daemon comes.
    const waited = await runCli(['daemon', 'status', '--data-dir', world.daemon.dataDir, '--wait-ready', '30'], { env });
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(/readiness\s+ready/);
    const nobody = await runCli(['daemon', 'status', '--data-dir', `${world.daemon.dataDir}/none`, '--wait-ready', '1'], { env });
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain('the daemon did not become ready within 1 s: the daemon is not running');
  });
});

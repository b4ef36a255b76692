// The webhooks commands in process against a fake API: argv → requests → lines and exit codes,
// with the retry wait of test/redeliver, the spinner on a terminal, and --follow over a fake
// event stream. The real daemon and receiver walk of this family is webhooks.test.ts.
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { useFakeApi } from './helpers.js';
import { entry } from '../tui/fixtures.js';

const ENDPOINT = {
  id: 5,
  user_id: 1,
  url: 'https://hooks.example/in',
  events: 'site.created,webhook.test',
  active: true,
  signature: 'seed',
  health: { consecutive_failures: 0, last_success_at: null, last_failure_at: null, last_failure_reason: null, success_rate: null },
  created_at: '2025-05-01T12:00:00.000Z',
  updated_at: '2025-05-01T12:00:00.000Z',
};

const { api, dir: configDir, cli } = useFakeApi({ PANELCTL_TOKEN: 'jwt' });

const echoEndpoint = (req: { body?: any }) => ({ data: { ...ENDPOINT, ...req.body, secret: undefined } });

describe('webhooks create and update', () => {
  it('create --generate-secret: a 64-hex secret sent, and shown once (in the JSON, or the record)', async () => {
    api.on('POST', '/webhooks', echoEndpoint);
    const json = await cli(['--json', 'webhooks', 'create', '--url', ENDPOINT.url, '--events', 'site.created, webhook.test', '--generate-secret']);
    expect(json.code).toBe(0);
    const sent = api.sent('POST', '/webhooks')[0].body;
    expect(sent).toEqual({ url: ENDPOINT.url, events: 'site.created, webhook.test', secret: expect.stringMatching(/^[0-9a-f]{64}$/), active: true, signature: 'seed' });
    expect(JSON.parse(json.stdout)).toMatchObject({ id: 5, secret: sent.secret });
    expect(json.stderr).toContain('shown only once');

    const human = await cli(['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*', '--generate-secret', '--signature', 'standard-webhooks']);
    const secret = api.sent('POST', '/webhooks')[1].body.secret;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(human.stdout).toContain(`secret: ${secret}`);
    expect(human.stderr).toContain('Created webhook 5');
  });

  it('create --secret-stdin --inactive: the secret from stdin is sent, never printed', async () => {
    api.on('POST', '/webhooks', echoEndpoint);
    const result = await cli(['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*', '--secret-stdin', '--inactive'], { input: 'stdin-secret-value\n' });
    expect(result.code).toBe(0);
    expect(api.sent('POST', '/webhooks')[0].body).toMatchObject({ secret: 'stdin-secret-value', active: false });
    expect(result.stdout).toMatch(/^active: no$/m);
    expect(result.stdout + result.stderr).not.toContain('stdin-secret-value');
  });

  it('secrets and flags the API would refuse are usage errors (exit 2) before any request', async () => {
    const cases = [
      ['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*'],
      ['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*', '--secret', 's', '--generate-secret'],
      ['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*', '--secret', ''],
      ['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*', '--generate-secret', '--signature', 'hmac'],
      ['webhooks', 'update', '5'],
      ['webhooks', 'update', '5', '--active', '--inactive'],
    ];
    for (const args of cases) expect((await cli(args)).code, args.join(' ')).toBe(2);
    expect((await cli(cases[0])).stderr).toContain('a signing secret is required');
    expect((await cli(cases[4])).stderr).toContain('nothing to change');
    expect(api.requests).toEqual([]);
  });

  it('update --generate-secret rotates with the scheme the endpoint has; --url/--events/--inactive go in one PUT', async () => {
    api.on('GET', '/webhooks/5', { data: { ...ENDPOINT, signature: 'standard-webhooks' } });
    api.on('PUT', '/webhooks/5', echoEndpoint);
    const rotated = await cli(['--json', 'webhooks', 'update', '5', '--generate-secret', '--events', '*']);
    const [first] = api.sent('PUT', '/webhooks/5');
    expect(first.body).toEqual({ events: '*', secret: expect.stringMatching(/^whsec_/) });
    expect(JSON.parse(rotated.stdout).secret).toBe(first.body.secret);
    expect(rotated.stderr).toContain('shown only once');
    const human = await cli(['webhooks', 'update', '5', '--url', 'https://new.example/x', '--inactive']);
    expect(api.sent('PUT', '/webhooks/5')[1].body).toEqual({ url: 'https://new.example/x', active: false });
    expect(human.stderr).toContain('Updated webhook 5');
    expect(human.stderr).not.toContain('rotated');
  });
});

describe('webhooks list, show, enable, disable, delete', () => {
  it('list: JSON, piped rows with the health summary; show: a record; a missing one is exit 1, another user’s exit 4', async () => {
    const failing = { ...ENDPOINT, id: 6, health: { ...ENDPOINT.health, consecutive_failures: 3, success_rate: 0.4, last_failure_reason: 'HTTP 500' } };
    api.on('GET', /^\/webhooks(\?|$)/, { data: [ENDPOINT, failing] });
    api.on('GET', '/webhooks/5', { data: ENDPOINT });
    api.fail('GET', '/webhooks/7', 404, 'not found', 'webhook 7 not found');
    api.fail('GET', '/webhooks/8', 403, 'forbidden', 'not your webhook');
    expect(JSON.parse((await cli(['--json', 'webhooks', 'list'])).stdout)).toEqual([ENDPOINT, failing]);
    const rows = (await cli(['webhooks', 'list'])).stdout.trim().split('\n').map((line) => line.split('\t'));
    expect(rows.map((r) => r.slice(0, 6))).toEqual([
      ['5', ENDPOINT.url, 'site.created,webhook.test', 'yes', '-', '-'],
      ['6', ENDPOINT.url, 'site.created,webhook.test', 'yes', '3 failing · 40% ok', 'HTTP 500'],
    ]);
    const shown = await cli(['webhooks', 'show', '5']);
    expect(shown.stdout).toContain(`id: 5\nurl: ${ENDPOINT.url}\nevents: site.created,webhook.test\nactive: yes\nsignature: seed\n`);
    expect(await cli(['webhooks', 'show', '7'])).toMatchObject({ code: 1, stderr: 'panelctl: webhook 7 not found\n' });
    const other = await cli(['webhooks', 'show', '8']);
    expect(other.code).toBe(4);
    expect(other.stderr).toContain('Your account may not do this');
  });

  it('enable/disable PUT {active}; delete answers {id}', async () => {
    api.on('PUT', '/webhooks/5', echoEndpoint);
    api.on('DELETE', '/webhooks/5', { data: { id: 5 } });
    expect(JSON.parse((await cli(['--json', 'webhooks', 'enable', '5'])).stdout).active).toBe(true);
    expect((await cli(['webhooks', 'disable', '5'])).stderr).toContain(`Disabled webhook 5 (${ENDPOINT.url})`);
    expect(api.sent('PUT', '/webhooks/5').map((r) => r.body)).toEqual([{ active: true }, { active: false }]);
    expect(JSON.parse((await cli(['--json', 'webhooks', 'delete', '5'])).stdout)).toEqual({ id: 5 });
  });
});

describe('webhooks pause and resume', () => {
  it('pause/resume PUT {paused}; show and list say how many deliveries are kept', async () => {
    const kept = { ...ENDPOINT, paused: true, paused_deliveries: 5 };
    api.on('PUT', '/webhooks/5', (req: { body?: any }) => ({ data: { ...ENDPOINT, ...req.body, paused_deliveries: req.body.paused ? 5 : 0 } }));
    api.on('GET', '/webhooks/5', { data: kept });
    api.on('GET', /^\/webhooks(\?|$)/, { data: [kept, { ...ENDPOINT, id: 6, paused: false, paused_deliveries: 0 }] });
    expect((await cli(['webhooks', 'pause', '5'])).stderr).toContain(`Paused webhook 5 (${ENDPOINT.url}): 5 deliveries kept`);
    expect(JSON.parse((await cli(['--json', 'webhooks', 'resume', '5'])).stdout)).toMatchObject({ id: 5, paused: false, paused_deliveries: 0 });
    expect(api.sent('PUT', '/webhooks/5').map((r) => r.body)).toEqual([{ paused: true }, { paused: false }]);
    expect((await cli(['webhooks', 'show', '5'])).stdout).toContain('signature: seed\npaused: yes (5 kept)\n');
    const rows = (await cli(['webhooks', 'list'])).stdout.trim().split('\n').map((line) => line.split('\t'));
    expect(rows.map((r) => [r[0], r.at(-1)])).toEqual([
      ['5', 'yes (5 kept)'],
      ['6', 'no'],
    ]);
  });

  it('create --paused sends paused: true; without it, no paused field', async () => {
    api.on('POST', '/webhooks', echoEndpoint);
    await cli(['webhooks', 'create', '--url', ENDPOINT.url, '--events', 'site.created', '--secret', 's3cret-s3cret', '--paused']);
    await cli(['webhooks', 'create', '--url', ENDPOINT.url, '--events', 'site.created', '--secret', 's3cret-s3cret']);
    const [paused, plain] = api.sent('POST', '/webhooks').map((r) => r.body);
    expect(paused).toMatchObject({ paused: true });
    expect(plain).not.toHaveProperty('paused');
  });
});

describe('webhooks test and redeliver', () => {
  it('test: posts the message; a delivered first attempt is one line and exit 0', async () => {
    api.on('POST', '/webhooks/5/test', { data: entry({ id: 30, endpoint_id: 5, event: 'webhook.test' }) });
    const result = await cli(['webhooks', 'test', '5', '--message', 'hello']);
    expect(api.sent('POST', '/webhooks/5/test')[0].body).toEqual({ message: 'hello' });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\S+\t✓\tHTTP 200\twebhook\.test\twebhook 5\tentry 30\tattempt 1\t42 ms\td-30\n$/);
    expect(result.stderr).toContain('test delivery delivered (HTTP 200, attempt 1)');
  });

  it('test: waits for the retry of a failed first attempt (spinner on a terminal), exit 0 when it is delivered', async () => {
    const first = entry({ id: 31, endpoint_id: 5, event: 'webhook.test', success: false, status_code: 500, response: 'nope' });
    const retry = entry({ id: 32, endpoint_id: 5, event: 'webhook.test', delivery_id: first.delivery_id, attempt: 2 });
    api.on('POST', '/webhooks/5/test', { data: first });
    let reads = 0;
    api.on('GET', '/webhooks/5/deliveries', () => ({ data: ++reads < 2 ? [first] : [retry, first] }));
    const result = await cli(['webhooks', 'test', '5'], { tty: true, env: { NO_COLOR: '1' } });
    expect(result.code).toBe(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/✗\s+HTTP 500 \(nope\)\s+webhook\.test\s.*attempt 1/);
    expect(lines[1]).toMatch(/✓\s+HTTP 200\s+webhook\.test\s.*attempt 2/);
    expect(result.stderr).toMatch(/[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] attempt 1 failed; waiting for the retry…/);
    expect(result.stderr).toContain('test delivery delivered (HTTP 200, attempt 2)');
  });

  it('test --json: a delivery that failed twice is exit 1, the last attempt as JSON, the reason and its advice in the error envelope on stderr', async () => {
    const first = entry({ id: 33, endpoint_id: 5, success: false, status_code: 0, response: '', reason: 'blocked: 127.0.0.1 is a private address' });
    api.on('POST', '/webhooks/5/test', { data: first });
    api.on('GET', '/webhooks/5/deliveries', { data: [{ ...first, id: 34, attempt: 2 }, first] });
    const result = await cli(['--json', 'webhooks', 'test', '5']);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toMatchObject({ id: 34, attempt: 2, success: false });
    expect(JSON.parse(result.stderr)).toEqual({
      data: null,
      error: 'cli error',
      message:
        'test delivery failed: no answer on attempt 2. blocked: 127.0.0.1 is a private address: for a receiver on this machine or network, start the daemon with --allow-private-webhooks (or set webhook_allow_private_networks)',
    });
  });

  it('redeliver --no-wait reports the first attempt only, saying a retry follows', async () => {
    api.on('POST', '/webhooks/5/deliveries/9/redeliver', { data: entry({ id: 35, endpoint_id: 5, success: false, status_code: 502, reason: 'HTTP 502' }) });
    api.fail('POST', '/webhooks/5/deliveries/99/redeliver', 404, 'not found', 'entry 99 not found');
    const result = await cli(['webhooks', 'redeliver', '5', '9', '--no-wait']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('redelivery failed: HTTP 502 on attempt 1 (a retry follows in 2 s; see panelctl webhooks deliveries)');
    expect(await cli(['webhooks', 'redeliver', '5', '99'])).toMatchObject({ code: 1, stderr: 'panelctl: entry 99 not found\n' });
  });

  it('recover sends the window (a duration back from now, RFC 3339 --until) and counts what was queued', async () => {
    api.on('POST', '/webhooks/5/recover', { data: { count: 2 } });
    const before = Date.now();
    const result = await cli(['webhooks', 'recover', '5', '--since', '2h', '--until', '2030-01-01T00:00:00Z']);
    const { since, until } = api.sent('POST', '/webhooks/5/recover')[0].body;
    expect(Math.abs(before - 2 * 3_600_000 - Date.parse(since))).toBeLessThan(60_000);
    expect(until).toBe('2030-01-01T00:00:00Z');
    expect(result.stderr).toContain('2 failed deliveries of webhook 5 queued again');
    expect((await cli(['webhooks', 'recover', '5'])).code).toBe(2);
  });
});

describe('webhooks deliveries', () => {
  const log = [entry({ id: 42, endpoint_id: 5 }), entry({ id: 41, endpoint_id: 5, success: false, status_code: 500, event: 'site.deleted' }), entry({ id: 40, endpoint_id: 5 })];

  it('lists newest first; --failed, --event, --since and --limit go to the API and are applied to what comes back', async () => {
    api.on('GET', /^\/webhooks\/5\/deliveries/, { data: log });
    expect(JSON.parse((await cli(['--json', 'webhooks', 'deliveries', '5'])).stdout).map((e: { id: number }) => e.id)).toEqual([42, 41, 40]);
    expect(JSON.parse((await cli(['--json', 'webhooks', 'deliveries', '5', '--failed'])).stdout).map((e: { id: number }) => e.id)).toEqual([41]);
    expect(JSON.parse((await cli(['--json', 'webhooks', 'deliveries', '5', '--event', 'site.created', '--limit', '1'])).stdout).map((e: { id: number }) => e.id)).toEqual([42]);
    expect(api.requests.map((r) => r.path)).toEqual(['/webhooks/5/deliveries', '/webhooks/5/deliveries?success=false', '/webhooks/5/deliveries?event=site.created&limit=1']);
    const none = await cli(['webhooks', 'deliveries', '5', '--since', '2099-01-01T00:00:00Z'], { tty: true, env: { NO_COLOR: '1' } });
    expect(none.stderr).toContain('no deliveries match');
  });

  it('--follow --json: the last --limit entries oldest first, then streamed ones (resuming after the newest), until the stream is refused', async () => {
    api.on('GET', '/webhooks/5', { data: ENDPOINT });
    api.on('GET', /^\/webhooks\/5\/deliveries/, { data: log });
    api.onStream(/^\/webhooks\/deliveries\/stream\?endpoint_id=5/);
    const running = cli(['--json', 'webhooks', 'deliveries', '5', '--follow', '--limit', '2']);
    const stream = await vi.waitFor(() => api.streams[0] ?? Promise.reject(new Error('no stream yet')));
    expect(stream.request.headers['last-event-id']).toBe('42');
    stream.send('delivery', entry({ id: 43, endpoint_id: 5 }), '43');
    stream.send('delivery', entry({ id: 44, endpoint_id: 9 }), '44'); // another endpoint's
    stream.send('endpoint', { endpoint: { id: 5 }, reason: 'deleted' });
    // The endpoint is gone: the next stream is refused, which ends --follow.
    api.onStream(/^\/webhooks\/deliveries\/stream/, 404, { error: 'not found', message: 'webhook 5 not found' });
    stream.end();
    const result = await running;
    expect(result.stdout.trim().split('\n').map((line) => JSON.parse(line).id)).toEqual([41, 42, 43]);
    expect(result.stderr).toContain('following deliveries of webhook 5; Ctrl-C to stop');
    expect(result.stderr).toContain('webhook 5: deleted');
    expect(result.stderr).toContain('webhook 5 not found');
    expect(result.code).toBe(1);
  });

  it('--follow of an endpoint that is not there fails at once (exit 1), without a stream', async () => {
    api.fail('GET', '/webhooks/7', 404, 'not found', 'webhook 7 not found');
    expect(await cli(['webhooks', 'deliveries', '7', '-f'])).toMatchObject({ code: 1, stdout: '', stderr: 'panelctl: webhook 7 not found\n' });
    expect(api.streams).toEqual([]);
  });
});

describe('webhooks retry schedule and cap flags', () => {
  it('create and update send --retry-schedule and --max-in-flight ("none" is no retry), and the record shows them', async () => {
    const echo = (req: { body?: any }) => ({
      data: { ...ENDPOINT, retry_schedule: [2], max_in_flight: 8, ...req.body, secret: undefined, health: { ...ENDPOINT.health, next_attempt_at: '2025-05-01T12:00:05.000Z' } },
    });
    api.on('POST', '/webhooks', echo);
    api.on('PUT', '/webhooks/5', echo);
    const created = await cli(['webhooks', 'create', '--url', ENDPOINT.url, '--events', '*', '--secret', 's', '--retry-schedule', '1, 1,2', '--max-in-flight', '1']);
    expect(created.code, created.stderr).toBe(0);
    expect(api.sent('POST', '/webhooks')[0].body).toMatchObject({ retry_schedule: [1, 1, 2], max_in_flight: 1 });
    expect(created.stdout).toMatch(/retries\s*: 1 s, 1 s, 2 s/);
    expect(created.stdout).toMatch(/max in flight\s*: 1/);
    expect(created.stdout).toMatch(/next attempt\s*: /);
    const none = await cli(['webhooks', 'update', '5', '--retry-schedule', 'none']);
    expect(none.code, none.stderr).toBe(0);
    expect(api.sent('PUT', '/webhooks/5')[0].body).toEqual({ retry_schedule: [] });
    expect(none.stdout).toMatch(/retries\s*: none/);
    for (const bad of ['', '1,,2', '1.5', 'soon']) {
      const refused = await cli(['webhooks', 'update', '5', '--retry-schedule', bad]);
      expect([bad, refused.code]).toEqual([bad, 2]);
    }
  });
});

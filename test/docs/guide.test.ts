// The integrator guide (docs/integrators.md) against the code: its error table is the error
// registry, its event table the catalogue, its limits the default settings, its code blocks
// are the example files verbatim, and those example receivers (real processes) really accept
// signed deliveries from the dispatcher (of the in-process app), deduplicate them and refuse bad
// signatures with 403.
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { exampleDelivery } from '../../src/daemon/docs/webhooks.js';
import { API_ERRORS } from '../../src/shared/errors.js';
import { EVENT_CATALOGUE, eventType } from '../../src/shared/events.js';
import { DEFAULT_SETTINGS } from '../../src/shared/settings.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { track } from '../helpers/processes.js';
import { makeReceiverTls, type ReceiverTls } from '../helpers/receiver.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const guide = await readFile(`${ROOT}docs/integrators.md`, 'utf8');

function tableRows(pattern: RegExp): RegExpMatchArray[] {
  return guide.split('\n').flatMap((line) => {
    const match = pattern.exec(line);
    return match ? [match] : [];
  });
}

describe('integrator guide', () => {
  it('lists exactly the errors of the registry', () => {
    const inGuide = tableRows(/^\| (\d{3}) \| `([^`]+)` \|/).map((m) => `${m[1]} ${m[2]}`);
    const registry = Object.values(API_ERRORS).map((e) => `${e.status} ${e.error}`);
    expect(inGuide.sort()).toEqual(registry.sort());
  });

  it('lists exactly the event catalogue with its data fields', () => {
    const inGuide = tableRows(/^\| `([a-z]+\.[a-z]+)` \| ([^|]+) \| ([^|]+) \|$/).map((m) => ({
      name: m[1],
      description: m[2].trim().replace(/`/g, '').replace('{id}', ':id'),
      fields: [...m[3].matchAll(/`([a-z_]+)`/g)].map((f) => f[1]),
    }));
    expect(inGuide).toEqual(EVENT_CATALOGUE.map((e) => ({ name: e.name, description: e.description, fields: Object.keys(e.fields) })));
  });

  it('states the default limits', () => {
    const s = DEFAULT_SETTINGS;
    expect(guide).toContain(`| \`POST /auth/login\` | ${s.rate_limit_login_per_minute} per minute per IP | \`rate_limit_login_per_minute\` |`);
    expect(guide).toContain(`| password reset | ${s.rate_limit_reset_per_minute} per minute per IP |`);
    expect(guide).toContain(`| everything else | ${s.rate_limit_user_per_minute} per minute per user |`);
    expect(guide).toContain(`${s.login_max_attempts} failed logins`);
    expect(guide).toContain(`lock that IP out of login for ${s.login_lockout_minutes} minutes`);
    expect(guide).toContain(`${s.jwt_ttl_seconds / 3600} hours by default`);
  });

  it('includes the example receivers verbatim', async () => {
    const includes = [...guide.matchAll(/<!-- include: (\S+) -->\n```\w+\n([\s\S]*?)```/g)];
    expect(includes.map((m) => m[1]).sort()).toEqual(['docs/examples/webhook-receiver.mjs', 'docs/examples/webhook_receiver.py']);
    for (const [, path, body] of includes) expect(body, path).toBe(await readFile(`${ROOT}${path}`, 'utf8'));
  });

  it('quotes the signed example of the OpenAPI document', () => {
    const { body, signature } = exampleDelivery(eventType('site.created')!);
    expect(guide).toContain(`\`${body}\``);
    expect(guide).toContain('the secret `example-endpoint-secret`');
    expect(signature).toBe(`sha256=${createHmac('sha256', 'example-endpoint-secret').update(body).digest('hex')}`);
  });
});

// ---- the example receivers, run for real ----

const SECRET = 'guide-test-secret';


interface Receiver {
  port: number;
  output(): string;
}

function startReceiver(command: string, file: string, tlsEnv: Record<string, string> = {}): Promise<Receiver> {
  // Tracked: ended with the test file, or at once if its test fails.
  const child = track(
    spawn(command, [`${ROOT}${file}`], {
      env: { ...process.env, WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1', ...tlsEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${file} did not start: ${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk;
      const match = /listening on (\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve({ port: Number(match[1]), output: () => output });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${file} exited with ${code}: ${output}`)));
  });
}

function sign(body: string, secret = SECRET): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

async function deliver(receiver: Receiver, body: string, headers: Record<string, string>) {
  const response = await fetch(`http://127.0.0.1:${receiver.port}/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': 'Panel-WebPanel-Webhook/1.0', ...headers },
    body,
  });
  return { status: response.status, text: await response.text() };
}

function until(predicate: () => boolean, what: string): Promise<void> {
  return vi.waitFor(
    () => {
      if (!predicate()) throw new Error(`timed out waiting for ${what}`);
    },
    { timeout: 30_000, interval: 20 },
  );
}

async function exerciseReceiver(receiver: Receiver) {
  const body = JSON.stringify({ event: 'site.created', timestamp: new Date().toISOString(), data: { site_id: 42, domain: 'shop.example.com' } });
  const id = randomUUID();
  const headers = { 'x-webhook-event': 'site.created', 'x-webhook-delivery': id };

  expect(await deliver(receiver, body, { ...headers, 'x-webhook-signature': sign(body) })).toEqual({ status: 200, text: 'ok' });
  await until(() => receiver.output().includes(`handled ${id} site.created`), 'the handled line');
  expect(receiver.output()).toContain(`handled ${id} site.created {"site_id":42,"domain":"shop.example.com"}`);

  // The retry of a handled delivery: acknowledged, not handled twice.
  expect(await deliver(receiver, body, { ...headers, 'x-webhook-signature': sign(body) })).toEqual({ status: 200, text: 'duplicate' });

  // Bad signatures: tampered body, another secret, none, not hex, wrong length.
  const tampered = body.replace('42', '43');
  expect((await deliver(receiver, tampered, { ...headers, 'x-webhook-delivery': randomUUID(), 'x-webhook-signature': sign(body) })).status).toBe(403);
  expect((await deliver(receiver, body, { ...headers, 'x-webhook-delivery': randomUUID(), 'x-webhook-signature': sign(body, 'other') })).status).toBe(403);
  expect((await deliver(receiver, body, { ...headers, 'x-webhook-delivery': randomUUID() })).status).toBe(403);
  expect((await deliver(receiver, body, { ...headers, 'x-webhook-delivery': randomUUID(), 'x-webhook-signature': `sha256=${'z'.repeat(64)}` })).status).toBe(403);
  expect((await deliver(receiver, body, { ...headers, 'x-webhook-delivery': randomUUID(), 'x-webhook-signature': 'sha256=abc' })).status).toBe(403);

  // Exactly one handled line before the marker (a later valid delivery, handled in turn):
  // neither the duplicate nor the refused requests were processed.
  const marker = randomUUID();
  expect(await deliver(receiver, body, { ...headers, 'x-webhook-delivery': marker, 'x-webhook-signature': sign(body) })).toEqual({ status: 200, text: 'ok' });
  await until(() => receiver.output().includes(`handled ${marker} `), 'the marker line');
  expect(receiver.output().match(/^handled /gm)).toHaveLength(2);
  expect(receiver.output().match(new RegExp(`^handled ${id} `, 'gm'))).toHaveLength(1);
}

const python = await new Promise<boolean>((resolve) => {
  const probe = spawn('python3', ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'], { stdio: 'ignore' });
  probe.on('error', () => resolve(false));
  probe.on('exit', (code) => resolve(code === 0));
});
if (!python) console.warn('skipping the Python receiver example: python3 (>= 3.10) not found');

describe('example webhook receivers', () => {
  it('Node: verifies, deduplicates, refuses bad signatures with 403', async () => {
    await exerciseReceiver(await startReceiver(process.execPath, 'docs/examples/webhook-receiver.mjs'));
  });

  it.skipIf(!python)('Python: verifies, deduplicates, refuses bad signatures with 403', async () => {
    await exerciseReceiver(await startReceiver('python3', 'docs/examples/webhook_receiver.py'));
  });
});

describe('example webhook receivers take real deliveries from the daemon', () => {
  let daemon: TestApp;
  let admin: string;
  let tls: ReceiverTls;
  let tlsDir: string;
  let tlsEnv: Record<string, string>;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    tlsDir = await mkdtemp(join(tmpdir(), 'panelctl-guide-tls-'));
    tlsEnv = { TLS_CERT: join(tlsDir, 'cert.pem'), TLS_KEY: join(tlsDir, 'key.pem') };
    await writeFile(tlsEnv.TLS_CERT, tls.cert);
    await writeFile(tlsEnv.TLS_KEY, tls.key, { mode: 0o600 });
    daemon = await buildTestApp({ allowPrivateWebhooks: true, webhookCa: [tls.cert] });
    admin = await daemon.login();
  }, 60_000);
  afterAll(async () => {
    await daemon?.close();
    await tls?.dispose();
    if (tlsDir) await rm(tlsDir, { recursive: true, force: true });
  });

  async function realDeliveries(receiver: Receiver) {
    const url = `https://127.0.0.1:${receiver.port}/panel`;
    const endpoint = async (secret: string) => {
      const created = await daemon.request('POST', '/webhooks', { token: admin, body: { url, secret, events: '*' } });
      expect(created.status, created.text).toBe(201);
      return created.body.data.id as number;
    };
    // The right secret: accepted and handled once.
    const good = await endpoint(SECRET);
    const test = await daemon.request('POST', `/webhooks/${good}/test`, { token: admin, body: { message: 'from the guide test' } });
    expect(test.status, test.text).toBe(200);
    expect(test.body.data).toMatchObject({ success: true, status_code: 200, response: 'ok', attempt: 1 });
    const id = test.body.data.delivery_id;
    await until(() => receiver.output().includes(`handled ${id} webhook.test`), 'the handled line');
    expect(receiver.output()).toContain(`handled ${id} webhook.test {"message":"from the guide test"}`);

    // Another secret: the receiver answers 403 and the daemon logs a failed attempt.
    const bad = await endpoint('not-the-receivers-secret');
    const refused = await daemon.request('POST', `/webhooks/${bad}/test`, { token: admin });
    expect(refused.status, refused.text).toBe(200);
    expect(refused.body.data).toMatchObject({ success: false, status_code: 403, response: 'bad signature' });
    expect(receiver.output().match(/^handled /gm)).toHaveLength(1);
  }

  /**
   * A rotation seen by the examples: one receiver holding only the old secret and one holding
   * only the new both accept a test delivery during the overlap; without an overlap the old one
   * refuses it (so the previous signature is what it accepted).
   */
  async function rotation(command: string, file: string) {
    const NEW = 'guide-test-secret-after-rotation';
    const oldOnly = await startReceiver(command, file, tlsEnv);
    const newOnly = await startReceiver(command, file, { ...tlsEnv, WEBHOOK_SECRET: NEW });
    const created = await daemon.request('POST', '/webhooks', { token: admin, body: { url: `https://127.0.0.1:${oldOnly.port}/panel`, secret: SECRET, events: '*' } });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.id as number;
    const rotated = await daemon.request('POST', `/webhooks/${id}/rotate-secret`, { token: admin, body: { secret: NEW, overlap_seconds: 3600 } });
    expect(rotated.status, rotated.text).toBe(200);
    for (const receiver of [oldOnly, newOnly]) {
      const moved = await daemon.request('PUT', `/webhooks/${id}`, { token: admin, body: { url: `https://127.0.0.1:${receiver.port}/panel` } });
      expect(moved.status, moved.text).toBe(200);
      const test = await daemon.request('POST', `/webhooks/${id}/test`, { token: admin, body: { message: 'during the overlap' } });
      expect(test.body.data, `the receiver on ${receiver.port}`).toMatchObject({ success: true, status_code: 200, response: 'ok' });
      const deliveryId = test.body.data.delivery_id;
      await until(() => receiver.output().includes(`handled ${deliveryId} webhook.test`), 'the handled line');
    }
    const ended = await daemon.request('POST', `/webhooks/${id}/rotate-secret`, { token: admin, body: { secret: 'a-third-secret', overlap_seconds: 0 } });
    expect(ended.status, ended.text).toBe(200);
    const refused = await daemon.request('POST', `/webhooks/${id}/test`, { token: admin });
    expect(refused.body.data).toMatchObject({ success: false, status_code: 403, response: 'bad signature' });
  }

  it('Node receiver over HTTPS', async () => {
    await realDeliveries(await startReceiver(process.execPath, 'docs/examples/webhook-receiver.mjs', tlsEnv));
  });

  it.skipIf(!python)('Python receiver over HTTPS', async () => {
    await realDeliveries(await startReceiver('python3', 'docs/examples/webhook_receiver.py', tlsEnv));
  });

  it('Node receiver accepts either signature during a secret rotation', async () => {
    await rotation(process.execPath, 'docs/examples/webhook-receiver.mjs');
  });

  it.skipIf(!python)('Python receiver accepts either signature during a secret rotation', async () => {
    await rotation('python3', 'docs/examples/webhook_receiver.py');
  });
});

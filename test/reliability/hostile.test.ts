// Hostile receivers: one that never answers, one that trickles its body forever, one that
// answers 50 MB, one that resets the connection, one that redirects to a private address.
// The 10 s limit and the 4 KB cap hold, memory stays bounded, and a healthy endpoint's
// deliveries are not held up by them.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { makeCa, ok, startReceiver, type Receiver } from './receivers.js';

let daemon: TestDaemon;
let token: string;
const receivers: Record<string, Receiver> = {};
const endpoints: Record<string, number> = {};
const timers: NodeJS.Timeout[] = [];

async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

beforeAll(async () => {
  const ca = await makeCa();
  receivers.silent = await startReceiver(ca, () => undefined);
  receivers.trickle = await startReceiver(ca, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    const timer = setInterval(() => res.write('.'), 200);
    timers.push(timer);
    res.on('close', () => clearInterval(timer));
  });
  receivers.huge = await startReceiver(ca, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(50 * 1024 * 1024) });
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    const pump = () => {
      while (sent < 50 * 1024 * 1024) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    pump();
  });
  receivers.reset = await startReceiver(ca, (req) => req.socket.destroy());
  receivers.redirect = await startReceiver(ca, (_req, res) => res.writeHead(302, { location: 'https://10.0.0.1/steal' }).end());
  receivers.healthy = await startReceiver(ca, ok);

  daemon = await startDaemon({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: ca.caFile } });
  token = await daemon.login();
  await daemon.request('PUT', '/admin/settings', { token, body: { rate_limit_mode: 'lockout' } });
  for (const [name, receiver] of Object.entries(receivers)) {
    const created = await daemon.request('POST', '/webhooks', { token, body: { url: receiver.url, secret: `secret-${name}`, events: 'backup.completed' } });
    expect(created.status, created.text).toBe(201);
    endpoints[name] = created.body.data.id;
  }
}, 60_000);

afterAll(async () => {
  timers.forEach(clearInterval);
  await daemon?.dispose();
  await Promise.all(Object.values(receivers).map((r) => r.close()));
});

async function firstAttempt(name: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const log = await daemon.request('GET', `/webhooks/${endpoints[name]}/deliveries`, { token });
    const entry = (log.body.data as any[]).find((e) => e.attempt === 1);
    if (entry) return entry;
    if (Date.now() > deadline) throw new Error(`no attempt logged for ${name}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('hostile receivers', () => {
  it('bounds every attempt by 10 s and 4 KB, keeps memory bounded, and does not delay a healthy endpoint', async () => {
    const published = Date.now();
    const event = await daemon.request('POST', '/admin/events', { token, body: { event: 'backup.completed', data: { schedule_id: 1, name: 'nightly' } } });
    expect(event.status).toBe(200);
    expect(event.body.data.deliveries).toBe(6);

    // The healthy endpoint gets its delivery at once, while the others hang.
    const healthy = await firstAttempt('healthy', 5_000);
    expect(healthy.success).toBe(true);
    expect(receivers.healthy.received[0].at - published).toBeLessThan(2_000);

    const [silent, trickle, huge, reset, redirect] = await Promise.all(
      ['silent', 'trickle', 'huge', 'reset', 'redirect'].map((name) => firstAttempt(name, 15_000)),
    );
    const elapsed = Date.now() - published;
    expect(elapsed).toBeLessThan(13_000);

    expect(silent).toMatchObject({ success: false, status_code: 0 });
    expect(silent.duration_ms).toBeGreaterThanOrEqual(9_500);
    expect(silent.duration_ms).toBeLessThan(11_500);

    expect(trickle.success).toBe(false);
    expect(trickle.duration_ms).toBeGreaterThanOrEqual(9_500);
    expect(trickle.duration_ms).toBeLessThan(11_500);
    expect(Buffer.byteLength(trickle.response)).toBeLessThanOrEqual(4096);

    expect(huge.status_code).toBe(200);
    expect(Buffer.byteLength(huge.response)).toBeLessThanOrEqual(4096);
    expect(huge.duration_ms).toBeLessThan(5_000);

    expect(reset).toMatchObject({ success: false, status_code: 0 });
    expect(redirect).toMatchObject({ success: false, status_code: 302 });
    // Not followed: only the endpoint itself is asked (attempt 1 and its retry), each answer logged as 302.
    expect(receivers.redirect.received.length).toBeGreaterThanOrEqual(1);
    expect(receivers.redirect.received.length).toBeLessThanOrEqual(2);

    const rss = await peakRssMb(daemon.proc.pid!);
    console.log(`hostile receivers: daemon peak RSS ${rss.toFixed(0)} MB`);
    expect(rss).toBeLessThan(300);
    expect((await daemon.request('GET', '/health')).status).toBe(200);
  }, 40_000);
});

// Hostile receivers: one that never answers, one that trickles its body forever, one that
// answers 50 MB, one that resets the connection, one that redirects to a private address.
// The 10 s limit and the 4 KB cap hold, memory stays bounded, and a healthy endpoint's
// deliveries are not held up by them.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startLoggedIn, type TestDaemon } from '../helpers/daemon.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';

let daemon: TestDaemon;
let token: string;
const receivers: Record<string, Receiver> = {};
const endpoints: Record<string, number> = {};
let tls: ReceiverTls;

async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)![1]) / 1024;
}

beforeAll(async () => {
  tls = await makeReceiverTls();
  receivers.silent = await startReceiver(tls, () => ({ never: true }));
  receivers.trickle = await startReceiver(tls, () => ({ endless: true, body: '.' }));
  receivers.huge = await startReceiver(tls, () => ({ raw: (res) => {
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
  } }));
  receivers.reset = await startReceiver(tls, () => ({ reset: true }));
  receivers.redirect = await startReceiver(tls, () => ({ status: 302, headers: { location: 'https://10.0.0.1/steal' }, body: '' }));
  receivers.healthy = await startReceiver(tls);

  ({ daemon, admin: token } = await startLoggedIn({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: tls.caFile } }));
  await daemon.request('PUT', '/admin/settings', { token, body: { rate_limit_mode: 'lockout' } });
  for (const [name, receiver] of Object.entries(receivers)) {
    const created = await daemon.request('POST', '/webhooks', { token, body: { url: receiver.url, secret: `secret-${name}`, events: 'backup.completed' } });
    expect(created.status, created.text).toBe(201);
    endpoints[name] = created.body.data.id;
  }
}, 60_000);

afterAll(async () => {
  await daemon?.dispose();
  await Promise.all(Object.values(receivers).map((r) => r.close()));
  await tls?.dispose();
});

function firstAttempt(name: string, timeoutMs: number) {
  return vi.waitFor(
    async () => {
      const log = await daemon.request('GET', `/webhooks/${endpoints[name]}/deliveries`, { token });
      const entry = (log.body.data as any[]).find((e) => e.attempt === 1);
      if (!entry) throw new Error(`no attempt logged for ${name}`);
      return entry;
    },
    { timeout: timeoutMs, interval: 200 },
  );
}

describe('hostile receivers', () => {
  it('bounds every attempt by 10 s and 4 KB, keeps memory bounded, and does not delay a healthy endpoint', async () => {
    const published = Date.now();
    const event = await daemon.request('POST', '/admin/events', { token, body: { event: 'backup.completed', data: { schedule_id: 1, name: 'nightly' } } });
    expect(event.status).toBe(200);
    expect(event.body.data.deliveries).toBe(6);

    // The healthy endpoint gets its delivery while the others hang: it is answered and logged
    // before the silent receiver's attempt (held to its 10 s limit) has even ended.
    const healthy = await firstAttempt('healthy', 30_000);
    expect(healthy.success).toBe(true);
    expect(receivers.healthy.requests[0].at).toBeGreaterThanOrEqual(published - 1);

    const [silent, trickle, huge, reset, redirect] = await Promise.all(
      ['silent', 'trickle', 'huge', 'reset', 'redirect'].map((name) => firstAttempt(name, 45_000)),
    );
    const ended = (entry: { created_at: string; duration_ms: number }) => Date.parse(entry.created_at) + entry.duration_ms;
    expect(ended(healthy)).toBeLessThan(ended(silent));

    // Each hanging attempt is cut at its 10 s limit: not sooner, and bounded (generously, since a
    // busy machine fires the timer late; without the limit they would hang for good).
    expect(silent).toMatchObject({ success: false, status_code: 0 });
    expect(silent.duration_ms).toBeGreaterThanOrEqual(9_500);
    expect(silent.duration_ms).toBeLessThan(20_000);

    expect(trickle.success).toBe(false);
    expect(trickle.duration_ms).toBeGreaterThanOrEqual(9_500);
    expect(trickle.duration_ms).toBeLessThan(20_000);
    expect(Buffer.byteLength(trickle.response)).toBeLessThanOrEqual(4096);

    expect(huge.status_code).toBe(200);
    expect(Buffer.byteLength(huge.response)).toBeLessThanOrEqual(4096);
    expect(huge.duration_ms).toBeLessThan(9_500); // it stopped reading rather than waiting for the limit

    expect(reset).toMatchObject({ success: false, status_code: 0 });
    expect(redirect).toMatchObject({ success: false, status_code: 302 });
    // Not followed: only the endpoint itself is asked (attempt 1 and its retry), each answer logged as 302.
    expect(receivers.redirect.requests.length).toBeGreaterThanOrEqual(1);
    expect(receivers.redirect.requests.length).toBeLessThanOrEqual(2);

    const rss = await peakRssMb(daemon.proc.pid!);
    console.log(`hostile receivers: daemon peak RSS ${rss.toFixed(0)} MB`);
    expect(rss).toBeLessThan(300);
    expect((await daemon.request('GET', '/health')).status).toBe(200);
  }, 90_000);
});

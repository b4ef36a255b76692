// Soak: SOAK_SECONDS (default 600) of mixed load — API reads and writes, events to a healthy
// and a failing receiver, live streams opened and dropped — while the daemon's RSS and open
// file descriptors are sampled. Neither may show a growth trend. Run with `npm run soak`.
import { readdir, readFile } from 'node:fs/promises';
import { request, Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { makeCa, ok, startReceiver, type Receiver } from '../reliability/receivers.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
let daemon: TestDaemon;
let token: string;
const receivers: Receiver[] = [];

async function sample(pid: number) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rss = Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) / 1024;
  const fds = (await readdir(`/proc/${pid}/fd`)).length;
  return { rss, fds };
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, p) => s + p[0], 0) / n;
  const my = points.reduce((s, p) => s + p[1], 0) / n;
  const num = points.reduce((s, p) => s + (p[0] - mx) * (p[1] - my), 0);
  const den = points.reduce((s, p) => s + (p[0] - mx) ** 2, 0);
  return den === 0 ? 0 : num / den;
}

beforeAll(async () => {
  const ca = await makeCa();
  receivers.push(await startReceiver(ca, ok));
  receivers.push(await startReceiver(ca, (_req, res) => res.writeHead(500).end('no')));
  daemon = await startDaemon({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: ca.caFile } });
  token = await daemon.login();
  await daemon.request('PUT', '/admin/settings', { token, body: { rate_limit_mode: 'lockout' } });
  for (const r of receivers) await daemon.request('POST', '/webhooks', { token, body: { url: r.url, secret: 'soak', events: '*' } });
  await daemon.request('POST', '/admin/users', { token, body: { email: 'soak@example.com', name: 'Soak', password: 'soak-password', role: 'customer' } });
}, 60_000);

afterAll(async () => {
  await daemon?.dispose();
  await Promise.all(receivers.map((r) => r.close()));
});

describe('soak', () => {
  it(`runs ${SECONDS} s of mixed load without RSS or handle growth`, async () => {
    const end = Date.now() + SECONDS * 1000;
    const samples: Array<{ t: number; rss: number; fds: number }> = [];
    const sampler = setInterval(async () => {
      samples.push({ t: Date.now(), ...(await sample(daemon.proc.pid!)) });
    }, 5000);
    const agent = new Agent({ connect: { ca: daemon.ca } });
    let n = 0;
    let errors = 0;
    const loop = async (step: () => Promise<void>) => {
      while (Date.now() < end) {
        try {
          await step();
        } catch {
          errors++;
        }
      }
    };
    await Promise.all([
      loop(async () => void (await daemon.request('GET', '/admin/users', { token }))),
      loop(async () => {
        const i = ++n;
        await daemon.request('POST', '/admin/events', { token, body: { event: 'backup.completed', data: { schedule_id: i, name: `s${i}` } } });
        await new Promise((r) => setTimeout(r, 20));
      }),
      loop(async () => {
        const key = await daemon.request('POST', '/auth/api-keys', { token, body: { name: 'soak' } });
        await daemon.request('GET', '/events/types', { headers: { 'x-api-key': key.body.data.key } });
        await daemon.request('DELETE', `/auth/api-keys/${key.body.data.id}`, { token });
      }),
      loop(async () => {
        const controller = new AbortController();
        const res = await request(`${daemon.url}/api/v1/webhooks/deliveries/stream`, { headers: { authorization: `Bearer ${token}` }, dispatcher: agent, signal: controller.signal });
        setTimeout(() => controller.abort(), 500);
        await res.body.dump().catch(() => undefined);
      }),
    ]);
    clearInterval(sampler);
    await agent.close();
    const warm = samples.filter((s) => s.t - samples[0].t > Math.min(60_000, SECONDS * 200));
    const rssPerMinute = slope(warm.map((s) => [(s.t - warm[0].t) / 60_000, s.rss]));
    const fdPerMinute = slope(warm.map((s) => [(s.t - warm[0].t) / 60_000, s.fds]));
    const peak = Math.max(...samples.map((s) => s.rss));
    console.log(`soak: ${SECONDS} s, ${n} events, ${errors} errors, RSS ${warm[0]?.rss.toFixed(0)}→${warm.at(-1)?.rss.toFixed(0)} MB (slope ${rssPerMinute.toFixed(2)} MB/min, peak ${peak.toFixed(0)}), fds ${warm[0]?.fds}→${warm.at(-1)?.fds} (slope ${fdPerMinute.toFixed(2)}/min)`);
    expect(warm.length).toBeGreaterThan(3);
    expect(rssPerMinute).toBeLessThan(2);
    expect(fdPerMinute).toBeLessThan(1);
    expect((await daemon.request('GET', '/health')).status).toBe(200);
  }, (SECONDS + 120) * 1000);
});

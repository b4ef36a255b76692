// Soak: SOAK_SECONDS (default 600) of mixed load — API reads and writes, events to a healthy
// and a failing receiver, live streams opened and dropped — while the daemon's RSS and open
// file descriptors are sampled. It fails on any 5xx or failed request, on an acknowledged write
// missing after a crash at the end, on an accepted event not delivered (healthy endpoint) or not
// attempted to the end (failing endpoint: both attempts), and on RSS or handles that grow.
// Run with `npm run soak` (SOAK_SECONDS=60 for a short check, which skips the trend checks).
import { readdir, readFile } from 'node:fs/promises';
import { request, Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTEMPTS } from '../../src/shared/webhook-protocol.js';
import { listAll, startLoggedIn, type HttpResult, type TestDaemon } from '../helpers/daemon.js';
import { makeReceiverTls, scheduleCounter, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';

const SECONDS = Number(process.env.SOAK_SECONDS ?? 600);
/** A ceiling on the daemon's resident memory at any sample. */
const RSS_CEILING_MB = 512;
/** Trends are judged after a minute of warm-up, and only over runs long enough to show one. */
const TREND_SECONDS = 300;
let daemon: TestDaemon;
let token: string;
let tls: ReceiverTls;
let healthy: Receiver;
let failing: Receiver;

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
  tls = await makeReceiverTls();
  healthy = await startReceiver(tls);
  failing = await startReceiver(tls, () => ({ status: 500, body: 'no' }));
  ({ daemon, admin: token } = await startLoggedIn({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: tls.caFile } }));
  await daemon.request('PUT', '/admin/settings', { token, body: { rate_limit_mode: 'lockout' } });
  for (const r of [healthy, failing]) {
    const created = await daemon.request('POST', '/webhooks', { token, body: { url: r.url, secret: 'soak', events: '*' } });
    expect(created.status, created.text).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  await daemon?.dispose();
  await Promise.all([healthy, failing].map((r) => r?.close()));
  await tls?.dispose();
});

describe('soak', () => {
  it(`runs ${SECONDS} s of mixed load: no 5xx, no lost write or event, no RSS or handle growth`, async () => {
    const end = Date.now() + SECONDS * 1000;
    const samples: Array<{ t: number; rss: number; fds: number }> = [];
    const sampler = setInterval(async () => {
      samples.push({ t: Date.now(), ...(await sample(daemon.proc.pid!)) });
    }, 5000);
    const agent = new Agent({ connect: { ca: daemon.ca } });
    const failures: string[] = [];
    const answers = new Map<number, number>();
    const ackedUsers = new Set<string>();
    const ackedEvents = new Set<number>();
    let n = 0;

    /** Every answer is counted; a 5xx or an unexpected status is a failure. */
    const check = (what: string, result: HttpResult, expected: number) => {
      answers.set(result.status, (answers.get(result.status) ?? 0) + 1);
      if (result.status !== expected && failures.length < 20) failures.push(`${what}: ${result.status} ${result.text.slice(0, 200)}`);
      return result.status === expected;
    };
    const loop = async (step: () => Promise<void>) => {
      while (Date.now() < end) {
        try {
          await step();
        } catch (error) {
          if (failures.length < 20) failures.push(`request failed: ${(error as Error).message}`);
        }
      }
    };
    await Promise.all([
      loop(async () => void check('GET /admin/users', await daemon.request('GET', '/admin/users', { token }), 200)),
      loop(async () => {
        const i = ++n;
        const email = `soak-${i}@example.com`;
        const created = await daemon.request('POST', '/admin/users', { token, body: { email, name: 'Soak', password: 'soak-password', role: 'customer' } });
        if (check('POST /admin/users', created, 201)) ackedUsers.add(email);
        // One a second: enough acknowledged writes to check, while the store grows little (RSS is
        // watched for leaks, not for the data the run adds).
        await new Promise((r) => setTimeout(r, 1000));
      }),
      loop(async () => {
        const i = ++n;
        const published = await daemon.request('POST', '/admin/events', { token, body: { event: 'backup.completed', data: { schedule_id: i, name: `s${i}` } } });
        if (check('POST /admin/events', published, 200)) ackedEvents.add(i);
        await new Promise((r) => setTimeout(r, 20));
      }),
      loop(async () => {
        const key = await daemon.request('POST', '/auth/api-keys', { token, body: { name: 'soak' } });
        if (!check('POST /auth/api-keys', key, 201)) return;
        check('GET /events/types', await daemon.request('GET', '/events/types', { headers: { 'x-api-key': key.body.data.key } }), 200);
        check('DELETE /auth/api-keys', await daemon.request('DELETE', `/auth/api-keys/${key.body.data.id}`, { token }), 200);
      }),
      loop(async () => {
        const controller = new AbortController();
        const res = await request(`${daemon.url}/api/v1/webhooks/deliveries/stream`, { headers: { authorization: `Bearer ${token}` }, dispatcher: agent, signal: controller.signal });
        answers.set(res.statusCode, (answers.get(res.statusCode) ?? 0) + 1);
        if (res.statusCode !== 200 && failures.length < 20) failures.push(`GET stream: ${res.statusCode}`);
        setTimeout(() => controller.abort(), 500);
        await res.body.dump().catch(() => undefined);
      }),
    ]);
    clearInterval(sampler);
    await agent.close();

    // Every accepted event: delivered to the healthy endpoint, and attempted to the end (first
    // attempt and retry, then failed) at the failing one. One generous bound for the backlog.
    const deadline = Date.now() + 180_000;
    const good = scheduleCounter(healthy);
    const bad = scheduleCounter(failing);
    let undelivered: number[] = [];
    let unfinished: number[] = [];
    for (;;) {
      undelivered = [...ackedEvents].filter((i) => good(i) === 0);
      unfinished = [...ackedEvents].filter((i) => bad(i) < MAX_ATTEMPTS);
      if ((!undelivered.length && !unfinished.length) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const warm = samples.filter((s) => s.t - samples[0].t > 60_000);
    const rssPerMinute = slope(warm.map((s) => [(s.t - warm[0].t) / 60_000, s.rss]));
    const fdPerMinute = slope(warm.map((s) => [(s.t - warm[0].t) / 60_000, s.fds]));
    const peak = Math.max(...samples.map((s) => s.rss));

    // Acknowledged writes survive a crash: SIGKILL, start again, read them back.
    daemon = await daemon.restart();
    token = await daemon.login();
    const present = new Set((await listAll<{ email: string }>(daemon, '/admin/users', token)).map((u) => u.email));
    const lost = [...ackedUsers].filter((email) => !present.has(email));

    const statusLine = [...answers].sort(([a], [b]) => a - b).map(([status, count]) => `${status}×${count}`).join(' ');
    console.log(
      `soak: ${SECONDS} s; answers ${statusLine}; ${failures.length} failures; ${ackedUsers.size} users acknowledged, ${lost.length} lost; ` +
        `${ackedEvents.size} events accepted, ${undelivered.length} undelivered, ${unfinished.length} not attempted to the end; ` +
        (warm.length > 1
          ? `RSS ${warm[0].rss.toFixed(0)}→${warm.at(-1)!.rss.toFixed(0)} MB (slope ${rssPerMinute.toFixed(2)} MB/min, peak ${peak.toFixed(0)}), ` +
            `fds ${warm[0].fds}→${warm.at(-1)!.fds} (slope ${fdPerMinute.toFixed(2)}/min)`
          : `RSS peak ${peak.toFixed(0)} MB (too short for trends after the minute of warm-up)`),
    );
    expect(failures, 'failed requests and unexpected statuses (5xx included)').toEqual([]);
    expect([...answers.keys()].filter((status) => status >= 500), '5xx answers').toEqual([]);
    expect(lost, 'acknowledged users missing after the crash').toEqual([]);
    expect(undelivered.slice(0, 20), 'accepted events never delivered to the healthy endpoint').toEqual([]);
    expect(unfinished.slice(0, 20), 'accepted events not attempted to the end at the failing endpoint').toEqual([]);
    expect(ackedUsers.size).toBeGreaterThan(0);
    expect(ackedEvents.size).toBeGreaterThan(0);
    expect(peak).toBeLessThan(RSS_CEILING_MB);
    if (SECONDS >= TREND_SECONDS) {
      expect(warm.length).toBeGreaterThan(3);
      expect(rssPerMinute).toBeLessThan(2);
      expect(fdPerMinute).toBeLessThan(1);
    }
    expect((await daemon.request('GET', '/health')).status).toBe(200);
  }, (SECONDS + 300) * 1000);
});

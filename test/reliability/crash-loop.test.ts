// Crash loop: rounds of SIGKILL at a random moment under mixed load (API writes, events to a
// succeeding and a first-attempt-failing receiver). After each restart every acknowledged
// write is present and the store parses; at the end every accepted event's deliveries have
// completed at least once, including retries that were pending at a kill.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { listAll, startLoggedIn, type TestDaemon } from '../helpers/daemon.js';
import { makeReceiverTls, scheduleCounter, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';

// `npm test` runs a short loop; `npm run soak` runs the full 20 rounds.
const ROUNDS = Number(process.env.CRASH_ROUNDS ?? 6);

let daemon: TestDaemon;
let token: string;
let good: Receiver;
let flaky: Receiver;
let tls: ReceiverTls;
const ackedUsers = new Set<string>();
const ackedEvents = new Set<number>();
let lostWrites = 0;

beforeAll(async () => {
  tls = await makeReceiverTls();
  good = await startReceiver(tls);
  // Fails the first attempt of every delivery, so each one needs its retry.
  const seen = new Set<string>();
  flaky = await startReceiver(tls, (request) => {
    const id = String(request.headers['x-webhook-delivery']);
    if (seen.has(id)) return {};
    seen.add(id);
    return { status: 500, body: 'try again' };
  });
  ({ daemon, admin: token } = await startLoggedIn({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: tls.caFile }, keep: true }));
  await daemon.request('PUT', '/admin/settings', { token, body: { rate_limit_mode: 'lockout', login_max_attempts: 1000 } });
  for (const receiver of [good, flaky]) {
    const created = await daemon.request('POST', '/webhooks', { token, body: { url: receiver.url, secret: 'crash-secret', events: 'backup.completed' } });
    expect(created.status, created.text).toBe(201);
  }
}, 60_000);

afterAll(async () => {
  console.log(`crash loop: ${ROUNDS} rounds, ${ackedUsers.size} user writes and ${ackedEvents.size} events acknowledged, ${lostWrites} lost`);
  await daemon?.dispose();
  await good?.close();
  await flaky?.close();
  await tls?.dispose();
});

describe('crash loop', () => {
  it(`survives ${ROUNDS} SIGKILLs under load without losing acknowledged work`, async () => {
    let seq = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      let stop = false;
      const worker = async (kind: 'user' | 'event') => {
        while (!stop) {
          const n = ++seq;
          try {
            if (kind === 'user') {
              const email = `crash-${n}@example.com`;
              const res = await daemon.request('POST', '/admin/users', { token, body: { email, name: 'Crash', password: 'crash-password', role: 'customer' } });
              if (res.status === 201) ackedUsers.add(email);
            } else {
              const res = await daemon.request('POST', '/admin/events', { token, body: { event: 'backup.completed', data: { schedule_id: n, name: `b${n}` } } });
              if (res.status === 200) ackedEvents.add(n);
            }
          } catch {
            // The connection died with the daemon: not acknowledged. Yield to timers so a
            // loop of instantly failing requests cannot starve the restart.
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      };
      const workers = [worker('user'), worker('user'), worker('event'), worker('event'), worker('event')];
      await new Promise((r) => setTimeout(r, 150 + Math.random() * 700));
      daemon = await daemon.restart(); // SIGKILL at a random moment, then start again
      stop = true;
      await Promise.all(workers);

      const present = new Set((await listAll<{ email: string }>(daemon, '/admin/users', token)).map((u) => u.email));
      const missing = [...ackedUsers].filter((email) => !present.has(email));
      lostWrites += missing.length;
      expect(missing, `round ${round}: acknowledged users missing after SIGKILL`).toEqual([]);
    }

    // Every accepted event reaches the healthy receiver and, after its retry, the flaky one.
    const goodHits = scheduleCounter(good);
    const flakyHits = scheduleCounter(flaky);
    await vi.waitFor(
      () => {
        const pending = [...ackedEvents].filter((n) => goodHits(n) < 1 || flakyHits(n) < 2);
        expect(pending, 'accepted events whose deliveries never completed').toEqual([]);
      },
      { timeout: 90_000, interval: 50 },
    );
    expect(ackedEvents.size).toBeGreaterThan(ROUNDS);
  }, 300_000);
});

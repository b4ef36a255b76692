// The dispatcher's own work per delivery, without network, TLS or HTTP: one process per run
// opens a JSON store in a temporary directory, runs the Dispatcher with a sender that answers
// 200 on the next turn, and publishes EVENTS events to 10 endpoints through the EventBus (32 at
// once), ROUNDS times; it reports the process's CPU time per delivery (the first round is a
// warm-up). With a second build's directory, runs of the two alternate, so both meet the same
// load from the rest of the machine; the figure to compare is the median of the paired ratios.
// Not part of `npm run bench`; it needs `npm run build` (it loads dist/).
//   node test/bench/dispatch-inproc.mjs [ROOT] [OTHER_ROOT] [--runs=6] [--rounds=4]
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const EVENTS = 1000;
const ENDPOINTS = 10;
const args = process.argv.slice(2);
const flag = (name, fallback) => Number(args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? fallback);
const roots = args.filter((a) => !a.startsWith('--')).map((r) => resolve(r));

/** One run in this process: CPU µs per delivery of each round after the first. */
async function run(root, rounds) {
  const { Dispatcher } = await import(join(root, 'dist/daemon/dispatcher/dispatcher.js'));
  const { EventBus } = await import(join(root, 'dist/daemon/dispatcher/bus.js'));
  const { openStore } = await import(join(root, 'dist/store/factory.js'));
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-inproc-'));
  const store = await openStore({ dataDir: dir, create: true });
  const now = () => Date.now();
  const answer = { status_code: 200, response: 'ok', success: true, duration_ms: 1, reason: null };
  const sender = { send: () => new Promise((done) => setImmediate(done, { ...answer })), close: async () => undefined };
  const dispatcher = new Dispatcher({ store, clock: now, sender, allowPrivate: () => true });
  let made = 0;
  let waiting = null;
  dispatcher.onAttempt(() => {
    made++;
    if (waiting && made >= waiting.count) waiting.resolve();
  });
  const at = new Date().toISOString();
  const user = await store.users.insert({ email: 'bench@example.test', name: 'bench', role: 'customer', password_hash: 'x', totp_secret: null, totp_pending_secret: null, two_factor_enabled: false, totp_last_step: null, created_at: at, updated_at: at });
  for (let i = 0; i < ENDPOINTS; i++) await store.webhooks.insert({ user_id: user.id, url: `https://receiver.test/${i}`, secret: `secret-${i}`, events: '*', active: true, created_at: at, updated_at: at });
  const events = new EventBus(store, now);
  dispatcher.start();
  const cpu = [];
  try {
    for (let round = 0; round < rounds; round++) {
      made = 0;
      const count = EVENTS * ENDPOINTS;
      const all = new Promise((resolve) => (waiting = { count, resolve }));
      const before = process.cpuUsage();
      let next = 0;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          while (next < EVENTS) {
            const i = next++;
            await events.publish({ event: 'site.created', data: { site_id: i + 1, domain: `e${i}.example.com` }, owner_id: user.id });
          }
        }),
      );
      await all;
      const used = process.cpuUsage(before);
      cpu.push((used.user + used.system) / count);
    }
  } finally {
    await dispatcher.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
  return cpu.slice(1);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

if (process.env.DISPATCH_INPROC_CHILD) {
  process.stdout.write(JSON.stringify(await run(process.env.DISPATCH_INPROC_CHILD, flag('rounds', 4))));
} else {
  const builds = roots.length ? roots : [fileURLToPath(new URL('../../', import.meta.url))];
  const runs = flag('runs', 6);
  const results = builds.map(() => []);
  for (let i = 0; i < runs; i++) {
    // Which build goes first alternates.
    const order = i % 2 === 0 ? builds.map((_, b) => b) : builds.map((_, b) => builds.length - 1 - b);
    for (const b of order) {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), ...args], { env: { ...process.env, DISPATCH_INPROC_CHILD: builds[b] }, encoding: 'utf8' });
      if (child.status !== 0) throw new Error(`run of ${builds[b]} failed: ${child.stderr}`);
      results[b].push(median(JSON.parse(child.stdout)));
    }
    process.stderr.write(`run ${i + 1}: ${results.map((r) => r.at(-1).toFixed(1)).join(' / ')} µs a delivery\n`);
  }
  builds.forEach((root, b) => console.log(`${root}: median ${median(results[b]).toFixed(1)} µs a delivery (runs ${results[b].map((v) => v.toFixed(1)).join(', ')})`));
  if (builds.length === 2) console.log(`first / second, median of paired runs: ${median(results[0].map((v, i) => v / results[1][i])).toFixed(3)}`);
}

// Shared set-up of the dispatcher tests: a real daemon trusting the receivers' certificate, or
// the same app in-process (buildTestApp: its dispatcher posts to the same receivers with the
// same sender) where the process is not the point; customers, endpoints, published events, and
// waiting for delivery logs.
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, vi } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { startLoggedIn, TEST_STORE, type LoggedIn, type TestDaemon } from '../helpers/daemon.js';
import type { ReceiverTls } from '../helpers/receiver.js';

export type World = LoggedIn;

/**
 * A claim lease for tests that SIGKILL a daemon and restart it, and whose attempts take well
 * under a second (or hang until the kill): on PostgreSQL the restarted daemon (a new lease owner)
 * makes what the killed one held only once those leases end, so such a test waits out a lease.
 * The postgres project's default (12 s) is sized for attempts that run to the 10 s timeout; a
 * lease must outlast the longest attempt it covers.
 */
export const SHORT_LEASE_MS = 3_000;

/** The in-process app as a world: `daemon` answers requests as a daemon's does. */
export interface AppWorld {
  daemon: TestApp;
  admin: string;
  app: TestApp;
}

/** What the helpers below use of a world, a daemon's or the app's. */
export interface AnyWorld {
  daemon: Pick<TestDaemon, 'request' | 'login' | 'dataDir'>;
  admin: string;
  app?: TestApp;
}

export async function startWorld(tls: ReceiverTls, options: { allowPrivate?: boolean; dataDir?: string; leaseMs?: number } = {}): Promise<World> {
  // These tests make many requests and sign in many customers: request-rate limits (variant A)
  // would answer 429 and hide what is being tested. Login failure lockout stays on.
  return startLoggedIn({
    dataDir: options.dataDir,
    args: options.allowPrivate === false ? [] : ['--allow-private-webhooks'],
    env: { NODE_EXTRA_CA_CERTS: tls.caFile, ...(options.leaseMs ? { PANELCTL_CLAIM_LEASE_MS: String(options.leaseMs) } : {}) },
    settings: { rate_limit_mode: 'lockout' },
  });
}

/**
 * The app in-process with what startWorld gives a daemon: the receivers' certificate trusted (if any),
 * private targets allowed unless `allowPrivate` is false, request-rate limits off.
 */
export async function startAppWorld(tls: ReceiverTls | null, options: { allowPrivate?: boolean; log?: boolean } = {}): Promise<AppWorld> {
  const app = await buildTestApp({
    allowPrivateWebhooks: options.allowPrivate !== false,
    webhookCa: tls ? [tls.cert] : undefined,
    settings: { rate_limit_mode: 'lockout' },
    log: options.log,
  });
  return { daemon: app, app, admin: await app.login() };
}

/**
 * A second app on the world's PostgreSQL database, as a second daemon of it would be: its own
 * store handle and change feed, the same signing secret, its own directory.
 */
export async function secondApp(world: AppWorld, tls: ReceiverTls | null): Promise<TestApp> {
  if (!world.app.databaseUrl) throw new Error('a second app needs a PostgreSQL database');
  return buildTestApp({
    allowPrivateWebhooks: true,
    webhookCa: tls ? [tls.cert] : undefined,
    reopen: { dir: await mkdtemp(join(tmpdir(), 'panelctl-app-')), databaseUrl: world.app.databaseUrl, jwtSecret: world.app.jwtSecret },
  });
}

let customers = 0;

/** Creates a customer and signs in as them (in the app: made in the store, with a JWT issued). */
export async function customer(world: AnyWorld): Promise<{ id: number; token: string }> {
  const email = `customer${++customers}-${process.pid}@example.test`;
  if (world.app) {
    const user = await world.app.addUser(email, 'customer');
    return { id: user.id, token: user.token };
  }
  const password = 'customer-password-1';
  const created = await world.daemon.request('POST', '/admin/users', {
    token: world.admin,
    body: { email, name: 'Customer', password, role: 'customer' },
  });
  expect(created.status, created.text).toBe(201);
  return { id: created.body.data.id, token: await world.daemon.login(email, password) };
}

export interface EndpointInput {
  url: string;
  secret?: string;
  events?: string;
  active?: boolean;
  max_in_flight?: number;
  retry_schedule?: number[];
}

export async function endpoint(world: AnyWorld, token: string, input: EndpointInput): Promise<number> {
  const created = await world.daemon.request('POST', '/webhooks', {
    token,
    body: { secret: 'test-secret', events: '*', ...input },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.data.id;
}

export async function publish(world: AnyWorld, event: string, data: Record<string, unknown>, ownerId: number | null): Promise<number> {
  const result = await world.daemon.request('POST', '/admin/events', { token: world.admin, body: { event, data, owner_id: ownerId } });
  expect(result.status, result.text).toBe(200);
  return result.body.data.deliveries;
}

export async function entries(world: AnyWorld, token: string, endpointId: number): Promise<any[]> {
  const result = await world.daemon.request('GET', `/webhooks/${endpointId}/deliveries`, { token });
  expect(result.status, result.text).toBe(200);
  return result.body.data;
}

/** Waits until an endpoint's log holds at least `count` entries; answers the log. */
export async function waitForEntries(world: AnyWorld, token: string, endpointId: number, count: number, timeoutMs = 30_000): Promise<any[]> {
  return vi.waitFor(
    async () => {
      const list = await entries(world, token, endpointId);
      expect(list.length, `endpoint ${endpointId}'s log entries`).toBeGreaterThanOrEqual(count);
      return list;
    },
    { timeout: timeoutMs, interval: 100 },
  );
}

/**
 * Waits until the retry of `deliveryId` with at least `attempts` made is written where a daemon
 * restarted after a SIGKILL reads it. On the JSON store that is the journal (a line of the data
 * directory's journal-*.jsonl): `record` appends the log entry before it settles the outcome
 * (OutboxRepository.record is not atomic), so an entry or the health's next attempt can be read
 * while the retry is not written yet. On PostgreSQL one statement commits both, so the entry
 * read is enough.
 */
export async function waitForRetryWritten(world: World, deliveryId: string, attempts: number): Promise<void> {
  if (TEST_STORE === 'postgres') return;
  const journalAttempts = async (dir: string): Promise<number> => {
    let most = 0;
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) most = Math.max(most, await journalAttempts(path));
      else if (/^journal-\d+\.jsonl$/.test(entry.name)) {
        for (const line of (await readFile(path, 'utf8')).split('\n')) {
          if (!line.includes(deliveryId)) continue;
          let parsed: { o?: Array<{ t: string; k: unknown; v?: { attempts?: number } }> };
          try {
            parsed = JSON.parse(line);
          } catch {
            continue; // the line being written
          }
          for (const op of parsed.o ?? []) if (op.t === 'deliveries' && op.k === deliveryId) most = Math.max(most, op.v?.attempts ?? 0);
        }
      }
    }
    return most;
  };
  await vi.waitFor(async () => expect(await journalAttempts(world.daemon.dataDir)).toBeGreaterThanOrEqual(attempts), { timeout: 30_000, interval: 50 });
}

export const SITE = { site_id: 7, domain: 'example.org' };

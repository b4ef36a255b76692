// Helpers for the sources tests: customers with their own logins, and the events the daemon
// queued, read from the JSON store's write-ahead journal (journal-<gen>.jsonl in the data
// directory) as soon as an answer arrives. The store keeps an event only as its deliveries, so
// probe endpoints (the admin's and one per customer, subscribed to everything, at an address
// that never resolves) make every event leave a trace: its owner is the customer whose probe
// got a delivery, or null when only the admin's did.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestDaemon } from '../helpers/daemon.js';

/** A daemon, or the app in-process (test/helpers/app.ts): what these helpers use of either. */
type Api = Pick<TestDaemon, 'request' | 'login' | 'dataDir' | 'databaseUrl'>;

export interface Customer {
  id: number;
  email: string;
  token: string;
}

export interface OutboxEvent {
  id: string;
  event: string;
  owner_id: number | null;
  data: Record<string, unknown>;
  timestamp: string;
}

/** Many logins and requests from one test IP: limits lifted so they do not decide outcomes. */
export const RELAXED_LIMITS = { rate_limit_login_per_minute: 10_000, rate_limit_user_per_minute: 100_000, login_max_attempts: 1000 };

export async function relaxLimits(daemon: Api, adminToken: string): Promise<void> {
  const res = await daemon.request('PUT', '/admin/settings', { token: adminToken, body: RELAXED_LIMITS });
  expect(res.status, res.text).toBe(200);
}

/** Daemons with probe endpoints, and the admin's user id there. */
const probed = new WeakMap<Api, number>();
const PROBE_URL = 'https://probe.invalid/events';

async function addProbe(daemon: Api, token: string, who: string): Promise<void> {
  const res = await daemon.request('POST', '/webhooks', { token, body: { url: `${PROBE_URL}/${who}`, events: '*', secret: 'probe-secret' } });
  expect(res.status, res.text).toBe(201);
}

/** Gives the admin a probe endpoint; customers created afterwards get theirs. */
export async function attachProbe(daemon: Api, adminToken: string): Promise<void> {
  const me = await daemon.request('GET', '/auth/me', { token: adminToken });
  probed.set(daemon, me.body.data.id);
  await addProbe(daemon, adminToken, 'admin');
}

export async function createCustomer(daemon: Api, adminToken: string, email: string): Promise<Customer> {
  const password = 'customer-password-1';
  const res = await daemon.request('POST', '/admin/users', {
    token: adminToken,
    body: { email, name: email.split('@')[0], password, role: 'customer' },
  });
  expect(res.status, res.text).toBe(201);
  const customer = { id: res.body.data.id, email, token: await daemon.login(email, password) };
  if (probed.has(daemon)) await addProbe(daemon, customer.token, String(customer.id));
  return customer;
}

export async function createSubscription(
  daemon: Api,
  adminToken: string,
  body: { customer_id: number; main_domain: string; is_default?: boolean },
): Promise<{ id: number; is_default: boolean }> {
  const res = await daemon.request('POST', '/admin/subscriptions', { token: adminToken, body });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

export async function createSite(daemon: Api, token: string, body: { domain: string; subscription_id?: number }) {
  const res = await daemon.request('POST', '/sites', { token, body });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { id: number; subscription_id: number; domain: string; created_at: string };
}

interface JournalOp {
  t: string;
  body?: string;
  d?: Array<{ id: string; owner_id: number | null; manual?: boolean }>;
}

/** Every event queued (with deliveries to the probes), oldest first, as the store's journal holds it. */
export async function outboxEvents(daemon: Api): Promise<OutboxEvent[]> {
  const adminId = probed.get(daemon);
  if (adminId === undefined) throw new Error('outboxEvents needs attachProbe(daemon, admin) before the customers are created');
  if (daemon.databaseUrl) return databaseEvents(daemon.databaseUrl);
  const journals = (await readdir(daemon.dataDir))
    .map((name) => /^journal-(\d+)\.jsonl$/.exec(name))
    .filter((match): match is RegExpExecArray => match !== null)
    .sort((a, b) => Number(a[1]) - Number(b[1]))
    .map((match) => match[0]);
  const events: OutboxEvent[] = [];
  for (const name of journals) {
    const text = await readFile(join(daemon.dataDir, name), 'utf8');
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      let parsed: { o?: JournalOp[] };
      try {
        parsed = JSON.parse(line);
      } catch {
        continue; // a line still being written
      }
      for (const op of parsed.o ?? []) {
        if (op.t !== 'enqueue' || !op.body || !op.d?.length || op.d[0].manual) continue;
        const payload = JSON.parse(op.body) as { event: string; timestamp: string; data: Record<string, unknown> };
        const owner = op.d.map((d) => d.owner_id).find((id) => id !== adminId) ?? null;
        events.push({ id: op.d[0].id, event: payload.event, owner_id: owner, data: payload.data, timestamp: payload.timestamp });
      }
    }
  }
  return events;
}

/** The same from PostgreSQL: events with a delivery that is not a manual send, in commit order. */
async function databaseEvents(databaseUrl: string): Promise<OutboxEvent[]> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string; event: string; owner_id: string | null; data: Record<string, unknown>; timestamp: string }>(
      `SELECT e.id, e.event, e.owner_id, e.data, e."timestamp" FROM events e
        WHERE EXISTS (SELECT 1 FROM deliveries d WHERE d.event_id = e.id AND d.manual IS NOT TRUE)
        ORDER BY e.xmin::text::bigint, e."timestamp"`,
    );
    return rows.map((r) => ({ id: r.id, event: r.event, owner_id: r.owner_id === null ? null : Number(r.owner_id), data: r.data, timestamp: r.timestamp }));
  } finally {
    await client.end();
  }
}

/**
 * Runs `action` and returns the events the daemon appended to its outbox while it ran. The
 * outbox is read as soon as the response arrived: an event the request published is already
 * there (its deliveries to the probes are pending for the 2 s before their retry). Events are
 * told apart by id, not by position: on PostgreSQL an earlier event leaves the list once its
 * deliveries have failed twice, which can happen while `action` runs on a busy machine.
 */
export async function eventsDuring<T>(daemon: Api, action: () => Promise<T>): Promise<{ result: T; events: OutboxEvent[] }> {
  const before = await eventIds(daemon);
  const result = await action();
  return { result, events: await eventsSince(daemon, before) };
}

/**
 * The ids of the events in the outbox now. Events are told apart by id, never by a count: on
 * PostgreSQL an earlier event leaves the list once its deliveries are done (see eventsDuring).
 */
export async function eventIds(daemon: Api): Promise<Set<string>> {
  return new Set((await outboxEvents(daemon)).map((e) => e.id));
}

/** The events in the outbox now that were not among `before` (from eventIds). */
export async function eventsSince(daemon: Api, before: Set<string>): Promise<OutboxEvent[]> {
  return (await outboxEvents(daemon)).filter((e) => !before.has(e.id));
}

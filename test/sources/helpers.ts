// Helpers for the sources tests: customers with their own logins, and the events the daemon
// wrote to its outbox journal (outbox.jsonl in the data directory), read from the real file.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestDaemon } from '../helpers/daemon.js';

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

export async function relaxLimits(daemon: TestDaemon, adminToken: string): Promise<void> {
  const res = await daemon.request('PUT', '/admin/settings', { token: adminToken, body: RELAXED_LIMITS });
  expect(res.status, res.text).toBe(200);
}

export async function createCustomer(daemon: TestDaemon, adminToken: string, email: string): Promise<Customer> {
  const password = 'customer-password-1';
  const res = await daemon.request('POST', '/admin/users', {
    token: adminToken,
    body: { email, name: email.split('@')[0], password, role: 'customer' },
  });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.data.id, email, token: await daemon.login(email, password) };
}

export async function createSubscription(
  daemon: TestDaemon,
  adminToken: string,
  body: { customer_id: number; main_domain: string; is_default?: boolean },
): Promise<{ id: number; is_default: boolean }> {
  const res = await daemon.request('POST', '/admin/subscriptions', { token: adminToken, body });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

export async function createSite(daemon: TestDaemon, token: string, body: { domain: string; subscription_id?: number }) {
  const res = await daemon.request('POST', '/sites', { token, body });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { id: number; subscription_id: number; domain: string; created_at: string };
}

/** Every event line of the outbox journal, oldest first. */
export async function outboxEvents(daemon: TestDaemon): Promise<OutboxEvent[]> {
  let text = '';
  try {
    text = await readFile(join(daemon.dataDir, 'outbox.jsonl'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as { t: string; event?: OutboxEvent })
    .filter((line) => line.t === 'e')
    .map((line) => line.event!);
}

/**
 * Runs `action` and returns the events the daemon appended to its outbox while it ran. The
 * file is read as soon as the response arrived: an event the request published is already there.
 */
export async function eventsDuring<T>(daemon: TestDaemon, action: () => Promise<T>): Promise<{ result: T; events: OutboxEvent[] }> {
  const before = (await outboxEvents(daemon)).length;
  const result = await action();
  const events = (await outboxEvents(daemon)).slice(before);
  return { result, events };
}

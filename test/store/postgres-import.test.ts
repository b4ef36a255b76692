// `store migrate --to URL`'s copying: a JSON data directory (as the JSON store leaves it on
// disk) into an empty PostgreSQL database, ids kept; a database in use is refused.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { layout } from '../../src/shared/paths.js';
import { JsonStore } from '../../src/store/json/json-store.js';
import { importJsonStore } from '../../src/store/postgres/import-json.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { StoreError } from '../../src/store/store.js';
import type { DeliveryLogEntry, DeliveryRecord, StoreData } from '../../src/store/types.js';
import { createDatabase, pgAdminUrl } from '../helpers/postgres-db.js';
import { socketUrlOf } from '../helpers/postgres.js';

const { url: adminUrl, reason } = pgAdminUrl();
if (!adminUrl) console.warn(`PostgreSQL import tests skipped: ${reason}`);

const T = '2026-03-01T12:00:00.000Z';
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

const user = (id: number, email: string, role: 'admin' | 'customer') => ({
  id,
  email,
  name: `User ${id}`,
  role,
  password_hash: 'scrypt$16384$8$1$c2FsdA==$aGFzaA==',
  totp_secret: id === 1 ? 'JBSWY3DPEHPK3PXP' : null,
  totp_pending_secret: null,
  two_factor_enabled: id === 1,
  totp_last_step: id === 1 ? 59_000_000 : null,
  created_at: T,
  updated_at: T,
});

/** Without an id (a store assigns it). */
const newUser = (email: string, role: 'admin' | 'customer') => {
  const { id: _id, ...record } = user(0, email, role);
  return record;
};

function fixture(): { data: StoreData; deliveries: DeliveryRecord[]; log: DeliveryLogEntry[] } {
  const data: StoreData = {
    schema_version: 1,
    counters: { users: 5, api_keys: 2, subscriptions: 2, sites: 3, webhooks: 7, reset_tokens: 1 },
    users: [user(1, 'admin@localhost', 'admin'), { ...user(3, 'Cust@Example.com', 'customer'), password_changed_at: T, token_generation: 2 }],
    api_keys: [{ id: 2, user_id: 3, name: 'ci', key_hash: 'a'.repeat(64), key_prefix: 'ncp_0123456789abcdef', last_used_at: T, expires_at: null, created_at: T }],
    subscriptions: [{ id: 2, customer_id: 3, main_domain: 'cust.example', is_default: true, status: 'active', created_at: T, updated_at: T }],
    sites: [
      { id: 1, subscription_id: 2, domain: 'www.cust.example', created_at: T },
      { id: 3, subscription_id: 2, domain: 'shop.cust.example', created_at: T },
    ],
    webhooks: [{ id: 7, user_id: 3, url: 'https://hooks.example.com/in', secret: 'whsec', events: 'site.created,site.deleted', active: true, created_at: T, updated_at: T }],
    reset_tokens: [{ id: 1, user_id: 3, token_hash: 'b'.repeat(64), expires_at: '2026-03-01T13:00:00.000Z', used_at: null, created_at: T }],
    limiter: [{ key: 'login:1.2.3.4', count: 3, window_start: 1_772_366_400_000, locked_until: 0 }],
    settings: { login_max_attempts: 9, rate_limit_mode: 'lockout' },
  };
  const delivery = (id: string, extra: Partial<DeliveryRecord> = {}): DeliveryRecord => ({
    id,
    endpoint_id: 7,
    owner_id: 3,
    event: 'site.created',
    body: '{"event":"site.created"}',
    state: 'pending',
    attempts: 0,
    next_attempt_at: 1_772_366_400_000,
    created_at: T,
    ...extra,
  });
  const deliveries = [delivery('11111111-1111-4111-8111-111111111111'), delivery('22222222-2222-4222-8222-222222222222'), delivery('33333333-3333-4333-8333-333333333333', { manual: true })];
  const log = Array.from({ length: 120 }, (_, i): DeliveryLogEntry => ({
    id: 1_772_366_400_000_000 + i,
    delivery_id: deliveries[0].id,
    endpoint_id: 7,
    event: 'site.created',
    payload: { event: 'site.created', data: { i } },
    attempt: 1,
    status_code: i % 2 ? 200 : 500,
    response: 'ok',
    success: i % 2 === 1,
    duration_ms: 3,
    created_at: T,
    request_headers: { 'x-webhook-delivery': deliveries[0].id },
  }));
  return { data, deliveries, log };
}

async function writeDataDir(): Promise<{ dir: string } & ReturnType<typeof fixture>> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-import-'));
  dirs.push(dir);
  const f = fixture();
  await writeFile(join(dir, 'store.json'), JSON.stringify(f.data));
  await writeFile(join(dir, 'jwt-secret'), 'the-jwt-secret\n');
  const [d1, d2, d3] = f.deliveries;
  const event = { id: 'evt-1', event: 'site.created', owner_id: 3, data: { domain: 'www.cust.example' }, timestamp: T };
  const lines = [
    { t: 'e', event, deliveries: [d1, d2] },
    { t: 'u', id: d1.id, state: 'pending', attempts: 1, next_attempt_at: 1_772_366_402_000 },
    { t: 'u', id: d2.id, state: 'succeeded', attempts: 1, next_attempt_at: 1_772_366_400_000 },
    { t: 'd', delivery: d3 },
  ];
  // The last line was torn by a crash mid-append: left out, as the JSON store does.
  await writeFile(join(dir, 'outbox.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n{"t":"u","id":');
  await mkdir(join(dir, 'deliveries'));
  await writeFile(join(dir, 'deliveries', '7.jsonl'), f.log.map((e) => JSON.stringify(e)).join('\n') + '\n');
  await writeFile(join(dir, 'deliveries', '99.jsonl'), JSON.stringify({ ...f.log[0], endpoint_id: 99 }) + '\n');
  return { dir, ...f };
}

describe.skipIf(!adminUrl)('importJsonStore (store migrate --to)', () => {
  it('copies what the JSON store holds (snapshot plus journals not yet folded in), as its own repositories answer it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-import-'));
    dirs.push(dir);
    await writeFile(join(dir, 'jwt-secret'), 'journal-secret\n');
    const json = await JsonStore.open(layout(dir), { create: true });
    const admin = await json.users.insert(newUser('root@example.com', 'admin'));
    const customer = await json.users.insert(newUser('c@example.com', 'customer'));
    await json.users.update(customer.id, { token_generation: 4, password_changed_at: T });
    const gone = await json.users.insert(newUser('gone@example.com', 'customer'));
    await json.users.remove(gone.id);
    await json.apiKeys.insert({ user_id: customer.id, name: 'k', key_hash: 'c'.repeat(64), key_prefix: 'ncp_x', last_used_at: null, expires_at: null, created_at: T });
    const sub = await json.subscriptions.insert({ customer_id: customer.id, main_domain: 'c.example', is_default: false, status: 'active', created_at: T, updated_at: T });
    await json.sites.insert({ subscription_id: sub.id, domain: 'www.c.example', created_at: T });
    const hook = await json.webhooks.insert({ user_id: customer.id, url: 'https://h.example/x', secret: 's', events: '*', active: true, created_at: T, updated_at: T, retry_schedule: [1, 1, 2], max_in_flight: 1, rate_limit_per_second: 5 });
    // Every optional endpoint field is carried: the scheme, custom headers, a rotation's previous secret.
    await json.webhooks.insert({
      user_id: customer.id, url: 'https://h.example/y', secret: `whsec_${'A'.repeat(43)}=`, events: '*', active: true, created_at: T, updated_at: T,
      signature: 'standard-webhooks', health_reset_at: T, paused: true, headers: { Authorization: 'Bearer t' }, previous_secret: 'old', previous_secret_expires_at: T,
    });
    await json.resetTokens.insert({ user_id: customer.id, token_hash: 'd'.repeat(64), expires_at: T, used_at: null, created_at: T });
    await json.revokedTokens.revoke('jti-1', 4_000_000_000_000);
    await json.limiter.hit('login:x', 60_000, 1_000);
    await json.settings.update({ jwt_ttl_seconds: 3600 });
    const d = (id: string) => ({ id, endpoint_id: hook.id, owner_id: customer.id, event: 'site.created', body: '{}', state: 'pending' as const, attempts: 0, next_attempt_at: 1_000, created_at: T });
    await json.outbox.enqueue({ id: 'e1', event: 'site.created', owner_id: customer.id, data: {}, timestamp: T }, [d('d1'), d('d2'), d('d3')]);
    await json.outbox.claim({ owner: 'w', now: 1_000, leaseMs: 1_000, limit: 10, perEndpoint: 10, ids: ['d1', 'd2'] });
    await json.outbox.settle('w', [
      { id: 'd1', state: 'succeeded', attempts: 1, next_attempt_at: 1_000 },
      { id: 'd2', state: 'pending', attempts: 1, next_attempt_at: 3_000 },
    ]);
    // One entry first: the JSON store writes a fresh endpoint's first batch out of id order.
    const attempt = (i: number) => ({ delivery_id: 'd1', endpoint_id: hook.id, event: 'site.created', payload: { i }, attempt: 1, status_code: 200, response: '', success: true, duration_ms: 1, created_at: T, request_headers: {} });
    const logged = [...(await json.deliveryLog.append([attempt(0)])), ...(await json.deliveryLog.append(Array.from({ length: 119 }, (_, i) => attempt(i + 1))))];
    await json.flush();
    // Left open, as after a crash: the journal holds what the snapshot does not.
    const url = await createDatabase(adminUrl!);
    const summary = await importJsonStore(dir, url);
    expect(summary).toMatchObject({ users: 2, deliveries: 2, log_entries: 100, revoked_tokens: 1, limiter: 1, settings: true, jwt_secret: true, skipped: 0 });

    const pgStore = await PostgresStore.open(url);
    try {
      // PostgreSQL answers the optional user fields explicitly (null, 0) where the JSON store leaves them out.
      expect(await pgStore.users.list()).toEqual((await json.users.list()).map((u) => ({ password_changed_at: null, token_generation: 0, ...u })));
      expect(await pgStore.apiKeys.listByUser(customer.id)).toEqual(await json.apiKeys.listByUser(customer.id));
      expect(await pgStore.subscriptions.list()).toEqual(await json.subscriptions.list());
      expect(await pgStore.sites.list()).toEqual(await json.sites.list());
      expect(await pgStore.webhooks.list()).toEqual(await json.webhooks.list());
      expect((await pgStore.webhooks.get(hook.id))?.retry_schedule).toEqual([1, 1, 2]);
      expect((await pgStore.webhooks.get(hook.id))?.rate_limit_per_second).toBe(5);
      // The pending retry (d2) is the endpoint's next, on either backend.
      expect(await pgStore.outbox.nextRetryAt([hook.id])).toEqual(new Map([[hook.id, 3_000]]));
      expect(await json.outbox.nextRetryAt([hook.id])).toEqual(new Map([[hook.id, 3_000]]));
      expect(await pgStore.resetTokens.byHash('d'.repeat(64))).toEqual(await json.resetTokens.byHash('d'.repeat(64)));
      expect(await pgStore.revokedTokens.isRevoked('jti-1')).toBe(true);
      expect(await pgStore.limiter.get('login:x')).toEqual(await json.limiter.get('login:x'));
      expect(await pgStore.settings.get()).toEqual(await json.settings.get());
      expect(await pgStore.outbox.get('d1')).toBeUndefined();
      expect(await pgStore.outbox.get('d2')).toEqual({ ...(await json.outbox.get('d2')) });
      expect(await pgStore.outbox.get('d3')).toEqual(await json.outbox.get('d3'));
      expect(await pgStore.deliveryLog.list(hook.id)).toEqual(await json.deliveryLog.list(hook.id));
      expect(await pgStore.sharedSecret('jwt', () => 'x')).toBe('journal-secret');
      // Ids continue after the JSON store's counters: the deleted user's id is not handed out again.
      expect((await pgStore.users.insert(newUser('next@example.com', 'customer'))).id).toBe(gone.id + 1);
      // The imported log's revision counts its entries, and moves with the next one.
      expect(await pgStore.deliveryLog.revision(hook.id)).toBe('100');
      const { id: _logId, ...entry } = logged[0];
      const [next] = await pgStore.deliveryLog.append([entry]);
      expect(await pgStore.deliveryLog.revision(hook.id)).toBe('101');
      // The JSON store reserved log ids a block of 1,000 ahead at its first append (announced ids
      // are never used again after a crash), so the imported counter continues past that block.
      expect(next.id).toBe(logged[0].id + 1_000 + 1);
      expect(admin.id).toBe(1);
    } finally {
      await pgStore.close();
      await json.close();
    }
  });

  it('copies a store written before the journal (outbox.jsonl), every record with its id, the pending deliveries, the logs, settings and the JWT secret', async () => {
    const { dir, data, deliveries, log } = await writeDataDir();
    // Through the server's Unix socket (the test above goes over TCP).
    const url = await socketUrlOf(await createDatabase(adminUrl!));
    const summary = await importJsonStore(dir, url);
    expect(summary).toMatchObject({ users: 2, api_keys: 1, subscriptions: 1, sites: 2, webhooks: 1, reset_tokens: 1, limiter: 1, settings: true, jwt_secret: true, events: 1, deliveries: 2, log_entries: 100, skipped: 1 });

    const store = await PostgresStore.open(url);
    try {
      expect(await PostgresStore.initialised(url)).toBe(true);
      expect(await store.users.list()).toEqual([
        { ...data.users[0], password_changed_at: null, token_generation: 0 },
        data.users[1],
      ]);
      expect(await store.apiKeys.byHash('a'.repeat(64))).toEqual(data.api_keys[0]);
      expect(await store.subscriptions.list()).toEqual(data.subscriptions);
      expect(await store.sites.list()).toEqual(data.sites);
      expect(await store.webhooks.list()).toEqual(data.webhooks);
      expect(await store.resetTokens.byHash('b'.repeat(64))).toEqual(data.reset_tokens[0]);
      expect(await store.limiter.get('login:1.2.3.4')).toEqual(data.limiter[0]);
      expect(await store.settings.get()).toMatchObject({ login_max_attempts: 9, rate_limit_mode: 'lockout', jwt_ttl_seconds: 86_400 });
      expect(await store.sharedSecret('jwt', () => 'new')).toBe('the-jwt-secret');

      expect(await store.outbox.pendingCount()).toBe(2);
      expect(await store.outbox.get(deliveries[0].id)).toEqual({ ...deliveries[0], attempts: 1, next_attempt_at: 1_772_366_402_000 });
      expect(await store.outbox.get(deliveries[1].id)).toBeUndefined();
      expect(await store.outbox.get(deliveries[2].id)).toEqual(deliveries[2]);

      const listed = await store.deliveryLog.list(7);
      expect(listed).toHaveLength(100);
      expect(listed[0]).toEqual(log[119]);
      expect(await store.deliveryLog.get(7, log[20].id)).toEqual(log[20]);

      // New ids continue after the JSON store's counters.
      const next = await store.users.insert(newUser('new@example.com', 'customer'));
      expect(next.id).toBe(6);
      const { id: _logId, ...first } = log[0];
      const [entry] = await store.deliveryLog.append([first]);
      expect(entry.id).toBe(log[119].id + 1);
    } finally {
      await store.close();
    }
  });

  it('refuses a database that already holds panel data, and changes nothing in it', async () => {
    const { dir } = await writeDataDir();
    const url = await createDatabase(adminUrl!);
    const store = await PostgresStore.open(url);
    await store.users.insert(newUser('someone@example.com', 'admin'));
    const error = await importJsonStore(dir, url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StoreError);
    expect((error as Error).message).toMatch(/not empty/);
    expect(await store.users.count()).toBe(1);
    expect(await store.webhooks.count()).toBe(0);
    await store.close();
  });

  it('refuses a data directory without a store', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-import-'));
    dirs.push(dir);
    const url = await createDatabase(adminUrl!);
    await expect(importJsonStore(dir, url)).rejects.toThrow(/does not exist/);
  });
});

// The write fence of a PostgreSQL store, seen from one writer with a stand-in member: a raw
// connection that announces a lease as a feed does and acknowledges (or does not) the writer's
// fence notices. The protocol is in docs/decisions/write-fence.md; real daemons are in test/sources/write-fence.test.ts.
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FENCE_LEASE_MS } from '../../src/store/postgres/feed.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { CHANNEL } from '../../src/store/postgres/repositories/context.js';
import { createMigratedDatabase, pgAdminUrl } from '../helpers/postgres-db.js';

const { url: adminUrl, reason } = pgAdminUrl();
if (!adminUrl) console.warn(`PostgreSQL write fence tests skipped: ${reason}`);

interface FenceNotice {
  kind: 'fence';
  t: string;
  c: Array<[string, number | null]>;
}

describe.skipIf(!adminUrl)('the write fence of a PostgreSQL store', () => {
  let url: string;
  let store: PostgresStore;
  /** The stand-in member's connection: it listens, and renews its lease when told to. */
  let member: pg.Client;
  const heard: FenceNotice[] = [];
  let userId: number;
  const MEMBER = `stand-in-${randomUUID()}`;

  const renew = () =>
    member.query(
      `WITH m AS (INSERT INTO feed_members (member, lease_until) VALUES ($1, (extract(epoch from clock_timestamp()) * 1000)::bigint + $2)
         ON CONFLICT (member) DO UPDATE SET lease_until = excluded.lease_until RETURNING member)
       SELECT pg_notify($3, $4) FROM m`,
      [MEMBER, FENCE_LEASE_MS, CHANNEL, JSON.stringify({ kind: 'lease', m: MEMBER, s: 1 })],
    );
  const ack = (tokens: string[]) => member.query('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ kind: 'ack', m: MEMBER, t: tokens })]);
  const leave = () =>
    member.query('WITH gone AS (DELETE FROM feed_members WHERE member = $1) SELECT pg_notify($2, $3)', [MEMBER, CHANNEL, JSON.stringify({ kind: 'leave', m: MEMBER })]);
  const insertKey = () =>
    store.apiKeys.insert({ user_id: userId, name: 'k', key_hash: randomUUID(), key_prefix: 'ncp_x', last_used_at: null, expires_at: null, created_at: new Date().toISOString() });
  const timed = async <T>(write: () => Promise<T>): Promise<{ value: T; ms: number }> => {
    const started = performance.now();
    const value = await write();
    return { value, ms: performance.now() - started };
  };

  beforeAll(async () => {
    url = await createMigratedDatabase(adminUrl!, 'panelctl_fence_store');
    store = await PostgresStore.open(url);
    userId = (
      await store.users.insert({
        email: 'fence@example.com',
        name: 'F',
        role: 'customer',
        password_hash: 'scrypt$x',
        totp_secret: null,
        totp_pending_secret: null,
        two_factor_enabled: false,
        totp_last_step: null,
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
      })
    ).id;
    member = new pg.Client({ connectionString: url });
    await member.connect();
    member.on('notification', (message) => {
      const notice = JSON.parse(message.payload ?? '{}') as { kind?: string };
      if (notice.kind === 'fence') heard.push(notice as FenceNotice);
    });
    await member.query(`LISTEN ${CHANNEL}`);
  }, 60_000);

  afterAll(async () => {
    await member?.end();
    await store?.close();
  });

  it('resolves a write with no other member once its own notice is back, and names what changed', async () => {
    heard.length = 0;
    const { value: key, ms } = await timed(insertKey);
    expect(ms).toBeLessThan(FENCE_LEASE_MS / 2);
    await expect.poll(() => heard.flatMap((notice) => notice.c)).toContainEqual(['api_keys', key.id]);
  });

  it('sends one notice for the writes of a turn, not one per write', async () => {
    heard.length = 0;
    const keys = await Promise.all(Array.from({ length: 20 }, insertKey));
    await expect.poll(() => heard.flatMap((notice) => notice.c).length).toBeGreaterThanOrEqual(20);
    const named = heard.flatMap((notice) => notice.c);
    for (const key of keys) expect(named).toContainEqual(['api_keys', key.id]);
    // The first write's notice may go alone; the writes that resolved meanwhile share the next.
    expect(heard.length).toBeLessThan(10);
  });

  it('waits for a live member until it acknowledges, and no longer than the lease when it does not', async () => {
    await renew();
    // Not acknowledged: the write waits out the member's lease (as the writer heard it).
    const silent = await timed(insertKey);
    expect(silent.ms).toBeGreaterThan(FENCE_LEASE_MS / 2);
    expect(silent.ms).toBeLessThan(FENCE_LEASE_MS + 1_500);

    // Acknowledged as soon as heard: the write resolves with the acknowledgement.
    await renew();
    heard.length = 0;
    const acking = (notice: FenceNotice) => void ack([notice.t]);
    const listener = (message: pg.Notification) => {
      const notice = JSON.parse(message.payload ?? '{}') as { kind?: string };
      if (notice.kind === 'fence') acking(notice as FenceNotice);
    };
    member.on('notification', listener);
    try {
      const acked = await timed(insertKey);
      expect(acked.ms).toBeLessThan(FENCE_LEASE_MS / 2);
      expect(heard.map((notice) => notice.t)).toHaveLength(1);
    } finally {
      member.off('notification', listener);
    }

    // A member that left is waited for no more.
    await renew();
    await leave();
    const after = await timed(insertKey);
    expect(after.ms).toBeLessThan(FENCE_LEASE_MS / 2);
  }, 30_000);
});

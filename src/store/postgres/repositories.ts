// The repositories in SQL, bound to a Db: the pool (autocommit, several-row writes in a
// transaction of their own) or the client of a `store.transaction`.
import { performance } from 'node:perf_hooks';
import { DEFAULT_SETTINGS, type Settings, type SettingsPatch } from '../../shared/settings.js';
import {
  StoreConflictError,
  deliveryFromTemplate,
  type ApiKeysRepository,
  type ClaimOptions,
  type DeliveryLogQuery,
  type DeliveryLogRepository,
  type DeliveryOutcome,
  type DeliveryTemplate,
  type HealthAttempt,
  type LogHealth,
  type QueuedDelivery,
  type LimiterRepository,
  type OutboxRepository,
  type PublishTaker,
  type Repositories,
  type ResetTokensRepository,
  type RevokedTokensRepository,
  type SettingsRepository,
  type SitesRepository,
  type SubscriptionsRepository,
  type UsersRepository,
  type WebhooksRepository,
} from '../store.js';
import type { ApiKeyRecord, DeliveryLogEntry, DeliveryRecord, EventRecord } from '../types.js';
import type pg from 'pg';
import type { Db, Row } from './db.js';
import { Batcher } from './batcher.js';
import { HitBatcher, type KeyHits } from './hit-batcher.js';
import type { QueueVacuum } from './queue-vacuum.js';
import {
  insertStatement,
  logExtra,
  toApiKey,
  toDelivery,
  toLimiter,
  toLogEntry,
  toResetToken,
  toSite,
  toSubscription,
  toUser,
  toWebhook,
  updateStatement,
} from './rows.js';

export const CHANNEL = 'panelctl_changes';
/** Newest entries kept per endpoint. */
export const LOG_RETENTION = 100;
/** Advisory lock class for the domain rule (two-key locks live apart from the migration lock). */
const DOMAIN_LOCK_CLASS = 0x70616e65;
/**
 * A dispatcher's batch prunes an endpoint's log once this many of its entries were recorded
 * since (by this process): the table holds a little over the retention, and `list` serves the
 * newest LOG_RETENTION. Pruning on every batch was a statement per batch.
 */
const PRUNE_EVERY = LOG_RETENTION;
/** The most rows one prune deletes of an endpoint's log; the next prune takes any rest. */
const PRUNE_MOST = 10 * LOG_RETENTION;
/**
 * Every this many prunes of an endpoint, one goes over its whole log (see PrunedLog); the others
 * start where the last ended.
 */
const FULL_PRUNE_EVERY = 10;

/**
 * Where a prune of an endpoint's log ended: every entry below `below` was deleted (up to
 * PRUNE_MOST). The next prune starts there, so it reads only the entries since: one that read
 * the whole log went through every entry deleted since the last vacuum, thousands per endpoint
 * under load. What it misses (an entry below `below` that another daemon committed after this
 * prune, a rest over PRUNE_MOST) goes with the next full prune.
 */
export interface PrunedLog {
  below: number;
  count: number;
}

/** State shared by every set of repositories of one store (one process). */
export interface StoreContext {
  /** API key uses not yet written: id → last_used_at (ISO, to the second). */
  readonly heldTouches: Map<number, string>;
  /** Settings as last read or written, valid while the change feed is connected. */
  cachedSettings(): Settings | null;
  cacheSettings(settings: Settings | null): void;
  /** Entries recorded per endpoint since its log was last pruned (by this process). */
  readonly unpruned: Map<number, number>;
  /** Per endpoint, where this process's last prune of its log ended, and how many it made. */
  readonly pruned: Map<number, PrunedLog>;
  /** The dispatcher taking deliveries as they are published (see Store.takeOnPublish). */
  publishTaker: PublishTaker | null;
  /** Told how long each timed write took to commit (see Store.observeCommits); null: none is timed. */
  commitObserver: ((seconds: number) => void) | null;
  /** Told how many queue rows each batch of outcomes turned over (see QueueVacuum). */
  readonly vacuum: QueueVacuum;
}

const OUTBOX_NOTICE = '{"kind":"outbox"}';

/**
 * Publish statements in flight at once per store, and events in one at most. One: the events
 * that arrive while a statement is in flight go together in the next, as a group commit does.
 * Measured against 4 (and 2) with the benchmark's burst, one lane made the larger batches and
 * cost the server 8 % less CPU per delivery, with the same or a better rate.
 */
const PUBLISH_LANES = 1;
const PUBLISH_MOST = 64;

interface Publication {
  event: EventRecord;
  template: DeliveryTemplate;
}

interface PublishRow extends Row {
  n: number;
  ids: string[];
  endpoint_ids: number[];
  owner_ids: number[];
  leased: boolean[];
}

/**
 * The endpoints (`id`, `user_id`) that receive `event` owned by `owner` (SQL expressions; owner
 * NULL: admins' only), found through webhook_events (migration 7): an index lookup for the owner
 * and one per admin, so the cost follows the endpoints matched, not the endpoints stored. Those
 * rows are the active endpoints' only, so publishing needs nothing from webhooks itself: a join
 * to it was planned as a scan of the table whenever the statistics overrated the matches.
 */
const MATCH_SQL = (event: string, owner: string) => /* sql */ `
    SELECT we.endpoint_id AS id, we.user_id FROM webhook_events we
    WHERE we.event IN (${event}, '*') AND we.user_id = ${owner}
    UNION
    SELECT we.endpoint_id, we.user_id FROM users a JOIN webhook_events we ON we.user_id = a.id
    WHERE a.role = 'admin' AND we.event IN (${event}, '*')`;

/**
 * Events ($1..$8, one array element each) and one delivery per matching endpoint; answers, per
 * event with deliveries, its position (n, from 1) and their ids, endpoints, owners and whether
 * each was leased, by endpoint. The delivery ids are made before the insert so each can be
 * traced back to its event.
 *
 * With a taker's offer ($9 its owner, $10..$17 the room as in panelctl_claim), new deliveries
 * are leased at once within that room, in event order, as a claim would lease them, but only to
 * endpoints with no claimable delivery waiting (those go first, to whoever claims next). That
 * look walks each endpoint's due index in its order: with no order, statistics that know of one
 * endpoint's backlog had it planned as a scan of the table per matched endpoint (90 ms a
 * publish at 50,000 pending, against under 1 ms).
 */
export const PUBLISH_SQL = /* sql */ `
WITH ev AS MATERIALIZED (
  SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[])
    WITH ORDINALITY AS ev (id, event, owner_id, data, "timestamp", body, next_attempt_at, created_at, n)
), e AS (
  INSERT INTO events (id, event, owner_id, data, "timestamp")
  SELECT ev.id, ev.event, ev.owner_id, ev.data::jsonb, ev."timestamp" FROM ev
  ON CONFLICT (id) DO NOTHING
), matched AS MATERIALIZED (
  SELECT gen_random_uuid()::text AS id, ev.n, ev.id AS event_id, w.id AS endpoint_id, w.user_id AS owner_id,
         ev.event, ev.body, ev.next_attempt_at, ev.created_at,
         row_number() OVER (PARTITION BY w.id ORDER BY ev.n) AS endpoint_rank,
         row_number() OVER (PARTITION BY w.user_id ORDER BY ev.n, w.id) AS owner_rank,
         row_number() OVER (ORDER BY ev.n, w.id) AS rank
  FROM ev
  CROSS JOIN LATERAL (${MATCH_SQL('ev.event', 'ev.owner_id')}) w
), waiting AS (
  SELECT m.endpoint_id FROM (SELECT DISTINCT endpoint_id FROM matched WHERE $9::text IS NOT NULL) m
  CROSS JOIN LATERAL (
    SELECT 1 FROM deliveries x
    WHERE x.endpoint_id = m.endpoint_id AND x.state = 'pending' AND x.next_attempt_at <= $10::bigint
      AND (x.lease_until IS NULL OR x.lease_until <= $10::bigint)
    ORDER BY x.next_attempt_at, x.created_at
    LIMIT 1
  ) claimable
), planned AS MATERIALIZED (
  SELECT m.*,
         $9::text IS NOT NULL AND m.next_attempt_at <= $10::bigint AND m.rank <= $12::int AND m.endpoint_rank <= $13::int
           AND NOT (m.endpoint_id = ANY ($14::bigint[])) AND NOT (m.owner_id = ANY ($15::bigint[]))
           AND ($16::int IS NULL OR m.owner_rank <= coalesce(($18::int[])[array_position($17::bigint[], m.owner_id)], $16::int))
           AND m.endpoint_id NOT IN (SELECT endpoint_id FROM waiting) AS leased
  FROM matched m
), d AS (
  INSERT INTO deliveries (id, event_id, endpoint_id, owner_id, event, body, state, attempts, next_attempt_at, created_at, lease_owner, lease_until)
  SELECT p.id, p.event_id, p.endpoint_id, p.owner_id, p.event, p.body, 'pending', 0, p.next_attempt_at, p.created_at,
         CASE WHEN p.leased THEN $9::text END, CASE WHEN p.leased THEN $10::bigint + $11::bigint END
  FROM planned p
)
SELECT p.n, array_agg(p.id ORDER BY p.endpoint_id) AS ids, array_agg(p.endpoint_id ORDER BY p.endpoint_id) AS endpoint_ids,
       array_agg(p.owner_id ORDER BY p.endpoint_id) AS owner_ids, array_agg(p.leased ORDER BY p.endpoint_id) AS leased
FROM planned p GROUP BY p.n`;

/** Runs a statement that changes `collection`; each row it returns is announced once committed. */
/** Resolves as `write` does, telling the commit observer how long it took (when it succeeded). */
export async function timedCommit<T>(ctx: StoreContext, write: Promise<T>): Promise<T> {
  const observer = ctx.commitObserver;
  const started = performance.now();
  const result = await write;
  observer?.((performance.now() - started) / 1000);
  return result;
}

async function changing(d: Db, collection: string, text: string, values: unknown[]): Promise<pg.QueryResult<Row>> {
  const result = await d.query(text, values);
  for (const row of result.rows) d.announce(JSON.stringify({ kind: 'record', collection, id: Number(row.id) }));
  return result;
}

/**
 * `work`: where the dispatcher's outbox statements run (claims, outcomes, the endpoints of a
 * claimed batch), so a burst of API requests does not queue them behind its own. Inside a
 * transaction, the transaction's client.
 */
export function createRepositories(db: Db, ctx: StoreContext, work: Db = db): Repositories {
  const users: UsersRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM users WHERE id = $1', [id]);
      return rows[0] && toUser(rows[0]);
    },
    async byEmail(email) {
      const { rows } = await db.query('SELECT * FROM users WHERE lower(email) = lower($1)', [email]);
      return rows[0] && toUser(rows[0]);
    },
    async list() {
      const { rows } = await db.query('SELECT * FROM users ORDER BY id');
      return rows.map(toUser);
    },
    async count() {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM users');
      return rows[0].n;
    },
    async insert(record) {
      const { text, values } = insertStatement('users', record);
      const { rows } = await db.atomic((d) => changing(d, 'users', text, values));
      return toUser(rows[0]);
    },
    async update(id, patch) {
      const statement = updateStatement('users', id, patch);
      if (!statement) return users.get(id);
      const { rows } = await db.atomic((d) => changing(d, 'users', statement.text, statement.values));
      return rows[0] && toUser(rows[0]);
    },
    async remove(id) {
      // API keys, endpoints (with deliveries and logs), reset tokens, subscriptions (with sites)
      // go by ON DELETE CASCADE in the same statement.
      const { rows } = await changing(db, 'users', 'DELETE FROM users WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toUser(rows[0]);
    },
  };

  /** A key as this process knows it: a use held back in memory is newer than the row. */
  const withHeldTouch = (key: ApiKeyRecord): ApiKeyRecord => {
    const held = ctx.heldTouches.get(key.id);
    if (held && (key.last_used_at === null || held > key.last_used_at)) return { ...key, last_used_at: held };
    return key;
  };
  const apiKeys: ApiKeysRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM api_keys WHERE id = $1', [id]);
      return rows[0] && withHeldTouch(toApiKey(rows[0]));
    },
    async byHash(keyHash) {
      const { rows } = await db.query('SELECT * FROM api_keys WHERE key_hash = $1', [keyHash]);
      return rows[0] && withHeldTouch(toApiKey(rows[0]));
    },
    async callerByHash(keyHash) {
      // The user comes as one json column: its columns would otherwise clash with the key's.
      // Not batched: the daemon remembers a connection's caller (see plugins/auth.ts).
      const { rows } = await db.query('SELECT k.*, to_json(u) AS caller FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.key_hash = $1', [keyHash]);
      const row = rows[0];
      return row && { key: withHeldTouch(toApiKey(row)), user: toUser(row.caller as Row) };
    },
    async listByUser(userId) {
      const { rows } = await db.query('SELECT * FROM api_keys WHERE user_id = $1 ORDER BY id', [userId]);
      return rows.map((r) => withHeldTouch(toApiKey(r)));
    },
    async insert(record) {
      const { text, values } = insertStatement('api_keys', record);
      const { rows } = await changing(db, 'api_keys', text, values);
      return toApiKey(rows[0]);
    },
    async remove(id) {
      const { rows } = await changing(db, 'api_keys', 'DELETE FROM api_keys WHERE id = $1 RETURNING *', [id]);
      ctx.heldTouches.delete(id);
      return rows[0] && toApiKey(rows[0]);
    },
    async touch(id, atMs) {
      const at = new Date(Math.floor(atMs / 1000) * 1000).toISOString();
      const held = ctx.heldTouches.get(id);
      if (!held || at > held) ctx.heldTouches.set(id, at);
    },
  };

  /** Serialises everyone deciding about `domain` (sites and main domains alike) until commit. */
  const lockDomain = (d: Db, domain: string) =>
    d.query('SELECT pg_advisory_xact_lock($1::int, hashtext(lower($2)))', [DOMAIN_LOCK_CLASS, domain]);

  const subscriptions: SubscriptionsRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM subscriptions WHERE id = $1', [id]);
      return rows[0] && toSubscription(rows[0]);
    },
    async list() {
      const { rows } = await db.query('SELECT * FROM subscriptions ORDER BY id');
      return rows.map(toSubscription);
    },
    async listByCustomer(customerId) {
      const { rows } = await db.query('SELECT * FROM subscriptions WHERE customer_id = $1 ORDER BY id', [customerId]);
      return rows.map(toSubscription);
    },
    async defaultFor(customerId) {
      const { rows } = await db.query(
        'SELECT * FROM subscriptions WHERE customer_id = $1 ORDER BY is_default DESC, id LIMIT 1',
        [customerId],
      );
      return rows[0] && toSubscription(rows[0]);
    },
    async insert(record) {
      return db.atomic(async (d) => {
        await lockDomain(d, record.main_domain);
        // The customer's row lock also serialises their subscription inserts (first = default).
        const customer = await d.query<{ role: string }>('SELECT role FROM users WHERE id = $1 FOR UPDATE', [record.customer_id]);
        if (customer.rows[0]?.role !== 'customer') {
          throw new StoreConflictError('users.customer', 'customer_id does not name a customer');
        }
        // The same order of checks as the JSON store, so both answer the same conflict.
        const same = await d.query('SELECT 1 FROM subscriptions WHERE main_domain = $1', [record.main_domain]);
        if (same.rowCount) {
          throw new StoreConflictError('subscriptions.main_domain', 'a subscription with this main domain already exists');
        }
        const taken = await d.query(
          `SELECT 1 FROM sites s JOIN subscriptions b ON b.id = s.subscription_id
           WHERE s.domain = $1 AND b.customer_id <> $2 LIMIT 1`,
          [record.main_domain, record.customer_id],
        );
        if (taken.rowCount) throw new StoreConflictError('domains.owner', 'the domain belongs to another customer');
        const others = await d.query('SELECT 1 FROM subscriptions WHERE customer_id = $1 LIMIT 1', [record.customer_id]);
        const isDefault = record.is_default || others.rowCount === 0;
        if (isDefault) {
          await changing(
            d,
            'subscriptions',
            'UPDATE subscriptions SET is_default = false, updated_at = $2 WHERE customer_id = $1 AND is_default RETURNING *',
            [record.customer_id, record.created_at],
          );
        }
        const { text, values } = insertStatement('subscriptions', { ...record, is_default: isDefault });
        const { rows } = await changing(d, 'subscriptions', text, values);
        return toSubscription(rows[0]);
      });
    },
    async update(id, patch) {
      const statement = updateStatement('subscriptions', id, { status: patch.status, updated_at: patch.updated_at });
      if (!statement) return subscriptions.get(id);
      const { rows } = await changing(db, 'subscriptions', statement.text, statement.values);
      return rows[0] && toSubscription(rows[0]);
    },
    async remove(id) {
      const { rows } = await changing(db, 'subscriptions', 'DELETE FROM subscriptions WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toSubscription(rows[0]);
    },
  };

  const sites: SitesRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM sites WHERE id = $1', [id]);
      return rows[0] && toSite(rows[0]);
    },
    async list() {
      const { rows } = await db.query('SELECT * FROM sites ORDER BY id');
      return rows.map(toSite);
    },
    async listBySubscription(subscriptionId) {
      const { rows } = await db.query('SELECT * FROM sites WHERE subscription_id = $1 ORDER BY id', [subscriptionId]);
      return rows.map(toSite);
    },
    async count() {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM sites');
      return rows[0].n;
    },
    async insert(record) {
      return db.atomic(async (d) => {
        await lockDomain(d, record.domain);
        // FOR SHARE: the subscription cannot be deleted (or change hands) until this commits.
        const sub = await d.query<{ customer_id: number }>('SELECT customer_id FROM subscriptions WHERE id = $1 FOR SHARE', [
          record.subscription_id,
        ]);
        if (!sub.rows[0]) throw new StoreConflictError('subscriptions.missing', 'the subscription does not exist');
        const same = await d.query('SELECT 1 FROM sites WHERE domain = $1', [record.domain]);
        if (same.rowCount) throw new StoreConflictError('sites.domain', 'a site with this domain already exists');
        const taken = await d.query('SELECT 1 FROM subscriptions WHERE main_domain = $1 AND customer_id <> $2 LIMIT 1', [
          record.domain,
          sub.rows[0].customer_id,
        ]);
        if (taken.rowCount) throw new StoreConflictError('domains.owner', 'the domain belongs to another customer');
        const { text, values } = insertStatement('sites', record);
        const { rows } = await changing(d, 'sites', text, values);
        return toSite(rows[0]);
      });
    },
    async remove(id) {
      const { rows } = await changing(db, 'sites', 'DELETE FROM sites WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toSite(rows[0]);
    },
  };

  const webhooks: WebhooksRepository = {
    async get(id) {
      const { rows } = await db.query('SELECT * FROM webhooks WHERE id = $1', [id]);
      return rows[0] && toWebhook(rows[0]);
    },
    async getMany(ids) {
      if (ids.length === 0) return [];
      const { rows } = await work.query('SELECT * FROM webhooks WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids]);
      return rows.map(toWebhook);
    },
    async list(range = {}) {
      const { rows } = await db.query('SELECT * FROM webhooks WHERE id > $1 ORDER BY id LIMIT $2', [range.after ?? 0, range.limit ?? null]);
      return rows.map(toWebhook);
    },
    async listByUser(userId, range = {}) {
      const { rows } = await db.query('SELECT * FROM webhooks WHERE user_id = $1 AND id > $2 ORDER BY id LIMIT $3', [userId, range.after ?? 0, range.limit ?? null]);
      return rows.map(toWebhook);
    },
    async subscribedTo(event, ownerId) {
      const { rows } = await db.query(
        `SELECT w.* FROM (${MATCH_SQL('$1::text', '$2::bigint')}) m
         JOIN webhooks w ON w.id = m.id AND w.active
         ORDER BY w.id`,
        [event, ownerId],
      );
      return rows.map(toWebhook);
    },
    async count() {
      const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks');
      return rows[0].n;
    },
    async countByState() {
      const { rows } = await db.query<{ active: number; inactive: number }>(
        'SELECT count(*) FILTER (WHERE active)::int AS active, count(*) FILTER (WHERE NOT active)::int AS inactive FROM webhooks',
      );
      return rows[0];
    },
    async insert(record) {
      const { text, values } = insertStatement('webhooks', record);
      const { rows } = await changing(db, 'webhooks', text, values);
      return toWebhook(rows[0]);
    },
    async update(id, patch) {
      const statement = updateStatement('webhooks', id, patch);
      if (!statement) return webhooks.get(id);
      const { rows } = await changing(db, 'webhooks', statement.text, statement.values);
      return rows[0] && toWebhook(rows[0]);
    },
    async remove(id) {
      // Pending deliveries and the delivery log go by ON DELETE CASCADE.
      const { rows } = await changing(db, 'webhooks', 'DELETE FROM webhooks WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toWebhook(rows[0]);
    },
  };

  const resetTokens: ResetTokensRepository = {
    async byHash(tokenHash) {
      const { rows } = await db.query('SELECT * FROM reset_tokens WHERE token_hash = $1', [tokenHash]);
      return rows[0] && toResetToken(rows[0]);
    },
    async insert(record) {
      const { text, values } = insertStatement('reset_tokens', record);
      const { rows } = await db.query(text, values);
      return toResetToken(rows[0]);
    },
    async markUsed(id, at) {
      const { rowCount } = await db.query('UPDATE reset_tokens SET used_at = $2 WHERE id = $1 AND used_at IS NULL', [id, at]);
      return rowCount === 1;
    },
    async removeForUser(userId, now) {
      await db.query(
        'DELETE FROM reset_tokens WHERE user_id = $1 OR expires_at::timestamptz < to_timestamp($2::double precision / 1000)',
        [userId, now],
      );
    },
  };

  const revokedTokens: RevokedTokensRepository = {
    async revoke(jti, expiresAt) {
      await db.query(
        `INSERT INTO revoked_tokens (jti, expires_at) VALUES ($1, $2)
         ON CONFLICT (jti) DO UPDATE SET expires_at = greatest(revoked_tokens.expires_at, excluded.expires_at)`,
        [jti, expiresAt],
      );
      // Open streams of the token end on this, on every daemon (see daemon/auth/caller-watch.ts).
      db.announce(JSON.stringify({ kind: 'record', collection: 'revoked_tokens', id: null }));
    },
    async isRevoked(jti) {
      const { rowCount } = await db.query('SELECT 1 FROM revoked_tokens WHERE jti = $1', [jti]);
      return rowCount === 1;
    },
    async prune(now) {
      await db.query('DELETE FROM revoked_tokens WHERE expires_at <= $1', [now]);
    },
  };

  /**
   * Counts `hits` hits of `key` in one statement, so concurrent hits from any number of daemons
   * each count exactly once. A new window starts when the key is not locked and its window ended
   * or its lock did. Request windows are counted by countSoftHits below, with the same rules.
   */
  const countHits = async (key: string, windowMs: number, now: number, hits: number) => {
    const { rows } = await db.query(
      `INSERT INTO limiter AS l (key, count, window_start, locked_until)
       SELECT $1, $4::int, $3, 0
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN l.locked_until <= $3 AND (l.window_start + $2 <= $3 OR l.locked_until > 0) THEN $4::int ELSE l.count + $4::int END,
         window_start = CASE WHEN l.locked_until <= $3 AND (l.window_start + $2 <= $3 OR l.locked_until > 0) THEN $3 ELSE l.window_start END,
         locked_until = CASE WHEN l.locked_until <= $3 AND (l.window_start + $2 <= $3 OR l.locked_until > 0) THEN 0 ELSE l.locked_until END
       RETURNING *`,
      [key, windowMs, now, hits],
    );
    return toLimiter(rows[0]);
  };
  // Request-window hits outside a transaction are coalesced, every key's in one statement (see
  // HitBatcher), with the rules of countHits per row (`excluded` holds a row's hits and time).
  // In key order, so two daemons' statements lock shared rows in one order. The statement
  // commits without waiting for its WAL flush: a durable commit keeps the rows locked through an
  // fsync, so a user's requests (on every daemon) went one fsync at a time; a crash forgets at
  // most the last fraction of a second of such hits (the contract allows a second). Inside a
  // transaction a hit commits with it, durably; lockout hits stay one durable statement each.
  const countSoftHits = async (windowMs: number, batch: KeyHits[]) => {
    const sorted = [...batch].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    const { rows } = await db.query(
      `INSERT INTO limiter AS l (key, count, window_start, locked_until)
       SELECT h.key, h.hits, h.now, 0
       FROM unnest($2::text[], $3::bigint[], $4::int[]) WITH ORDINALITY AS h (key, now, hits, n)
       CROSS JOIN (SELECT set_config('synchronous_commit', 'off', true)) AS soft
       ORDER BY h.n
       ON CONFLICT (key) DO UPDATE SET
         count = CASE WHEN l.locked_until <= excluded.window_start AND (l.window_start + $1 <= excluded.window_start OR l.locked_until > 0) THEN excluded.count ELSE l.count + excluded.count END,
         window_start = CASE WHEN l.locked_until <= excluded.window_start AND (l.window_start + $1 <= excluded.window_start OR l.locked_until > 0) THEN excluded.window_start ELSE l.window_start END,
         locked_until = CASE WHEN l.locked_until <= excluded.window_start AND (l.window_start + $1 <= excluded.window_start OR l.locked_until > 0) THEN 0 ELSE l.locked_until END
       RETURNING *`,
      [windowMs, sorted.map((h) => h.key), sorted.map((h) => h.now), sorted.map((h) => h.hits)],
    );
    return new Map(rows.map((row) => [String(row.key), toLimiter(row)]));
  };
  const softHits = db.inTransaction ? null : new HitBatcher(countSoftHits);
  const limiter: LimiterRepository = {
    async hit(key, windowMs, now) {
      return countHits(key, windowMs, now, 1);
    },
    async countRequest(key, windowMs, now) {
      return softHits ? softHits.hit(key, windowMs, now) : countHits(key, windowMs, now, 1);
    },
    async release(key) {
      await db.query('UPDATE limiter SET count = greatest(count - 1, 0) WHERE key = $1', [key]);
    },
    async lock(key, until) {
      const { rows } = await db.query(
        `INSERT INTO limiter AS l (key, count, window_start, locked_until)
         VALUES ($1, 0, (extract(epoch FROM clock_timestamp()) * 1000)::bigint, $2)
         ON CONFLICT (key) DO UPDATE SET locked_until = greatest(l.locked_until, excluded.locked_until)
         RETURNING *`,
        [key, until],
      );
      return toLimiter(rows[0]);
    },
    async get(key) {
      const { rows } = await db.query('SELECT * FROM limiter WHERE key = $1', [key]);
      return rows[0] && toLimiter(rows[0]);
    },
    async prune(now, windowMs) {
      await db.query('DELETE FROM limiter WHERE locked_until <= $1 AND window_start + $2 <= $1', [now, windowMs]);
    },
    async remove(key) {
      const { rowCount } = await db.query('DELETE FROM limiter WHERE key = $1', [key]);
      return rowCount === 1;
    },
    async removePrefix(prefix) {
      // starts_with, not LIKE: an address or a key never needs escaping.
      const { rowCount } = await db.query('DELETE FROM limiter WHERE starts_with(key, $1)', [prefix]);
      return rowCount ?? 0;
    },
  };

  const settingsOf = (data: unknown): Settings => Object.freeze({ ...DEFAULT_SETTINGS, ...(data as Partial<Settings> | null) });
  const settings: SettingsRepository = {
    async get() {
      const cached = db.inTransaction ? null : ctx.cachedSettings();
      if (cached) return cached;
      const { rows } = await db.query<{ data: unknown }>('SELECT data FROM settings WHERE id = 1');
      const value = settingsOf(rows[0]?.data ?? null);
      if (!db.inTransaction) ctx.cacheSettings(value);
      return value;
    },
    async update(patch: SettingsPatch) {
      const { rows } = await db.query<{ data: unknown }>(
        `WITH r AS (
           INSERT INTO settings AS s (id, data) VALUES (1, $1::jsonb)
           ON CONFLICT (id) DO UPDATE SET data = s.data || excluded.data
           RETURNING data
         )
         SELECT r.data, pg_notify('${CHANNEL}', '{"kind":"record","collection":"settings","id":null}') FROM r`,
        [JSON.stringify(patch)],
      );
      const value = settingsOf(rows[0].data);
      // Inside a transaction the value is not committed yet: the feed refreshes the cache.
      ctx.cacheSettings(db.inTransaction ? null : value);
      return value;
    },
  };

  /**
   * Publishes events in one statement: each event's endpoints are matched as subscribedTo does,
   * and every event with its deliveries commits together; dispatchers are told once it is
   * committed. Answers each event's deliveries, ordered by endpoint.
   */
  const publishAll = async (batch: Publication[]): Promise<QueuedDelivery[][]> => {
    // A taker's room applies to autocommit statements only: what it takes must be committed.
    const taker = db.inTransaction ? null : ctx.publishTaker;
    const offer = taker?.offer() ?? null;
    const taken: DeliveryRecord[] = [];
    try {
      const statement = db.query<PublishRow>(PUBLISH_SQL, [
        batch.map((p) => p.event.id),
        batch.map((p) => p.event.event),
        batch.map((p) => p.event.owner_id),
        batch.map((p) => JSON.stringify(p.event.data ?? {})),
        batch.map((p) => p.event.timestamp),
        batch.map((p) => p.template.body),
        batch.map((p) => p.template.next_attempt_at),
        batch.map((p) => p.template.created_at),
        offer?.owner ?? null,
        offer?.now ?? 0,
        offer?.leaseMs ?? 0,
        offer?.limit ?? 0,
        offer?.perEndpoint ?? 0,
        offer?.skipEndpoints ?? [],
        offer?.skipOwners ?? [],
        offer?.perOwner ?? null,
        (offer?.ownerRoom ?? []).map(([owner]) => owner),
        (offer?.ownerRoom ?? []).map(([, room]) => room),
      ]);
      // Outside a transaction the statement is its own commit: one of the outbox's hot writes.
      const { rows } = await (ctx.commitObserver && !db.inTransaction ? timedCommit(ctx, statement) : statement);
      const queued: QueuedDelivery[][] = batch.map(() => []);
      let unleased = false;
      for (const row of rows) {
        const { event, template } = batch[Number(row.n) - 1];
        queued[Number(row.n) - 1] = row.ids.map((id, i) => {
          const endpointId = Number(row.endpoint_ids[i]);
          if (!row.leased[i]) unleased = true;
          else taken.push(deliveryFromTemplate(id, endpointId, Number(row.owner_ids[i]), event.event, template));
          return { id, endpoint_id: endpointId };
        });
      }
      // Deliveries leased at publish are nobody else's work: dispatchers are woken for the rest.
      if (unleased) db.announce(OUTBOX_NOTICE);
      return queued;
    } finally {
      if (offer) taker!.take(offer, taken);
    }
  };
  // Events published outside a transaction while others are being written go together in the
  // next statement (see Batcher): one round trip and one commit for many under load.
  const publishes = db.inTransaction ? null : new Batcher(publishAll, PUBLISH_LANES, PUBLISH_MOST);

  const outbox: OutboxRepository = {
    async enqueue(event: EventRecord, deliveries: DeliveryRecord[]) {
      // One statement: the event and its deliveries (to endpoints that still exist) commit
      // together; dispatchers are told once it is committed.
      const { rows } = await db.query<{ queued: number }>(
        `WITH e AS (
           INSERT INTO events (id, event, owner_id, data, "timestamp") VALUES ($1, $2, $3, $4::jsonb, $5)
           ON CONFLICT (id) DO NOTHING
         ), d AS (
           INSERT INTO deliveries (id, event_id, endpoint_id, owner_id, event, body, state, attempts, next_attempt_at, created_at, manual)
           SELECT u.id, $1, u.endpoint_id, u.owner_id, u.event, u.body, u.state, u.attempts, u.next_attempt_at, u.created_at, u.manual
           FROM unnest($6::text[], $7::bigint[], $8::bigint[], $9::text[], $10::text[], $11::text[], $12::int[], $13::bigint[], $14::text[], $15::boolean[])
             AS u (id, endpoint_id, owner_id, event, body, state, attempts, next_attempt_at, created_at, manual)
           WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = u.endpoint_id)
           RETURNING 1
         )
         SELECT count(*)::int AS queued FROM d`,
        [
          event.id,
          event.event,
          event.owner_id,
          JSON.stringify(event.data ?? {}),
          event.timestamp,
          deliveries.map((x) => x.id),
          deliveries.map((x) => x.endpoint_id),
          deliveries.map((x) => x.owner_id),
          deliveries.map((x) => x.event),
          deliveries.map((x) => x.body),
          deliveries.map((x) => x.state),
          deliveries.map((x) => x.attempts),
          deliveries.map((x) => x.next_attempt_at),
          deliveries.map((x) => x.created_at),
          deliveries.map((x) => (x.manual === undefined ? null : x.manual)),
        ],
      );
      if (rows[0].queued > 0) db.announce(OUTBOX_NOTICE);
    },
    async publish(event: EventRecord, template: DeliveryTemplate) {
      if (publishes) return publishes.run({ event, template });
      return (await publishAll([{ event, template }]))[0];
    },
    async claim(options: ClaimOptions) {
      const { owner, now, leaseMs, limit, perEndpoint } = options;
      if (limit <= 0 || perEndpoint <= 0) return [];
      const byIds = options.ids !== undefined;
      // Due, unleased candidates, at most `perEndpoint` of an endpoint and an owner's room; the
      // first `limit` are locked (SKIP LOCKED) and leased (see panelctl_claim in migrations.ts).
      const { rows } = await work.query('SELECT * FROM panelctl_claim($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)', [
        owner,
        now,
        leaseMs,
        limit,
        perEndpoint,
        options.skipEndpoints ?? [],
        options.skipOwners ?? [],
        byIds,
        options.ids ?? [],
        options.perOwner ?? null,
        (options.ownerRoom ?? []).map(([owner]) => owner),
        (options.ownerRoom ?? []).map(([, room]) => room),
      ]);
      return rows
        .map(toDelivery)
        .sort((a, b) => a.next_attempt_at - b.next_attempt_at || (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
    },
    async settle(owner: string, outcomes: DeliveryOutcome[]) {
      if (outcomes.length === 0) return [];
      const { rows } = await work.query<RecordRow>(RECORD_SQL, recordValues(owner, outcomes, [], []));
      announceRecorded(work, rows[0]);
      noteTurnover(ctx, rows[0]);
      return rows[0].settled ?? [];
    },
    async record(owner, outcomes, entries) {
      if (outcomes.length === 0 && entries.length === 0) return [];
      // An endpoint's log is pruned by the batch that brings its count since the last prune to
      // PRUNE_EVERY, from where this process's last prune of it ended (see PrunedLog).
      const prune: Prune[] = [];
      for (const entry of entries) {
        const count = (ctx.unpruned.get(entry.endpoint_id) ?? 0) + 1;
        if (count >= PRUNE_EVERY) {
          ctx.unpruned.delete(entry.endpoint_id);
          const last = ctx.pruned.get(entry.endpoint_id);
          prune.push({ endpointId: entry.endpoint_id, low: last && last.count % FULL_PRUNE_EVERY !== 0 ? last.below : 0 });
        } else ctx.unpruned.set(entry.endpoint_id, count);
      }
      const sql = prune.length > 0 ? RECORD_PRUNE_SQL : RECORD_SQL;
      const statement = work.query<RecordRow>(sql, recordValues(owner, outcomes, entries, prune));
      const { rows } = await (ctx.commitObserver && !work.inTransaction ? timedCommit(ctx, statement) : statement);
      notePruned(ctx, rows[0]);
      announceRecorded(work, rows[0]);
      noteTurnover(ctx, rows[0]);
      return withIds(entries, rows[0].ids);
    },
    async release(owner, ids) {
      if (ids.length === 0) return;
      const { rowCount } = await work.query(
        `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL
         WHERE id = ANY ($2::text[]) AND lease_owner = $1 AND state = 'pending'`,
        [owner, ids],
      );
      if (rowCount) work.announce(OUTBOX_NOTICE);
    },
    async nextDueAt() {
      // The earliest of each endpoint's first due (the per-endpoint due index).
      const { rows } = await work.query<{ due: number | null }>(
        `SELECT min((SELECT x.next_attempt_at FROM deliveries x
                     WHERE x.endpoint_id = p.endpoint_id AND x.state = 'pending'
                     ORDER BY x.next_attempt_at LIMIT 1)) AS due
         FROM pending_endpoints p`,
      );
      return rows[0].due === null ? null : Number(rows[0].due);
    },
    async pendingCount() {
      const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM deliveries WHERE state = 'pending'");
      return rows[0].n;
    },
    async stats() {
      // Both from the pending rows' partial index (created_at is ISO 8601 text: its order is time's).
      const { rows } = await db.query<{ n: number; oldest: string | null }>(
        "SELECT count(*)::int AS n, min(created_at) AS oldest FROM deliveries WHERE state = 'pending'",
      );
      return { pending: rows[0].n, oldest_pending_at: rows[0].oldest === null ? null : Date.parse(rows[0].oldest) };
    },
    async get(id) {
      const { rows } = await db.query('SELECT * FROM deliveries WHERE id = $1', [id]);
      return rows[0] && toDelivery(rows[0]);
    },
  };

  const deliveryLog: DeliveryLogRepository = {
    async append(entries) {
      if (entries.length === 0) return [];
      // The endpoints written to keep their newest LOG_RETENTION entries at once.
      const touched = [...new Set(entries.map((e) => e.endpoint_id))].map((endpointId) => ({ endpointId, low: 0 }));
      const { rows } = await db.query<RecordRow>(RECORD_PRUNE_SQL, recordValues('', [], entries, touched));
      notePruned(ctx, rows[0]);
      announceRecorded(db, rows[0]);
      return withIds(entries, rows[0].ids);
    },
    async list(endpointId: number, query: DeliveryLogQuery = {}) {
      const limit = Math.max(0, Math.min(query.limit ?? LOG_RETENTION, LOG_RETENTION));
      const where = ['endpoint_id = $1'];
      const values: unknown[] = [endpointId];
      if (query.failed !== undefined) where.push(query.failed ? 'NOT success' : 'success');
      if (query.event !== undefined) {
        values.push(query.event);
        where.push(`event = $${values.length}`);
      }
      if (query.since !== undefined) {
        values.push(query.since);
        where.push(`created_at::timestamptz >= to_timestamp($${values.length}::double precision / 1000)`);
      }
      values.push(limit);
      // One JSON text for the whole log: the server sends one value instead of a row per entry,
      // which costs it and the client markedly less for a page of 100 entries.
      const { rows } = await db.query<{ log: string }>(
        `SELECT coalesce(json_agg(x ORDER BY x.id DESC), '[]')::text AS log FROM (
           SELECT * FROM delivery_log WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${values.length}
         ) x`,
        values,
      );
      return (JSON.parse(rows[0].log) as Row[]).map(toLogEntry);
    },
    async revision(endpointId) {
      // The ids of the entries `list` would answer, through the log index: entries are never
      // changed, so the same ids mean the same log (also when one committed out of id order).
      const { rows } = await db.query<{ revision: string }>(
        `SELECT count(*) || ':' || coalesce(md5(string_agg(x.id::text, ',' ORDER BY x.id)), '') AS revision
         FROM (SELECT id FROM delivery_log WHERE endpoint_id = $1 ORDER BY id DESC LIMIT ${LOG_RETENTION}) x`,
        [endpointId],
      );
      return rows[0].revision;
    },
    async health(endpointIds) {
      const out = new Map<number, LogHealth | null>();
      if (endpointIds.length === 0) return out;
      const { rows } = await db.query<HealthRow>(HEALTH_SQL, [endpointIds]);
      for (const row of rows) out.set(Number(row.endpoint_id), healthOfRow(row));
      return out;
    },
    async get(endpointId, entryId) {
      const { rows } = await db.query('SELECT * FROM delivery_log WHERE id = $2 AND endpoint_id = $1', [endpointId, entryId]);
      return rows[0] && toLogEntry(rows[0]);
    },
    async getMany(ids) {
      if (ids.length === 0) return [];
      const { rows } = await db.query('SELECT * FROM delivery_log WHERE id = ANY ($1::bigint[]) ORDER BY id', [ids]);
      return rows.map(toLogEntry);
    },
    async since(entryId, limit) {
      const { rows } = await db.query('SELECT * FROM delivery_log WHERE id > $1 ORDER BY id LIMIT $2', [entryId, Math.max(0, limit)]);
      return rows.map(toLogEntry);
    },
  };

  return { users, apiKeys, subscriptions, sites, webhooks, resetTokens, revokedTokens, limiter, settings, outbox, deliveryLog };
}

/**
 * The health summaries of a page of endpoints in one statement: each endpoint's last
 * LOG_RETENTION entries through its log index (narrow columns only), counted and reduced to the
 * newest success, the newest failure (its row read once, by primary key) and the failed attempts
 * as [id, delivery_id, attempt, created_at]. Endpoints without entries answer a row of zeros.
 */
const HEALTH_SQL = /* sql */ `
SELECT e.endpoint_id, h.attempts, h.successes, h.success_id, h.success_delivery, h.success_attempt, h.success_at, h.failures,
       (SELECT json_build_array(z.created_at, z.extra->'reason', z.status_code, z.response) FROM delivery_log z WHERE z.id = h.failure_id) AS last_failure
FROM unnest($1::bigint[]) AS e (endpoint_id)
CROSS JOIN LATERAL (
  SELECT count(*)::int AS attempts,
         (count(*) FILTER (WHERE x.success))::int AS successes,
         max(x.id) FILTER (WHERE x.success) AS success_id,
         (array_agg(x.delivery_id ORDER BY x.id DESC) FILTER (WHERE x.success))[1] AS success_delivery,
         (array_agg(x.attempt ORDER BY x.id DESC) FILTER (WHERE x.success))[1] AS success_attempt,
         (array_agg(x.created_at ORDER BY x.id DESC) FILTER (WHERE x.success))[1] AS success_at,
         max(x.id) FILTER (WHERE NOT x.success) AS failure_id,
         json_agg(json_build_array(x.id, x.delivery_id, x.attempt, x.created_at) ORDER BY x.id DESC) FILTER (WHERE NOT x.success) AS failures
  FROM (
    SELECT y.id, y.delivery_id, y.attempt, y.success, y.created_at FROM delivery_log y
    WHERE y.endpoint_id = e.endpoint_id ORDER BY y.id DESC LIMIT ${LOG_RETENTION}
  ) x
) h`;

type HealthRow = Row & {
  endpoint_id: string | number;
  attempts: number;
  successes: number;
  success_id: string | number | null;
  success_delivery: string | null;
  success_attempt: number | null;
  success_at: string | null;
  failures: Array<[number, string, number, string]> | null;
  last_failure: [string, string | null, number, string] | null;
};

/**
 * A summary row as LogHealth, or null when the log does not fit it (as the JSON store decides):
 * a failure since the newest success of that success's delivery, an older failure of it with a
 * higher attempt, or a delivery whose newest failure since the success is not its highest attempt.
 */
function healthOfRow(row: HealthRow): LogHealth | null {
  const successId = row.success_id === null ? -1 : Number(row.success_id);
  const failures: HealthAttempt[] = [];
  const newest = new Map<string, number>();
  for (const [id, delivery_id, attempt, created_at] of row.failures ?? []) {
    if (delivery_id === row.success_delivery && (id > successId || attempt > (row.success_attempt ?? 0))) return null;
    if (id < successId) continue;
    // Newest first: a delivery's older failure with a higher attempt than its newest one.
    const seen = newest.get(delivery_id);
    if (seen !== undefined && attempt > seen) return null;
    if (seen === undefined) newest.set(delivery_id, attempt);
    failures.push({ delivery_id, attempt, created_at });
  }
  const failure = row.last_failure;
  return {
    attempts: row.attempts,
    successes: row.successes,
    last_success_at: row.success_at,
    last_failure: failure && { success: false, created_at: failure[0], reason: failure[1] ?? null, status_code: failure[2], response: failure[3] },
    failures,
  };
}

/**
 * Appends log entries, settles outcomes and prunes logs in one statement (one round trip, one
 * commit). Each entry gets its id from the sequence in the order given, also when its endpoint
 * was deleted meanwhile (such an entry is answered but not kept, as the JSON store does). Final
 * outcomes delete their delivery, as the JSON store does; a retry stays pending, unleased. Once
 * committed, one notice names the kept entries (daemons with someone watching read them) and
 * another wakes dispatchers for retries. A prune deletes by row address, which the server visits
 * in address order: two daemons pruning one endpoint at once wait for each other row by row in
 * the same order, never in a cycle, and the second skips what the first deleted.
 */
const RECORD_SQL = recordSql(false);
/** As RECORD_SQL, and prunes the logs of the endpoints in $18, each from the id in $19 up (see PrunedLog). */
const RECORD_PRUNE_SQL = recordSql(true);

/**
 * The row addresses of the deliveries among the outcomes `o` that match `condition` and are
 * leased to $13, each looked up by primary key (the LIMIT keeps the lookup from being turned
 * into a join). Joined to the table, the outcomes were planned, with statistics behind the
 * churn, as a scan of the whole table on every batch, dead rows included: hundreds of pages
 * for a few dozen live rows between two vacuums. The statement checks the lease again on the
 * row it changes, so a row changed meanwhile by another claimer is left alone.
 */
function mineSql(condition: string): string {
  return `SELECT x.ctid FROM o CROSS JOIN LATERAL (SELECT y.ctid FROM deliveries y WHERE y.id = o.id AND y.lease_owner = $13 LIMIT 1) x WHERE ${condition}`;
}

/**
 * The statement of `record`, with or without the prune. Most batches prune nothing, and a prune
 * part in a statement costs even when its list is empty: the plan cached for it scanned the
 * whole log table (dead rows included) before finding there was nothing to delete. The prune
 * walks each endpoint's entries by its index, newest first, and deletes by row address.
 */
function recordSql(prune: boolean): string {
  return /* sql */ `
WITH u AS MATERIALIZED (
  SELECT nextval('delivery_log_id_seq'::regclass) AS id, v.*
  FROM (
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::int[], $6::int[], $7::text[], $8::boolean[], $9::float8[], $10::text[], $11::text[], $12::text[])
      WITH ORDINALITY AS x (delivery_id, endpoint_id, event, payload, attempt, status_code, response, success, duration_ms, created_at, request_headers, extra, n)
    ORDER BY x.n
  ) v
), ins AS (
  INSERT INTO delivery_log (id, delivery_id, endpoint_id, event, payload, attempt, status_code, response, success, duration_ms, created_at, request_headers, extra)
  SELECT u.id, u.delivery_id, u.endpoint_id, u.event, u.payload::json, u.attempt, u.status_code, u.response, u.success, u.duration_ms,
         u.created_at, u.request_headers::jsonb, u.extra::jsonb
  FROM u WHERE EXISTS (SELECT 1 FROM webhooks w WHERE w.id = u.endpoint_id)
  RETURNING id
), o AS MATERIALIZED (
  SELECT * FROM unnest($14::text[], $15::text[], $16::int[], $17::bigint[]) AS o (id, state, attempts, next_attempt_at)
), retried AS (
  UPDATE deliveries d SET attempts = o.attempts, next_attempt_at = o.next_attempt_at, lease_owner = NULL, lease_until = NULL
  FROM o WHERE d.ctid = ANY (ARRAY(${mineSql("o.state = 'pending'")})) AND d.id = o.id AND d.lease_owner = $13 AND o.state = 'pending'
  RETURNING d.id
), done AS (
  DELETE FROM deliveries d WHERE d.ctid = ANY (ARRAY(${mineSql("o.state <> 'pending'")})) AND d.lease_owner = $13
  RETURNING d.id
)${
    prune
      ? /* sql */ `, bounds AS MATERIALIZED (
  SELECT e.endpoint_id, e.low, kept.id AS high FROM unnest($18::bigint[], $19::bigint[]) AS e (endpoint_id, low)
  CROSS JOIN LATERAL (
    SELECT x.id FROM delivery_log x WHERE x.endpoint_id = e.endpoint_id ORDER BY x.id DESC OFFSET ${LOG_RETENTION - 1} LIMIT 1
  ) kept
), pruned AS (
  DELETE FROM delivery_log WHERE ctid = ANY (ARRAY(
    SELECT old.ctid FROM bounds b
    CROSS JOIN LATERAL (
      SELECT y.ctid FROM delivery_log y WHERE y.endpoint_id = b.endpoint_id AND y.id < b.high AND y.id >= b.low
      ORDER BY y.id DESC LIMIT ${PRUNE_MOST}
    ) old
  ))
)`
      : ''
  }
SELECT (SELECT array_agg(u.id ORDER BY u.n) FROM u) AS ids,
       (SELECT array_agg(id) FROM (SELECT id FROM retried UNION ALL SELECT id FROM done) s) AS settled,
       (SELECT array_agg(id ORDER BY id) FROM ins) AS logged,
       EXISTS (SELECT 1 FROM retried) AS retried${
    prune ? /* sql */ `,
       (SELECT array_agg(b.endpoint_id) FROM bounds b) AS pruned_endpoints,
       (SELECT array_agg(b.high) FROM bounds b) AS pruned_below` : ''
  }`;
}

interface RecordRow extends Row {
  /** Every entry's id, in the order given. */
  ids: number[] | null;
  settled: string[] | null;
  /** The ids of the entries kept (their endpoints exist). */
  logged: number[] | null;
  retried: boolean;
  /** With a prune: the endpoints pruned and, for each, the id below which it was. */
  pruned_endpoints?: number[] | null;
  pruned_below?: number[] | null;
}

/** Where each prune of the statement ended, for the next prune of the endpoint to start from. */
function notePruned(ctx: StoreContext, row: RecordRow): void {
  const endpoints = row.pruned_endpoints ?? [];
  endpoints.forEach((endpointId, i) => {
    const count = (ctx.pruned.get(Number(endpointId))?.count ?? 0) + 1;
    ctx.pruned.set(Number(endpointId), { below: Number(row.pruned_below![i]), count });
  });
}

/** Deliveries settled and log entries kept (each to be pruned in turn) count toward a vacuum. */
function noteTurnover(ctx: StoreContext, row: RecordRow): void {
  ctx.vacuum.turnedOver((row.settled?.length ?? 0) + (row.logged?.length ?? 0));
}

/** New entries are named to every daemon; a retry wakes dispatchers. */
function announceRecorded(d: Db, row: RecordRow): void {
  if (row.logged?.length) d.announce(JSON.stringify({ kind: 'logged', ids: row.logged.map(Number) }));
  if (row.retried) d.announce(OUTBOX_NOTICE);
}

/** An endpoint whose log to prune, from the id `low` up (0: all of it). */
interface Prune {
  endpointId: number;
  low: number;
}

function recordValues(owner: string, outcomes: DeliveryOutcome[], entries: Omit<DeliveryLogEntry, 'id'>[], prune: Prune[]): unknown[] {
  return [
    entries.map((e) => e.delivery_id),
    entries.map((e) => e.endpoint_id),
    entries.map((e) => e.event),
    entries.map((e) => (e.payload === undefined ? null : JSON.stringify(e.payload))),
    entries.map((e) => e.attempt),
    entries.map((e) => e.status_code),
    entries.map((e) => e.response),
    entries.map((e) => e.success),
    entries.map((e) => e.duration_ms),
    entries.map((e) => e.created_at),
    entries.map((e) => JSON.stringify(e.request_headers ?? {})),
    entries.map((e) => {
      const extra = logExtra(e);
      return extra ? JSON.stringify(extra) : null;
    }),
    owner,
    outcomes.map((o) => o.id),
    outcomes.map((o) => o.state),
    outcomes.map((o) => o.attempts),
    outcomes.map((o) => o.next_attempt_at),
    ...(prune.length > 0 ? [prune.map((p) => p.endpointId), prune.map((p) => p.low)] : []),
  ];
}

/** The entries as stored: the given fields with the ids the statement assigned, in order. */
function withIds(entries: Omit<DeliveryLogEntry, 'id'>[], ids: number[] | null): DeliveryLogEntry[] {
  return entries.map((entry, i) => ({ ...entry, id: Number(ids![i]) }));
}

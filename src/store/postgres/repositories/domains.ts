// Subscriptions and sites: the two tables that hold domains. A domain is unique across both
// (unique indexes) and belongs to one customer (the cross-customer rule, decided under an
// advisory lock per domain, since no constraint spans the two tables).
import { StoreConflictError, StoreUnavailableError, type NewSite, type RecordEvent, type SitesRepository, type SubscriptionsRepository } from '../../store.js';
import { KeyedBatcher } from '../batcher.js';
import type { Db, Row } from '../db.js';
import { announceRecord, changing, OUTBOX_NOTICE, timedCommit, type RepositoryFactory, type StoreContext } from './context.js';
import { createdManySql, createdManyValues, createdSql, createdValues, runCreated, type CreatedRow } from './created.js';
import { toSite, toSubscription, updateStatement } from '../rows.js';

/**
 * The conflicts the insert functions answer (each takes the domain's advisory lock first, so
 * everyone deciding about one domain, sites and main domains alike, goes one at a time), as the
 * JSON store words them.
 */
const CONFLICTS: Record<string, string> = {
  'users.customer': 'customer_id does not name a customer',
  'subscriptions.main_domain': 'a subscription with this main domain already exists',
  'subscriptions.missing': 'the subscription does not exist',
  'sites.domain': 'a site with this domain already exists',
  'domains.owner': 'the domain belongs to another customer',
  'subscriptions.forbidden': 'the subscription belongs to another customer',
  'subscriptions.none': 'there is no subscription to create the site in',
  'sites.missing': 'the site does not exist',
  'sites.forbidden': 'the site belongs to another customer',
};

function conflictError(constraint: string): StoreConflictError {
  return new StoreConflictError(constraint, CONFLICTS[constraint] ?? 'the write conflicts with the stored data');
}

/** A subscription with its default mark moved (migration 0002) and its event, in one statement. */
const CREATE_SUBSCRIPTION_SQL = createdSql(
  `SELECT i.conflict, i.subscription AS record, $1::bigint AS owner_id, i.cleared
   FROM panelctl_insert_subscription($1, $2, $3, $4, $5, $6) i`,
  6,
);

/**
 * A subscription's new status and its event, in one statement. The update takes only a status
 * other than the new one (re-checked on the row's newest version under a concurrent update), so
 * of several at once one changes it and publishes; the others find it done.
 */
const SET_STATUS_SQL = createdSql(
  `SELECT CASE WHEN EXISTS (SELECT 1 FROM upd) THEN NULL
               WHEN EXISTS (SELECT 1 FROM subscriptions WHERE id = $1) THEN 'subscriptions.status'
               ELSE 'subscriptions.missing' END AS conflict,
          (SELECT row_to_json(upd) FROM upd) AS record, (SELECT customer_id FROM upd) AS owner_id`,
  3,
  ['main_domain'],
  `upd AS MATERIALIZED (
     UPDATE subscriptions s SET status = $2, updated_at = $3 WHERE s.id = $1 AND s.status <> $2 RETURNING s.*
   ), `,
);

/**
 * A site removed if it is the customer's ($2; null: anyone's) and its event, in one statement.
 * The site's customer comes from its subscription, which cannot change hands.
 */
const DELETE_SITE_SQL = createdSql(
  `SELECT CASE WHEN EXISTS (SELECT 1 FROM del) THEN NULL
               WHEN EXISTS (SELECT 1 FROM t WHERE t.customer_id <> $2) THEN 'sites.forbidden'
               ELSE 'sites.missing' END AS conflict,
          (SELECT row_to_json(del) FROM del) AS record, (SELECT del.owner_id FROM del) AS owner_id`,
  2,
  ['domain'],
  `t AS MATERIALIZED (
     SELECT s.id, b.customer_id FROM sites s JOIN subscriptions b ON b.id = s.subscription_id WHERE s.id = $1
   ), del AS MATERIALIZED (
     DELETE FROM sites s USING t WHERE s.id = t.id AND ($2::bigint IS NULL OR t.customer_id = $2)
     RETURNING s.*, t.customer_id AS owner_id
   ), `,
);

/**
 * A site in the subscription chosen for it (migration 0007) and its event, in one statement.
 * The subscription comes back only with a conflict, whose message names it.
 */
const CREATE_SITE_SQL = createdSql(
  `SELECT c.conflict, c.site AS record, c.owner_id, CASE WHEN c.conflict IS NOT NULL THEN c.subscription END AS subscription
   FROM panelctl_create_site($1::bigint, $2::bigint, $3::text, $4::text) c`,
  4,
);

export const subscriptionsRepository: RepositoryFactory<SubscriptionsRepository> = (db, ctx) => {
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
      // The rule's lock, checks and insert in one round trip (migration 0002).
      const { rows } = await db.query<{ conflict: string | null; subscription: Row | null; cleared: number[] | null }>(
        'SELECT * FROM panelctl_insert_subscription($1, $2, $3, $4, $5, $6)',
        [record.customer_id, record.main_domain, record.is_default, record.status, record.created_at, record.updated_at],
      );
      const { conflict, subscription, cleared } = rows[0];
      if (conflict !== null) throw conflictError(conflict);
      await Promise.all([...(cleared ?? []), subscription!.id].map((id) => announceRecord(db, 'subscriptions', id)));
      return toSubscription(subscription!);
    },
    async create(record, event) {
      const row = await runCreated<CreatedRow & { cleared: number[] | null }>(db, ctx, CREATE_SUBSCRIPTION_SQL, [
        record.customer_id,
        record.main_domain,
        record.is_default,
        record.status,
        record.created_at,
        record.updated_at,
        ...createdValues(event),
      ]);
      if (row.conflict !== null) throw conflictError(row.conflict);
      await Promise.all([...(row.cleared ?? []), row.record!.id].map((id) => announceRecord(db, 'subscriptions', id)));
      return toSubscription(row.record!);
    },
    async update(id, patch) {
      const statement = updateStatement('subscriptions', id, { status: patch.status, updated_at: patch.updated_at });
      if (!statement) return subscriptions.get(id);
      const { rows } = await changing(db, 'subscriptions', statement.text, statement.values);
      return rows[0] && toSubscription(rows[0]);
    },
    async setStatus(id, status, updatedAt, event) {
      const row = await runCreated(db, ctx, SET_STATUS_SQL, [id, status, updatedAt, ...createdValues(event)]);
      if (row.conflict === 'subscriptions.status') throw new StoreConflictError(row.conflict, `subscription ${id} is already ${status}`);
      if (row.conflict !== null) throw conflictError(row.conflict);
      await announceRecord(db, 'subscriptions', id);
      return toSubscription(row.record!);
    },
    async remove(id) {
      const { rows } = await changing(db, 'subscriptions', 'DELETE FROM subscriptions WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toSubscription(rows[0]);
    },
  };
  return subscriptions;
};

/**
 * Sites created together, all for one choice of subscription (see siteKey): each as
 * CREATE_SITE_SQL makes it, in one statement and one commit. Every domain's advisory lock (the
 * function's, which then finds it held) is taken first, in the order of the keys, before any
 * subscription is locked: a statement holding a subscription never waits for a domain, and two
 * statements take their domains in one order, so no wait of theirs closes a cycle. The sort
 * reads every row of its input, the locks' included, before the first site is made.
 */
const CREATE_SITES_SQL = createdManySql(
  `SELECT a.i, c.conflict, c.site AS record, c.owner_id, CASE WHEN c.conflict IS NOT NULL THEN c.subscription END AS subscription
   FROM (SELECT a.* FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY AS a (subscription_id, customer_id, domain, created_at, i),
           (SELECT count(pg_advisory_xact_lock(1885433445, k.key)) AS locked
            FROM (SELECT DISTINCT hashtext(lower(d)) AS key FROM unnest($3::text[]) AS d ORDER BY 1) k) l
         ORDER BY a.i OFFSET 0) a
   CROSS JOIN LATERAL panelctl_create_site(a.subscription_id, a.customer_id, a.domain, a.created_at) c`,
  4,
);

type SiteRow = CreatedRow & { subscription: Row | null; i?: number };

interface SiteWrite {
  site: NewSite;
  event: RecordEvent;
}

/**
 * Concurrent `POST /sites` writes for one choice of subscription go together (see KeyedBatcher):
 * while one statement of theirs is out, the writes that come wait and go in the next, one
 * statement and one commit (one WAL flush) for all of them instead of one each. A write alone
 * goes at once, as it would without. Keyed by the subscription named, else by the customer
 * whose default is chosen: a statement then locks one subscription (see CREATE_SITES_SQL).
 */
function siteKey(site: NewSite): string {
  return site.subscription_id != null ? `s${site.subscription_id}` : `c${site.customer_id}`;
}

function siteValues({ site, event }: SiteWrite): unknown[] {
  return [site.subscription_id ?? null, site.customer_id, site.domain, site.created_at, ...createdValues(event)];
}

/**
 * Runs `writes` as one statement and answers each one's row or its own failure. When the
 * statement fails as a whole and changed nothing (a deadlock with another writer, say), each
 * write is made again on its own, so such a failure is only ever the failing write's.
 */
async function createSites(db: Db, ctx: StoreContext, writes: SiteWrite[]): Promise<Array<PromiseSettledResult<SiteRow>>> {
  const alone = () => Promise.allSettled(writes.map((write) => runCreated<SiteRow>(db, ctx, CREATE_SITE_SQL, siteValues(write))));
  if (writes.length === 1) return alone();
  let rows: SiteRow[];
  try {
    const statement = db.query<SiteRow>(CREATE_SITES_SQL, [
      writes.map((w) => w.site.subscription_id ?? null),
      writes.map((w) => w.site.customer_id),
      writes.map((w) => w.site.domain),
      writes.map((w) => w.site.created_at),
      ...createdManyValues(writes.map((w) => w.event)),
    ]);
    rows = (await (ctx.commitObserver ? timedCommit(ctx, statement) : statement)).rows;
  } catch (error) {
    // Unavailable (a bound exceeded, the connection lost, perhaps after the commit): each write
    // would meet the same, or may be done already, so each is answered so. A deadlock or any
    // other failure changed nothing: each write is made alone, to fail only if it fails itself.
    const code = ((error as { cause?: { code?: unknown } }).cause as { code?: unknown } | undefined)?.code;
    if (error instanceof StoreUnavailableError && code !== '40P01' && code !== '40001') {
      return writes.map(() => ({ status: 'rejected', reason: error }));
    }
    return alone();
  }
  if (rows.some((row) => row.conflict === null && row.queued > 0)) db.announce(OUTBOX_NOTICE);
  const byWrite = new Map(rows.map((row) => [Number(row.i), row]));
  return writes.map((_write, k) => {
    const row = byWrite.get(k + 1);
    return row ? { status: 'fulfilled', value: row } : { status: 'rejected', reason: new Error('the write was not answered') };
  });
}

export const sitesRepository: RepositoryFactory<SitesRepository> = (db, ctx) => {
  /** Outside a transaction, writes of one store go together; inside one, each is a statement of it. */
  const creates = db.inTransaction
    ? null
    : new KeyedBatcher<SiteWrite, PromiseSettledResult<SiteRow>>((_key, writes) => createSites(db, ctx, writes));
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
      // The rule's lock, checks and insert in one round trip (migration 0002).
      const { rows } = await db.query<{ conflict: string | null; site: Row | null }>('SELECT * FROM panelctl_insert_site($1, $2, $3)', [
        record.subscription_id,
        record.domain,
        record.created_at,
      ]);
      const { conflict, site } = rows[0];
      if (conflict !== null) throw conflictError(conflict);
      await announceRecord(db, 'sites', site!.id);
      return toSite(site!);
    },
    async create(site, event) {
      let row: SiteRow;
      if (creates) {
        const settled = await creates.run(siteKey(site), { site, event });
        if (settled.status === 'rejected') throw settled.reason;
        row = settled.value;
      } else row = await runCreated<SiteRow>(db, ctx, CREATE_SITE_SQL, siteValues({ site, event }));
      if (row.conflict === 'subscriptions.missing') {
        throw new StoreConflictError(row.conflict, `subscription ${site.subscription_id} does not exist`);
      }
      if (row.conflict === 'subscriptions.inactive') {
        const { id, status } = toSubscription(row.subscription!);
        throw new StoreConflictError(row.conflict, `subscription ${id} is ${status} and accepts no new sites`);
      }
      if (row.conflict !== null) throw conflictError(row.conflict);
      await announceRecord(db, 'sites', row.record!.id);
      return toSite(row.record!);
    },
    async delete(id, customerId, event) {
      const row = await runCreated(db, ctx, DELETE_SITE_SQL, [id, customerId, ...createdValues(event)]);
      if (row.conflict !== null) throw conflictError(row.conflict);
      await announceRecord(db, 'sites', id);
      return toSite(row.record!);
    },
    async remove(id) {
      const { rows } = await changing(db, 'sites', 'DELETE FROM sites WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toSite(rows[0]);
    },
  };
  return sites;
};

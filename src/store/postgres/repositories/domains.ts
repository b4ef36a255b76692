// Subscriptions and sites: the two tables that hold domains. A domain is unique across both
// (unique indexes) and belongs to one customer (the cross-customer rule, decided under an
// advisory lock per domain, since no constraint spans the two tables).
import { StoreConflictError, type SitesRepository, type SubscriptionsRepository } from '../../store.js';
import type { Row } from '../db.js';
import { announceRecord, changing, type RepositoryFactory } from './context.js';
import { createdSql, createdValues, runCreated, type CreatedRow } from './created.js';
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

/** A site in the subscription chosen for it (migration 0007) and its event, in one statement. */
const CREATE_SITE_SQL = createdSql(
  `SELECT c.conflict, c.site AS record, c.owner_id, c.subscription
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
      for (const id of [...(cleared ?? []), subscription!.id]) announceRecord(db, 'subscriptions', id);
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
      for (const id of [...(row.cleared ?? []), row.record!.id]) announceRecord(db, 'subscriptions', id);
      return toSubscription(row.record!);
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
  return subscriptions;
};

export const sitesRepository: RepositoryFactory<SitesRepository> = (db, ctx) => {
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
      announceRecord(db, 'sites', site!.id);
      return toSite(site!);
    },
    async create(site, event) {
      const row = await runCreated<CreatedRow & { subscription: Row | null }>(db, ctx, CREATE_SITE_SQL, [
        site.subscription_id ?? null,
        site.customer_id,
        site.domain,
        site.created_at,
        ...createdValues(event),
      ]);
      if (row.conflict === 'subscriptions.missing') {
        throw new StoreConflictError(row.conflict, `subscription ${site.subscription_id} does not exist`);
      }
      if (row.conflict === 'subscriptions.inactive') {
        const { id, status } = toSubscription(row.subscription!);
        throw new StoreConflictError(row.conflict, `subscription ${id} is ${status} and accepts no new sites`);
      }
      if (row.conflict !== null) throw conflictError(row.conflict);
      announceRecord(db, 'sites', row.record!.id);
      return toSite(row.record!);
    },
    async remove(id) {
      const { rows } = await changing(db, 'sites', 'DELETE FROM sites WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toSite(rows[0]);
    },
  };
  return sites;
};

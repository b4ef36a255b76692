// Subscriptions and sites: the two tables that hold domains. A domain is unique across both
// (unique indexes) and belongs to one customer (the cross-customer rule, decided under an
// advisory lock per domain, since no constraint spans the two tables).
import { StoreConflictError, type SitesRepository, type SubscriptionsRepository } from '../../store.js';
import type { Row } from '../db.js';
import { announceRecord, changing, type RepositoryFactory } from './context.js';
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
};

function conflictError(constraint: string): StoreConflictError {
  return new StoreConflictError(constraint, CONFLICTS[constraint] ?? 'the write conflicts with the stored data');
}

export const subscriptionsRepository: RepositoryFactory<SubscriptionsRepository> = (db) => {
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

export const sitesRepository: RepositoryFactory<SitesRepository> = (db) => {
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
    async remove(id) {
      const { rows } = await changing(db, 'sites', 'DELETE FROM sites WHERE id = $1 RETURNING *', [id]);
      return rows[0] && toSite(rows[0]);
    },
  };
  return sites;
};

// Subscriptions and sites: the two tables that hold domains. A domain is unique across both
// (unique indexes) and belongs to one customer (the cross-customer rule, decided under an
// advisory lock per domain, since no constraint spans the two tables).
import { StoreConflictError, type SitesRepository, type SubscriptionsRepository } from '../../store.js';
import type { Db } from '../db.js';
import { changing, type RepositoryFactory } from './context.js';
import { insertStatement, toSite, toSubscription, updateStatement } from '../rows.js';

/** Advisory lock class for the domain rule (two-key locks live apart from the migration lock). */
const DOMAIN_LOCK_CLASS = 0x70616e65;

/** Serialises everyone deciding about `domain` (sites and main domains alike) until commit. */
const lockDomain = (d: Db, domain: string) =>
  d.query('SELECT pg_advisory_xact_lock($1::int, hashtext(lower($2)))', [DOMAIN_LOCK_CLASS, domain]);

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
  return sites;
};

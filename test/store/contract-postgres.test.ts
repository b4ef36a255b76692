// The store contract on PostgreSQL: each test gets a fresh database (a copy of the run's migrated
// one, so a test costs a CREATE DATABASE rather than a migration), and `openAnother` a
// second store on the same database, as a second daemon would have.
import { describe, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createMigratedDatabase, pgAdminUrl } from '../helpers/postgres-db.js';
import { describeStoreContract } from './contract/suite.js';

const { url: adminUrl, reason } = pgAdminUrl();

if (!adminUrl) {
  console.warn(`PostgreSQL store contract skipped: ${reason}`);
  describe.skip(`store contract: postgres (${reason})`, () => it('needs PostgreSQL', () => undefined));
} else {
  let current: string | null = null;

  describeStoreContract('postgres', {
    async open() {
      current = await createMigratedDatabase(adminUrl, 'panelctl_contract');
      return PostgresStore.open(current);
    },
    async openAnother() {
      return PostgresStore.open(current!);
    },
    // Committed is durable: the next daemon on the database sees it (the crashed one's leases
    // live on until they end).
    async crash() {
      return PostgresStore.open(current!);
    },
  });
}

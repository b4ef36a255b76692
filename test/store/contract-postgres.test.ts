// The store contract on PostgreSQL: each test gets a fresh database (copied from one migrated
// template, so a test costs a CREATE DATABASE rather than a migration), and `openAnother` a
// second store on the same database, as a second daemon would have.
import pg from 'pg';
import { describe, it } from 'vitest';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { createDatabase, pgAdminUrl } from '../helpers/postgres-db.js';
import { describeStoreContract } from './contract/suite.js';

const { url: adminUrl, reason } = pgAdminUrl();

if (!adminUrl) {
  console.warn(`PostgreSQL store contract skipped: ${reason}`);
  describe.skip(`store contract: postgres (${reason})`, () => it('needs PostgreSQL', () => undefined));
} else {
  let template: Promise<string> | null = null;
  let current: string | null = null;
  let copies = 0;

  /** A migrated, empty database to copy from (no connection may stay open on it). */
  const migratedTemplate = () =>
    (template ??= (async () => {
      const url = await createDatabase(adminUrl, 'panelctl_contract_tpl');
      await (await PostgresStore.open(url)).close();
      return url;
    })());

  async function freshDatabase(): Promise<string> {
    const source = new URL(await migratedTemplate()).pathname.slice(1);
    const name = `panelctl_contract_${process.pid}_${++copies}`;
    const client = new pg.Client({ connectionString: adminUrl! });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE "${name}" TEMPLATE "${source}"`);
    } finally {
      await client.end();
    }
    const url = new URL(adminUrl!);
    url.pathname = `/${name}`;
    return url.toString();
  }

  describeStoreContract('postgres', {
    async open() {
      current = await freshDatabase();
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

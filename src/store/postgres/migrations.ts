// The PostgreSQL schema: a baseline (the schema of the first release) and one file per later
// change in migrations/, each a module exporting its SQL (a module, not a .sql file, so the
// build ships it with the code: tsc copies no other files). Applied at open, in one
// transaction, under an advisory lock: daemons that start together migrate once, the others
// wait and find it done.
import type { PoolClient } from 'pg';
import { StoreCorruptError } from '../store.js';
import baseline from './migrations/0001-baseline.js';
import domainWrites from './migrations/0002-domain-writes.js';
import revocationsNoted from './migrations/0003-revocations-noted.js';
import retryPolicies from './migrations/0004-retry-policies.js';
import endpointHeadersRotation from './migrations/0005-endpoint-headers-rotation.js';
import pausedEndpoints from './migrations/0006-paused-endpoints.js';
import siteCreate from './migrations/0007-site-create.js';
import endpointRates from './migrations/0008-endpoint-rates.js';
import logRevisions from './migrations/0009-log-revisions.js';
import queueNoTruncate from './migrations/0010-queue-no-truncate.js';
import feedMembers from './migrations/0011-feed-members.js';
import queueEndpointLocks from './migrations/0012-queue-endpoint-locks.js';
import queueWrites from './migrations/0013-queue-writes.js';

export interface PgMigration {
  version: number;
  name: string;
  sql: string;
}

/** Key of the session-wide advisory lock taken while migrating ("panelctl" in ASCII, as bigint). */
export const MIGRATION_LOCK_KEY = '8097874986878071916';

/** Ordered by version. Add one file and one entry per schema change; never edit a released one. */
export const PG_MIGRATIONS: PgMigration[] = [
  { version: 1, name: 'baseline', sql: baseline },
  { version: 2, name: 'domain writes in one statement', sql: domainWrites },
  { version: 3, name: 'revocations noted for cached callers', sql: revocationsNoted },
  { version: 4, name: 'retry schedules and caps per endpoint', sql: retryPolicies },
  { version: 5, name: 'endpoint headers and secret rotation', sql: endpointHeadersRotation },
  { version: 6, name: 'paused endpoints', sql: pausedEndpoints },
  { version: 7, name: 'a site created in one statement', sql: siteCreate },
  { version: 8, name: 'rate limits and caps across daemons', sql: endpointRates },
  { version: 9, name: 'delivery log revisions as counters', sql: logRevisions },
  { version: 10, name: 'queue tables keep their pages when vacuumed', sql: queueNoTruncate },
  { version: 11, name: 'change feed members for the write fence', sql: feedMembers },
  { version: 12, name: 'queue rows lock their endpoints once per statement', sql: queueEndpointLocks },
  { version: 13, name: 'fewer parses and index entries per queued delivery', sql: queueWrites },
];

/**
 * Databases made by development builds before the schema was squashed into the baseline record
 * version 1 as 'initial' (with up to eight versions). Nothing was released with that schema:
 * such a database is refused, never migrated by guesswork (see docs/decisions/store-layout.md).
 */
const PRE_BASELINE = 'initial';

/**
 * Brings the database up to the newest migration. Runs in one transaction under a
 * transaction-level advisory lock, so concurrent openers serialise and migrate once.
 */
export async function applyMigrations(client: PoolClient, migrations = PG_MIGRATIONS): Promise<number[]> {
  const applied: number[] = [];
  await client.query('BEGIN');
  try {
    // Not a request: a migration may rewrite a large table, and the daemons starting beside the
    // one that migrates wait for it. The connection's request bounds do not apply.
    await client.query('SET LOCAL statement_timeout = 0');
    await client.query('SET LOCAL lock_timeout = 0');
    await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK_KEY]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version integer PRIMARY KEY,
         name text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    const { rows } = await client.query<{ version: number; name: string }>('SELECT version, name FROM schema_migrations');
    if (rows.some((r) => Number(r.version) === 1 && r.name === PRE_BASELINE)) {
      throw new StoreCorruptError(
        'database',
        'its schema was made by a development build of panelctl from before 0.1.0, which this version does not migrate; ' +
          'create a new database (panelctl store migrate copies a JSON store into one)',
      );
    }
    const done = new Set(rows.map((r) => Number(r.version)));
    const newest = Math.max(0, ...migrations.map((m) => m.version));
    const ahead = [...done].filter((v) => v > newest);
    if (ahead.length > 0) {
      throw new StoreCorruptError(
        'database',
        `its schema version ${Math.max(...ahead)} is newer than this panelctl understands (${newest}); upgrade panelctl`,
      );
    }
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      applied.push(migration.version);
    }
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  return applied;
}

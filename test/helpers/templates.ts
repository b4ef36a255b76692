// What templates-global-setup.ts made once for the run, read from the environment every worker
// inherits (null outside such a run, e.g. a script importing the helpers: callers then make
// their own). No vitest import: the global setup itself uses this module.

export const TEMPLATES_ENV = 'PANELCTL_TEST_TEMPLATES';

/** The first admin of every test data directory. */
export const ADMIN_EMAIL = 'admin@localhost';
export const ADMIN_PASSWORD = 'admin-password-1';

export interface Templates {
  /** An initialised data directory (JSON store, the test admin), to copy. */
  dataDir: string;
  /** A migrated, empty database on the run's cluster, to create copies of (null: no cluster). */
  migratedDatabase: string | null;
  /**
   * A copy of it holding the test admin, as `panelctl init` leaves a database but with the
   * admin's password hashed as the data directory template's is, and without a JWT secret: the
   * first daemon of each copy makes its own, as a daemon does on a database that has none.
   */
  databaseWithAdmin: string | null;
  /** A certificate and key of the kind the daemon makes, for the test receivers. */
  receiver: { cert: string; key: string };
}

let parsed: Templates | null | undefined;

export function templates(): Templates | null {
  if (parsed === undefined) {
    const env = process.env[TEMPLATES_ENV];
    parsed = env ? (JSON.parse(env) as Templates) : null;
  }
  return parsed;
}

// The one place that chooses the store: PostgreSQL when a database URL is given, else the
// embedded JSON store in the data directory. The daemon, `init`, `admin reset-password`,
// `store migrate` and the tests open stores through it.
import { layout } from '../shared/paths.js';
import type { Store } from './store.js';

// Loaded only when a database URL is given, so the JSON store never loads the driver.
const POSTGRES_MODULE = './postgres/postgres-store.js';
type PostgresModule = {
  PostgresStore: { open(url: string, options?: { create?: boolean }): Promise<Store>; initialised(url: string): Promise<boolean> };
};

export interface StoreConfig {
  /** The data directory (the JSON store lives there; with PostgreSQL it holds TLS, pid and log only). */
  dataDir: string;
  /** `--database-url` / `PANELCTL_DATABASE_URL`: a PostgreSQL connection string. */
  databaseUrl?: string;
  /** Create the store when it does not exist yet (init); otherwise that is an error. */
  create?: boolean;
  /** Told of what the store repaired at open (a torn journal tail), for the daemon's log. */
  warn?: (message: string) => void;
}

/**
 * Opens the configured store.
 * @example
 * const store = await openStore({ dataDir: '/var/lib/panelctl' });
 */
export async function openStore(config: StoreConfig): Promise<Store> {
  if (config.databaseUrl) {
    const { PostgresStore } = (await import(POSTGRES_MODULE)) as PostgresModule;
    return PostgresStore.open(config.databaseUrl, { create: config.create });
  }
  const { JsonStore } = await import('./json/json-store.js');
  return JsonStore.open(layout(config.dataDir), { create: config.create, warn: config.warn });
}

/** Whether the configured store already holds an initialised panel (a first user exists). */
export async function storeInitialised(config: StoreConfig): Promise<boolean> {
  if (config.databaseUrl) {
    const { PostgresStore } = (await import(POSTGRES_MODULE)) as PostgresModule;
    return PostgresStore.initialised(config.databaseUrl);
  }
  const { JsonStore } = await import('./json/json-store.js');
  return JsonStore.exists(layout(config.dataDir));
}

/** `postgres://user:secret@host:5432/db` → `host:5432/db`: for status lines and logs. */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}${parsed.pathname}`;
  } catch {
    return 'postgresql (unparsable URL)';
  }
}

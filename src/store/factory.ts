// The one place that chooses the store: PostgreSQL when a database URL is given, else the
// embedded JSON store in the data directory. The daemon, `init`, `admin reset-password`,
// `store migrate` and the tests open stores through it.
import { layout } from '../shared/paths.js';
import type { Store } from './store.js';



export interface StoreConfig {
  /** The data directory (the JSON store lives there; with PostgreSQL it holds TLS, pid and log only). */
  dataDir: string;
  /** `--database-url` / `PANELCTL_DATABASE_URL`: a PostgreSQL connection string. */
  databaseUrl?: string;
  /** Create the store when it does not exist yet (init); otherwise that is an error. */
  create?: boolean;
  /** Told of what the store repaired at open (a torn journal tail), for the daemon's log. */
  warn?: (message: string) => void;
  /** Only to read, while a daemon owns the store (the JSON store writes nothing then). */
  readOnly?: boolean;
}

/**
 * Opens the configured store.
 * @example
 * const store = await openStore({ dataDir: '/var/lib/panelctl' });
 */
export async function openStore(config: StoreConfig): Promise<Store> {
  if (config.databaseUrl) {
    // Loaded only when a database URL is given, so the JSON store never loads the driver.
    const { PostgresStore } = await import('./postgres/postgres-store.js');
    return PostgresStore.open(config.databaseUrl, { create: config.create });
  }
  const { JsonStore } = await import('./json/json-store.js');
  return JsonStore.open(layout(config.dataDir), { create: config.create, warn: config.warn, readOnly: config.readOnly });
}

/** Whether the configured store already holds an initialised panel (a first user exists). */
export async function storeInitialised(config: StoreConfig): Promise<boolean> {
  if (config.databaseUrl) {
    const { PostgresStore } = await import('./postgres/postgres-store.js');
    return PostgresStore.initialised(config.databaseUrl);
  }
  const { JsonStore } = await import('./json/json-store.js');
  return JsonStore.exists(layout(config.dataDir));
}

/**
 * Names a database without credentials, for status lines and logs.
 * @example
 * describeDatabaseUrl('postgres://panel:secret@db.internal/panel') // 'db.internal:5432/panel'
 */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    // A Unix socket connection names its directory (and port) as parameters: ?host=DIR&port=N.
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
    return `${host}:${parsed.port || parsed.searchParams.get('port') || '5432'}${parsed.pathname || '/'}`;
  } catch {
    return '(unparsable database URL)';
  }
}

// How long a PostgreSQL daemon waits, and on how many connections: every wait of a request
// (a statement, a lock, a free connection) is bounded, so a held lock or a sick server gives
// 503 envelopes instead of requests hanging until the pool is gone. See docs/decisions/postgres.md.

export interface PgLimits {
  /** Connections of the request pool (the dispatcher has its own, see postgres-store.ts). */
  poolSize: number;
  /** The server cancels a statement running longer (`statement_timeout`). */
  statementTimeoutMs: number;
  /** The server gives up waiting for a lock after this long (`lock_timeout`). */
  lockTimeoutMs: number;
  /** The longest a request waits for a pooled connection, or for a new one to be made. */
  acquireTimeoutMs: number;
}

/**
 * Below the time a client gives up on an answer, above any statement of a healthy request; a
 * lock wait ends before the statement bound, so it is named as a lock, not a slow statement.
 */
export const PG_LIMIT_DEFAULTS: Readonly<PgLimits> = {
  poolSize: 10,
  statementTimeoutMs: 5_000,
  lockTimeoutMs: 2_000,
  acquireTimeoutMs: 3_000,
};

export const PG_LIMIT_ENV: Readonly<Record<keyof PgLimits, string>> = {
  poolSize: 'PANELCTL_DATABASE_POOL_SIZE',
  statementTimeoutMs: 'PANELCTL_DATABASE_STATEMENT_TIMEOUT_MS',
  lockTimeoutMs: 'PANELCTL_DATABASE_LOCK_TIMEOUT_MS',
  acquireTimeoutMs: 'PANELCTL_DATABASE_ACQUIRE_TIMEOUT_MS',
};

/** The server's own parameters a database URL may carry; the driver sends them, so they win. */
const URL_PARAMS: Partial<Record<keyof PgLimits, string>> = {
  statementTimeoutMs: 'statement_timeout',
  lockTimeoutMs: 'lock_timeout',
};

/**
 * The limits: defaults, then the environment, then `statement_timeout` / `lock_timeout` in the
 * URL. A value that is not a positive integer is an error naming where it came from.
 * @example
 * resolvePgLimits({ PANELCTL_DATABASE_POOL_SIZE: '20' }, 'postgres://db/panel').poolSize; // 20
 */
export function resolvePgLimits(env: NodeJS.ProcessEnv, url: string): PgLimits {
  const limits = { ...PG_LIMIT_DEFAULTS };
  for (const [field, name] of Object.entries(PG_LIMIT_ENV) as Array<[keyof PgLimits, string]>) {
    const raw = env[name];
    if (raw !== undefined && raw !== '') limits[field] = positive(raw, name, field);
  }
  let params: URLSearchParams | null = null;
  try {
    params = new URL(url).searchParams;
  } catch {
    // The driver reports an unusable URL when it connects.
  }
  for (const [field, param] of Object.entries(URL_PARAMS) as Array<[keyof PgLimits, string]>) {
    const raw = params?.get(param);
    if (raw) limits[field] = positive(raw, `the database URL's ${param}`, field);
  }
  return limits;
}

function positive(raw: string, name: string, field: keyof PgLimits): number {
  const unit = field === 'poolSize' ? 'connections' : 'milliseconds';
  if (!/^[1-9][0-9]{0,9}$/.test(raw)) throw new Error(`${name} must be a positive integer (${unit}), got "${raw}"`);
  return Number(raw);
}

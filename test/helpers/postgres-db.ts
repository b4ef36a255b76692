// For test files: the admin URL of this run's PostgreSQL cluster (started by
// postgres-global-setup.ts), or why there is none; and a fresh database per caller.
import { inject } from 'vitest';
import { createDatabase, PG_ADMIN_URL_ENV, PG_SKIP_REASON_ENV } from './postgres.js';
import { templates } from './templates.js';

export { createDatabase };

/** A fresh database holding the store's schema and nothing else (a copy of the run's migrated one when there is one). */
export function createMigratedDatabase(adminUrl: string, prefix: string): Promise<string> {
  return createDatabase(adminUrl, prefix, templates()?.migratedDatabase);
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgAdminUrl: string | null;
    pgSkipReason: string | null;
  }
}

/** The admin URL of this run's cluster, or null with the reason the PostgreSQL tests skip. */
export function pgAdminUrl(): { url: string | null; reason: string } {
  let url: string | null = null;
  let reason: string | null = null;
  try {
    url = inject('pgAdminUrl') ?? null;
    reason = inject('pgSkipReason') ?? null;
  } catch {
    // Not under vitest's globalSetup: fall back to the environment.
  }
  url ??= process.env[PG_ADMIN_URL_ENV] ?? null;
  return { url, reason: reason ?? process.env[PG_SKIP_REASON_ENV] ?? 'no PostgreSQL cluster was started for this run' };
}


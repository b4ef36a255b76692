// Turns driver errors into the store's backend-neutral ones: unique violations become
// conflicts named as in store.ts, lost connections and exceeded bounds (statement, lock, pool
// acquisition: see limits.ts) become "unavailable", answered 503. Messages carry no SQL
// and no credentials; the driver's error stays reachable as `cause`.
import { StoreConflictError, StoreError, StoreUnavailableError } from '../store.js';

/** Unique indexes → the contract's constraint names and the conflict messages. */
const UNIQUE: Record<string, [constraint: string, message: string]> = {
  users_email_key: ['users.email', 'a user with this email already exists'],
  sites_domain_key: ['sites.domain', 'a site with this domain already exists'],
  subscriptions_main_domain_key: ['subscriptions.main_domain', 'a subscription with this main domain already exists'],
};

/** SQLSTATE classes and codes meaning "the server is not there for us right now". */
function unavailable(code: string | undefined): boolean {
  if (!code) return false;
  return (
    code.startsWith('08') || // connection exception
    code === '57P01' || // admin_shutdown
    code === '57P02' || // crash_shutdown
    code === '57P03' || // cannot_connect_now
    code === '57014' || // query_canceled: statement_timeout (the daemon cancels nothing else)
    code === '55P03' || // lock_not_available: lock_timeout
    code === '53300' || // too_many_connections
    code === '3D000' || // invalid_catalog_name: the database does not exist
    code === '28P01' || // invalid_password
    code === '28000' || // invalid_authorization_specification
    code === '40001' || // serialization_failure
    code === '40P01' || // deadlock_detected
    code.startsWith('53') || // insufficient resources (disk full, out of memory)
    ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'].includes(code)
  );
}

export function isUniqueViolation(error: unknown): error is { code: string; constraint?: string } {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}

/** Maps anything thrown by the driver to a StoreError (store errors pass through unchanged). */
export function mapError(error: unknown): StoreError {
  if (error instanceof StoreError) return error;
  const e = error as { code?: string; constraint?: string; message?: string } | undefined;
  if (isUniqueViolation(e)) {
    const known = e.constraint ? UNIQUE[e.constraint] : undefined;
    if (known) return new StoreConflictError(known[0], known[1]);
    return new StoreConflictError(e.constraint ?? 'unique', 'the record conflicts with an existing one');
  }
  if (unavailable(e?.code) || /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Cannot use a pool after calling end|Client was closed/i.test(e?.message ?? '')) {
    return new StoreUnavailableError('the PostgreSQL store is unavailable', { cause: error });
  }
  return new StoreError('the PostgreSQL store could not complete the request', { cause: error });
}

// How the data directory's (or database's) owner reaches the store without a login, shared by
// the `admin` commands:
//
// - PostgreSQL (`--database-url`): whoever holds the URL works in the database, daemons running
//   or not; every daemon checks each request against it (and hears the change feed).
// - JSON store, daemon stopped: the command takes the data directory's lock (so no daemon starts
//   meanwhile), opens the store and works through its repositories.
// - JSON store, daemon running: the store belongs to the daemon, so the command never writes its
//   files. The owner can read `jwt-secret`: the command signs a short-lived JWT for an admin (the
//   same claims as the daemon's TokenService, read from the store without writing it) and calls
//   the admin API like any client.
import { readFile } from 'node:fs/promises';
import { EXIT } from '../../../shared/errors.js';
import type { DataLayout } from '../../../shared/paths.js';
import type { Store } from '../../../store/store.js';
import type { ApiClient } from '../../api-client.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';

/** Lifetime of the JWT a command signs for its calls. */
export const OWNER_TOKEN_TTL_SECONDS = 60;

/** Runs `fn` on the store itself: PostgreSQL, or a JSON store no daemon holds. */
export async function withStore<T>(paths: DataLayout, databaseUrl: string | undefined, fn: (store: Store) => Promise<T>): Promise<T> {
  const { openStore } = await import('../../../store/factory.js');
  const store = await openStore({ dataDir: paths.root, databaseUrl });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/** With the JSON store's daemon stopped: under the lock, through the store. Null when a daemon holds the directory. */
export async function withStoppedStore<T>(paths: DataLayout, fn: (store: Store) => Promise<T>): Promise<T | null> {
  const { acquireLock, DirectoryLockedError } = await import('../../../daemon/lock.js');
  let release: () => Promise<void>;
  try {
    release = await acquireLock(paths.pidFile, paths.root);
  } catch (error) {
    if (error instanceof DirectoryLockedError) return null;
    throw error;
  }
  try {
    return await withStore(paths, undefined, fn);
  } finally {
    await release();
  }
}

/**
 * An admin to sign the JWT for (with its token generation), read from the store without writing
 * it. The lowest id: normally the admin `init` created. The daemon checks the token against its
 * own records, so a stale read only means a refused call, never a wrong change.
 */
async function findAdmin(paths: DataLayout): Promise<{ id: number; generation: number }> {
  const { openStore } = await import('../../../store/factory.js');
  let admins;
  try {
    const store = await openStore({ dataDir: paths.root, readOnly: true });
    admins = (await store.users.list()).filter((u) => u.role === 'admin');
    await store.close();
  } catch (error) {
    throw new CliError(`cannot read the store in ${paths.root}: ${(error as Error).message}`);
  }
  if (admins.length === 0) throw new CliError(`the store in ${paths.root} holds no admin user to act as`);
  return { id: admins[0].id, generation: admins[0].token_generation ?? 0 };
}

/** With the JSON store's daemon running: a client of its API with a short-lived admin JWT; `what` names the action for errors. */
export async function ownerClient(ctx: Context, paths: DataLayout, what: string): Promise<ApiClient> {
  const { readState } = await import('../../../daemon/state-file.js');
  const { TokenService } = await import('../../../daemon/auth/tokens.js');
  const state = await readState(paths);
  if (!state) throw new CliError(`a daemon holds ${paths.root} but has not written daemon.json yet; try again in a moment`);
  let secret: string;
  try {
    secret = (await readFile(paths.jwtSecret, 'utf8')).trim();
  } catch (error) {
    throw new CliError(`cannot read the JWT secret ${paths.jwtSecret}: ${(error as Error).message}; only the data directory's owner can ${what}`, EXIT.AUTH);
  }
  const admin = await findAdmin(paths);
  const token = await new TokenService(new TextEncoder().encode(secret)).issue(admin.id, 'admin', OWNER_TOKEN_TTL_SECONDS, admin.generation);
  // An empty PANELCTL_CA is unset, as for every other command.
  const explicitCa = ctx.globals.ca || ctx.env.PANELCTL_CA || undefined;
  return ctx.newClient({ baseUrl: state.url, token, caFile: explicitCa ?? paths.cert });
}

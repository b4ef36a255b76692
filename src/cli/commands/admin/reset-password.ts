// `panelctl admin reset-password --email E [--password-stdin]`: recovers a lost password. Whoever
// owns the data directory may do it, daemon running or not; the password is printed only when
// this command generated it. The user's existing JWTs end (see passwordChange).
//
// - PostgreSQL (`--database-url`): whoever holds the URL updates the user in the database, daemons
//   running or not; every daemon checks each request against it, so the old JWTs end at once.
// - JSON store, daemon stopped: the command takes the data directory's lock (so no daemon starts
//   meanwhile), opens the store and updates the user through its repositories.
// - JSON store, daemon running: the store belongs to the daemon, so the command never writes its
//   files. The owner can read `jwt-secret`: the command signs a short-lived JWT for an admin (the
//   same claims as the daemon's TokenService, read from the store without writing it) and calls
//   POST /admin/users/:id/password like any client.
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { EXIT } from '../../../shared/errors.js';
import { layout, type DataLayout } from '../../../shared/paths.js';
import type { UserDetail } from '../../api-types.js';
import { ApiClient, ApiRequestError } from '../../api-client.js';
import type { Context } from '../../context.js';
import { CliError, UsageError } from '../../errors.js';
import { readNewPassword } from '../../prompt.js';

export interface ResetPasswordOptions {
  email: string;
  passwordStdin?: boolean;
  databaseUrl?: string;
}

/** Lifetime of the JWT the command signs for its one call. */
export const RESET_TOKEN_TTL_SECONDS = 60;

export function adminResetPasswordCommand(ctx: Context): Command {
  return new Command('reset-password')
    .description("set a user's password (ending their sessions), with or without a running daemon; for the data directory's owner")
    .requiredOption('--email <email>', "the user's login email")
    .option('--password-stdin', 'read the new password from the first line of standard input (else asked on a terminal, or generated and shown once)')
    .option('--database-url <url>', 'the PostgreSQL store (default PANELCTL_DATABASE_URL); else the data directory\'s JSON store')
    .action(async (options: ResetPasswordOptions) => adminResetPasswordRun(ctx, options));
}

interface Outcome {
  id: number;
  email: string;
  daemon: 'running' | 'stopped';
}

export async function adminResetPasswordRun(ctx: Context, options: ResetPasswordOptions): Promise<void> {
  const { isInitialised } = await import('../../../daemon/init.js');
  const { generatePassword } = await import('../../../daemon/auth/password.js');
  const email = options.email.trim().toLowerCase();
  if (!email) throw new UsageError('--email must not be empty');
  const paths = layout(ctx.dataDir());
  const databaseUrl = options.databaseUrl || ctx.env.PANELCTL_DATABASE_URL || undefined;
  if (!(await isInitialised(paths.root, databaseUrl))) {
    throw new CliError(databaseUrl ? 'the database holds no panel (run panelctl init --database-url)' : `${paths.root} is not an initialised data directory (see --data-dir)`);
  }

  const chosen = await readNewPassword(ctx, Boolean(options.passwordStdin), `New password for ${email} (empty to generate one): `);
  const password = chosen ?? generatePassword();
  const outcome = databaseUrl
    ? await direct(paths, databaseUrl, email, password)
    : ((await offline(paths, email, password)) ?? (await online(ctx, paths, email, password)));

  if (ctx.json) {
    ctx.printJson({ ...outcome, password: chosen ? null : password });
    if (!chosen) ctx.err('warning: the generated password is shown only once and cannot be retrieved again.');
    return;
  }
  const ui = await ctx.ui();
  const pairs: Array<[string, string]> = [
    ['id', String(outcome.id)],
    ['email', outcome.email],
  ];
  if (!chosen) pairs.push(['password', ui.c.bold(password)]);
  ui.record(pairs);
  if (!chosen) ui.warn('The generated password is shown only once and cannot be retrieved again: store it now.');
  ui.success(`Password of ${outcome.email} reset${outcome.daemon === 'running' ? ' through the running daemon' : ''}; their earlier sessions have ended`);
}

/** With the daemon stopped: under the lock, through the store. Null when a daemon holds the directory. */
async function offline(paths: DataLayout, email: string, password: string): Promise<Outcome | null> {
  const { acquireLock, DirectoryLockedError } = await import('../../../daemon/lock.js');
  let release: () => Promise<void>;
  try {
    release = await acquireLock(paths.pidFile, paths.root);
  } catch (error) {
    if (error instanceof DirectoryLockedError) return null;
    throw error;
  }
  try {
    return { ...(await direct(paths, undefined, email, password)), daemon: 'stopped' };
  } finally {
    await release();
  }
}

/** Through the store itself: PostgreSQL, or a JSON store no daemon holds. */
async function direct(paths: DataLayout, databaseUrl: string | undefined, email: string, password: string): Promise<Outcome> {
  const { openStore } = await import('../../../store/factory.js');
  const { passwordChange } = await import('../../../daemon/auth/password.js');
  const store = await openStore({ dataDir: paths.root, databaseUrl });
  try {
    const user = await store.users.byEmail(email);
    if (!user) throw new CliError(`no user with email ${email}`);
    await store.users.update(user.id, await passwordChange(user, password, new Date().toISOString()));
    return { id: user.id, email: user.email, daemon: databaseUrl ? 'running' : 'stopped' };
  } finally {
    await store.close();
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

/** With the daemon running: a short-lived admin JWT and the admin API. */
async function online(ctx: Context, paths: DataLayout, email: string, password: string): Promise<Outcome> {
  const { readState } = await import('../../../daemon/state-file.js');
  const { TokenService } = await import('../../../daemon/auth/tokens.js');
  const state = await readState(paths);
  if (!state) throw new CliError(`a daemon holds ${paths.root} but has not written daemon.json yet; try again in a moment`);
  let secret: string;
  try {
    secret = (await readFile(paths.jwtSecret, 'utf8')).trim();
  } catch (error) {
    throw new CliError(`cannot read the JWT secret ${paths.jwtSecret}: ${(error as Error).message}; only the data directory's owner can reset passwords`, EXIT.AUTH);
  }
  const admin = await findAdmin(paths);
  const token = await new TokenService(new TextEncoder().encode(secret)).issue(admin.id, 'admin', RESET_TOKEN_TTL_SECONDS, admin.generation);
  const explicitCa = ctx.globals.ca ?? ctx.env.PANELCTL_CA;
  const client = new ApiClient({ baseUrl: state.url, token, caFile: explicitCa ?? paths.cert });
  try {
    const { data: users } = await client.call<UserDetail[]>('GET', '/admin/users');
    const user = users.find((u) => u.email.toLowerCase() === email);
    if (!user) throw new CliError(`no user with email ${email}`);
    const { data } = await client.call<UserDetail>('POST', `/admin/users/${user.id}/password`, { password });
    return { id: data.id, email: data.email, daemon: 'running' };
  } catch (error) {
    if (error instanceof ApiRequestError && error.status === 401) {
      throw new CliError(`the running daemon refused the signed admin token (${error.message}); is ${paths.jwtSecret} the one it uses?`, EXIT.AUTH);
    }
    throw error;
  } finally {
    await client.close();
  }
}

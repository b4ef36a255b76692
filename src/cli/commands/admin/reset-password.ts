// `panelctl admin reset-password --email E [--password-stdin]`: recovers a lost password. Whoever
// owns the data directory may do it, daemon running or not; the password is printed only when
// this command generated it. The user's existing JWTs end (see passwordChange), and so does the
// lockout of the account's second factor (the address lockout is `admin unlock`'s: an address
// is not an account, and one may have tried many).
//
// How the store is reached (owner.ts): PostgreSQL, the user updated in the database; JSON store
// with the daemon stopped, through the store under the lock; with the daemon running, through
// POST /admin/users/:id/password with a short-lived admin JWT signed with `jwt-secret`.
import { Command } from 'commander';
import { EXIT } from '../../../shared/errors.js';
import { layout, type DataLayout } from '../../../shared/paths.js';
import type { UserDetail } from '../../api-types.js';
import { ApiRequestError } from '../../api-client.js';
import type { Context } from '../../context.js';
import { CliError, UsageError } from '../../errors.js';
import { readNewPassword } from '../../prompt.js';
import type { Store } from '../../../store/store.js';
import { OWNER_TOKEN_TTL_SECONDS, ownerClient, withStoppedStore, withStore } from './owner.js';

export interface ResetPasswordOptions {
  email: string;
  passwordStdin?: boolean;
  databaseUrl?: string;
}

/** Lifetime of the JWT the command signs for its calls. */
export const RESET_TOKEN_TTL_SECONDS = OWNER_TOKEN_TTL_SECONDS;

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
  const outcome = await withStoppedStore(paths, (store) => change(store, email, password));
  return outcome && { ...outcome, daemon: 'stopped' };
}

/** Through the store itself: PostgreSQL, or a JSON store no daemon holds. */
async function direct(paths: DataLayout, databaseUrl: string, email: string, password: string): Promise<Outcome> {
  return { ...(await withStore(paths, databaseUrl, (store) => change(store, email, password))), daemon: 'running' };
}

async function change(store: Store, email: string, password: string): Promise<Omit<Outcome, 'daemon'>> {
  const { passwordChange } = await import('../../../daemon/auth/password.js');
  const { totpLockoutKey } = await import('../../../daemon/plugins/lockout.js');
  const user = await store.users.byEmail(email);
  if (!user) throw new CliError(`no user with email ${email}`);
  await store.users.update(user.id, await passwordChange(user, password, new Date().toISOString()));
  // As the daemon's route does: the owner's reset is a way back in, so the account's
  // second-factor lockout ends with it.
  await store.limiter.remove(totpLockoutKey(user.id));
  return { id: user.id, email: user.email };
}

/** With the daemon running: a short-lived admin JWT and the admin API. */
async function online(ctx: Context, paths: DataLayout, email: string, password: string): Promise<Outcome> {
  const client = await ownerClient(ctx, paths, 'reset passwords');
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

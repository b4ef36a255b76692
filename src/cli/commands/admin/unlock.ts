// `panelctl admin unlock [--ip IP] [--email E]`: ends login lockouts for the data directory's (or
// database's) owner, daemon running or not (see owner.ts for how the store is reached). Without
// options every lockout ends: every address's (failed logins) and every account's (wrong
// two-factor codes); `--ip` ends one address's, `--email` one account's second-factor lock.
import { Command } from 'commander';
import { EXIT } from '../../../shared/errors.js';
import { layout, type DataLayout } from '../../../shared/paths.js';
import { ApiRequestError } from '../../api-client.js';
import type { Context } from '../../context.js';
import type { Store } from '../../../store/store.js';
import { CliError, UsageError } from '../../errors.js';
import { ownerClient, withStoppedStore, withStore } from './owner.js';

export interface UnlockOptions {
  ip?: string;
  email?: string;
  databaseUrl?: string;
}

interface Outcome {
  addresses: number;
  accounts: number;
  daemon: 'running' | 'stopped';
}

export function adminUnlockCommand(ctx: Context): Command {
  return new Command('unlock')
    .description("end login lockouts (all, or one address's, or one account's second factor), with or without a running daemon; for the data directory's owner")
    .option('--ip <ip>', 'end the lockout of this address only (failed logins and password resets from it)')
    .option('--email <email>', "end the lockout of this account's second factor only (wrong two-factor codes)")
    .option('--database-url <url>', "the PostgreSQL store (default PANELCTL_DATABASE_URL); else the data directory's JSON store")
    .action(async (options: UnlockOptions) => adminUnlockRun(ctx, options));
}

export async function adminUnlockRun(ctx: Context, options: UnlockOptions): Promise<void> {
  const { isInitialised } = await import('../../../daemon/init.js');
  const { addressForms, UnlockError } = await import('../../../daemon/auth/unlock.js');
  const request = { ip: options.ip?.trim(), email: options.email?.trim().toLowerCase() };
  if (request.ip !== undefined) {
    try {
      addressForms(request.ip);
    } catch (error) {
      if (error instanceof UnlockError) throw new UsageError(`--ip takes an IPv4 or IPv6 address, got "${options.ip}"`);
      throw error;
    }
  }
  if (request.email === '') throw new UsageError('--email must not be empty');
  const paths = layout(ctx.dataDir());
  const databaseUrl = options.databaseUrl || ctx.env.PANELCTL_DATABASE_URL || undefined;
  if (!(await isInitialised(paths.root, databaseUrl))) {
    throw new CliError(databaseUrl ? 'the database holds no panel (run panelctl init --database-url)' : `${paths.root} is not an initialised data directory (see --data-dir)`);
  }
  const outcome: Outcome = databaseUrl
    ? { ...(await withStore(paths, databaseUrl, (store) => direct(store, request))), daemon: 'running' }
    : await (async () => {
        const offline = await withStoppedStore(paths, (store) => direct(store, request));
        return offline ? { ...offline, daemon: 'stopped' as const } : online(ctx, paths, request);
      })();

  if (ctx.json) {
    ctx.printJson(outcome);
    return;
  }
  const ui = await ctx.ui();
  const what = request.ip === undefined && request.email === undefined ? 'every login lockout' : [request.ip && `address ${request.ip}`, request.email && `the second factor of ${request.email}`].filter(Boolean).join(' and ');
  const counted = `${outcome.addresses} address${outcome.addresses === 1 ? '' : 'es'}, ${outcome.accounts} account${outcome.accounts === 1 ? '' : 's'} had failed attempts on record`;
  ui.success(`Ended ${what}${outcome.daemon === 'running' ? ' through the running daemon' : ''} (${counted})`);
}

async function direct(store: Store, request: { ip?: string; email?: string }) {
  const { unlock, UnlockError } = await import('../../../daemon/auth/unlock.js');
  try {
    return await unlock(store, request);
  } catch (error) {
    if (error instanceof UnlockError) throw new CliError(error.message);
    throw error;
  }
}

async function online(ctx: Context, paths: DataLayout, request: { ip?: string; email?: string }): Promise<Outcome> {
  const client = await ownerClient(ctx, paths, 'unlock logins');
  try {
    const { data } = await client.call<{ addresses: number; accounts: number }>('POST', '/admin/unlock', request);
    return { ...data, daemon: 'running' };
  } catch (error) {
    if (error instanceof ApiRequestError && error.status === 401) {
      throw new CliError(`the running daemon refused the signed admin token (${error.message}); is ${paths.jwtSecret} the one it uses?`, EXIT.AUTH);
    }
    if (error instanceof ApiRequestError && error.status === 404) throw new CliError(error.message);
    throw error;
  } finally {
    await client.close();
  }
}

// `panelctl init`: the one offline command. Creates the data directory, the store (JSON in the
// data directory, or PostgreSQL with --database-url) and the first admin.
import { Command } from 'commander';
import { EXIT } from '../../shared/errors.js';
import type { Context } from '../context.js';
import { CliError } from '../errors.js';
import { readNewPassword } from '../prompt.js';

export interface InitOptions {
  email?: string;
  name?: string;
  passwordStdin?: boolean;
  databaseUrl?: string;
}

/** `--database-url`, else PANELCTL_DATABASE_URL; undefined: the JSON store in the data directory. */
export function databaseUrlOf(ctx: Context, flag: string | undefined): string | undefined {
  return flag || ctx.env.PANELCTL_DATABASE_URL || undefined;
}

export function initCommand(ctx: Context): Command {
  return new Command('init')
    .description('create the data directory, TLS certificate and the first admin user')
    .option('--email <email>', 'admin email', 'admin@localhost')
    .option('--name <name>', 'admin display name', 'Administrator')
    .option('--password-stdin', 'read the admin password from standard input')
    .option('--database-url <url>', 'keep the store in this PostgreSQL database (also PANELCTL_DATABASE_URL)')
    .action(async (options: InitOptions) => initRun(ctx, options));
}

export async function initRun(ctx: Context, options: InitOptions): Promise<void> {
  const { AlreadyInitialisedError, initDataDir, isInitialised } = await import('../../daemon/init.js');
  const { layout } = await import('../../shared/paths.js');
  const { readPid, isAlive } = await import('../../daemon/lock.js');
  const { describeDatabaseUrl } = await import('../../store/factory.js');
  const dir = ctx.dataDir();
  const databaseUrl = databaseUrlOf(ctx, options.databaseUrl);
  const where = databaseUrl ? `the database ${describeDatabaseUrl(databaseUrl)}` : dir;
  const pid = await readPid(layout(dir).pidFile);
  if (pid && isAlive(pid)) throw new CliError(`a daemon (pid ${pid}) holds ${dir}; init works only on a stopped daemon`, EXIT.ERROR);
  try {
    if (await isInitialised(dir, databaseUrl)) throw new CliError(`${where} is already initialised`, EXIT.ERROR);
    const password = await readNewPassword(ctx, Boolean(options.passwordStdin));
    const result = await initDataDir(dir, { email: options.email, name: options.name, password: password ?? undefined, databaseUrl });
    reportInit(ctx, result);
  } catch (error) {
    if (error instanceof CliError) throw error;
    if (error instanceof AlreadyInitialisedError) throw new CliError(error.message, EXIT.ERROR);
    throw new CliError(`cannot initialise ${where}: ${(error as Error).message}`, EXIT.ERROR);
  }
}

export function reportInit(ctx: Context, result: { paths: { root: string }; store: string; email: string; generatedPassword: string | null }): void {
  const database = result.store !== result.paths.root ? result.store : null;
  if (ctx.json) {
    ctx.printJson({ data_dir: result.paths.root, ...(database ? { database } : {}), email: result.email, password: result.generatedPassword });
    return;
  }
  ctx.out(database ? `Initialised the database ${database} (data directory ${result.paths.root})` : `Initialised ${result.paths.root}`);
  ctx.out(`Admin user: ${result.email}`);
  if (result.generatedPassword) {
    ctx.out(`Admin password: ${result.generatedPassword}`);
    ctx.err('This password is shown once and cannot be retrieved again: store it now.');
  }
}

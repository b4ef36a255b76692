// `panelctl init`: the one offline command. Creates the data directory and the first admin.
import { Command } from 'commander';
import { EXIT } from '../../shared/errors.js';
import type { Context } from '../context.js';
import { CliError, UsageError } from '../errors.js';
import { readNewPassword } from '../prompt.js';

export interface InitOptions {
  email?: string;
  name?: string;
  passwordStdin?: boolean;
}

export function initCommand(ctx: Context): Command {
  return new Command('init')
    .description('create the data directory, TLS certificate and the first admin user')
    .option('--email <email>', 'admin email', 'admin@localhost')
    .option('--name <name>', 'admin display name', 'Administrator')
    .option('--password-stdin', 'read the admin password from standard input')
    .action(async (options: InitOptions) => initRun(ctx, options));
}

export async function initRun(ctx: Context, options: InitOptions): Promise<void> {
  const { initDataDir, isInitialised } = await import('../../daemon/init.js');
  const { isValidEmail } = await import('../../shared/email.js');
  const email = (options.email ?? 'admin@localhost').trim();
  if (!isValidEmail(email)) throw new UsageError(`--email ${JSON.stringify(email)} is not an email address (e.g. admin@localhost or jane@example.com)`);
  const { layout } = await import('../../shared/paths.js');
  const { readPid, isAlive } = await import('../../daemon/lock.js');
  const dir = ctx.dataDir();
  const pid = await readPid(layout(dir).pidFile);
  if (pid && isAlive(pid)) throw new CliError(`a daemon (pid ${pid}) holds ${dir}; init works only on a stopped daemon`, EXIT.ERROR);
  if (await isInitialised(dir)) throw new CliError(`${dir} is already initialised`, EXIT.ERROR);
  const password = await readNewPassword(ctx, Boolean(options.passwordStdin));
  const result = await initDataDir(dir, { email, name: options.name, password: password ?? undefined });
  reportInit(ctx, result);
}

export function reportInit(ctx: Context, result: { paths: { root: string }; email: string; generatedPassword: string | null }): void {
  if (ctx.json) {
    ctx.printJson({ data_dir: result.paths.root, email: result.email, password: result.generatedPassword });
    return;
  }
  ctx.out(`Initialised ${result.paths.root}`);
  ctx.out(`Admin user: ${result.email}`);
  if (result.generatedPassword) {
    ctx.out(`Admin password: ${result.generatedPassword}`);
    ctx.err('This password is shown once and cannot be retrieved again: store it now.');
  }
}

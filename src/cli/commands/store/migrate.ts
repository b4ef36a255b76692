// `panelctl store migrate --to URL`: copies the data directory's JSON store (stopped) into an
// empty PostgreSQL database, ids kept, all or nothing. Afterwards start the daemon with
// `--database-url URL`. Offline like `init`: refused while a daemon holds the data directory.
import { Command } from 'commander';
import { EXIT } from '../../../shared/errors.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';

export interface StoreMigrateOptions {
  to: string;
}

/** What the import copied, table by table. */
type ImportSummary = Record<string, number | boolean | string>;
type ImportJsonStore = (dataDir: string, databaseUrl: string) => Promise<ImportSummary>;

/** How each count of the summary reads, singular and plural; unknown names read as themselves. */
const COUNT_LABELS: Record<string, [string, string]> = {
  users: ['user', 'users'],
  api_keys: ['API key', 'API keys'],
  subscriptions: ['subscription', 'subscriptions'],
  sites: ['site', 'sites'],
  webhooks: ['webhook', 'webhooks'],
  reset_tokens: ['password-reset token', 'password-reset tokens'],
  revoked_tokens: ['revoked session token', 'revoked session tokens'],
  limiter: ['request-limit or login-lockout counter', 'request-limit and login-lockout counters'],
  events: ['event', 'events'],
  deliveries: ['pending delivery', 'pending deliveries'],
  log_entries: ['delivery log entry', 'delivery log entries'],
  skipped: ['orphaned record left out', 'orphaned records left out'],
};

/**
 * One count as a person reads it.
 * @example
 * countLabel('api_keys', 1); // '1 API key'
 */
export function countLabel(name: string, count: number): string {
  const [one, many] = COUNT_LABELS[name] ?? [name.replace(/_/g, ' '), name.replace(/_/g, ' ')];
  return `${count} ${count === 1 ? one : many}`;
}

export function storeMigrateCommand(ctx: Context): Command {
  return new Command('migrate')
    .description('copy a stopped JSON store into an empty PostgreSQL database')
    .requiredOption('--to <url>', 'the PostgreSQL database (postgres://user:password@host:5432/db)')
    .action(async (options: StoreMigrateOptions) => storeMigrateRun(ctx, options));
}

/** The importer lives with the PostgreSQL store (and its driver); loaded only when run. */
async function loadImporter(): Promise<ImportJsonStore> {
  const { importJsonStore } = await import('../../../store/postgres/import-json.js');
  return async (dataDir, url) => ({ ...(await importJsonStore(dataDir, url)) });
}

export async function storeMigrateRun(ctx: Context, options: StoreMigrateOptions, importer: () => Promise<ImportJsonStore> = loadImporter): Promise<void> {
  const { layout } = await import('../../../shared/paths.js');
  const { readPid, isDaemon } = await import('../../../daemon/lock.js');
  const { describeDatabaseUrl, storeInitialised } = await import('../../../store/factory.js');
  const dir = ctx.dataDir();
  const target = describeDatabaseUrl(options.to);
  const pid = await readPid(layout(dir).pidFile);
  if (pid && isDaemon(pid)) {
    throw new CliError(`a daemon (pid ${pid}) holds ${dir}; stop it first (panelctl daemon stop), then migrate`, EXIT.ERROR);
  }
  let summary: ImportSummary;
  try {
    if (!(await storeInitialised({ dataDir: dir }))) throw new Error(`${dir} holds no JSON store`);
    summary = await (await importer())(dir, options.to);
  } catch (error) {
    const reason = ((error as Error).message ?? String(error)).split('\n')[0];
    throw new CliError(`cannot migrate ${dir} to ${target}: ${reason}`, EXIT.ERROR);
  }
  await ctx.render({ data_dir: dir, database: target, ...summary }, (ui) => {
    const counts = Object.entries(summary)
      .filter(([, value]) => typeof value === 'number')
      .map(([name, value]) => countLabel(name, value as number))
      .join(', ');
    ui.success(`Copied ${dir} to ${target}: ${counts}`);
    ctx.out(`Start the daemon with --database-url (or PANELCTL_DATABASE_URL) to use it; ${dir} is left as it was.`);
  });
}

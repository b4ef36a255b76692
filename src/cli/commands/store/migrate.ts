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

/** What the import copied, table by table (the PostgreSQL store's `ImportSummary`). */
type ImportSummary = Record<string, number | boolean>;
type ImportJsonStore = (dataDir: string, databaseUrl: string) => Promise<ImportSummary>;

export function storeMigrateCommand(ctx: Context): Command {
  return new Command('migrate')
    .description('copy a stopped JSON store into an empty PostgreSQL database')
    .requiredOption('--to <url>', 'the PostgreSQL database (postgres://user:password@host:5432/db)')
    .action(async (options: StoreMigrateOptions) => storeMigrateRun(ctx, options));
}

/** The importer lives with the PostgreSQL store (and its driver); loaded only when run. */
async function loadImporter(): Promise<ImportJsonStore> {
  const specifier = '../../../store/postgres/import-json.js';
  const module = (await import(specifier)) as { importJsonStore: ImportJsonStore };
  return module.importJsonStore;
}

export async function storeMigrateRun(ctx: Context, options: StoreMigrateOptions, importer: () => Promise<ImportJsonStore> = loadImporter): Promise<void> {
  const { layout } = await import('../../../shared/paths.js');
  const { readPid, isAlive } = await import('../../../daemon/lock.js');
  const { describeDatabaseUrl, storeInitialised } = await import('../../../store/factory.js');
  const dir = ctx.dataDir();
  const target = describeDatabaseUrl(options.to);
  const pid = await readPid(layout(dir).pidFile);
  if (pid && isAlive(pid)) {
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
      .map(([name, value]) => `${value} ${name.replace(/_/g, ' ')}`)
      .join(', ');
    ui.success(`Copied ${dir} to ${target}: ${counts}`);
    ctx.out(`Start the daemon with --database-url (or PANELCTL_DATABASE_URL) to use it; ${dir} is left as it was.`);
  });
}

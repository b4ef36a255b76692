// `panelctl store migrate`.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { storeMigrateCommand } from './migrate.js';

export function storeCommand(ctx: Context): Command {
  return new Command('store').description("move the data directory's store to PostgreSQL").addCommand(storeMigrateCommand(ctx));
}

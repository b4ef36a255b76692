// `panelctl settings get [KEY] | set KEY VALUE` (admin).
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { settingsGetCommand } from './get.js';
import { settingsSetCommand } from './set.js';

export function settingsCommand(ctx: Context): Command {
  return new Command('settings')
    .description('read and change the daemon settings (admin)')
    .addCommand(settingsGetCommand(ctx))
    .addCommand(settingsSetCommand(ctx));
}

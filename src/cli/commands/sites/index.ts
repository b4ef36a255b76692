// `panelctl sites list|create|delete`: websites of a subscription.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { sitesCreateCommand } from './create.js';
import { sitesDeleteCommand } from './delete.js';
import { sitesListCommand } from './list.js';

export function sitesCommand(ctx: Context): Command {
  return new Command('sites')
    .description('list, create and delete websites')
    .addCommand(sitesListCommand(ctx))
    .addCommand(sitesCreateCommand(ctx))
    .addCommand(sitesDeleteCommand(ctx));
}

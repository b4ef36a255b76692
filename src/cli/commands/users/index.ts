// `panelctl users list|create|delete` (admin).
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { usersCreateCommand } from './create.js';
import { usersDeleteCommand } from './delete.js';
import { usersListCommand } from './list.js';

export function usersCommand(ctx: Context): Command {
  return new Command('users')
    .description('list, create and delete user accounts (admin)')
    .addCommand(usersListCommand(ctx))
    .addCommand(usersCreateCommand(ctx))
    .addCommand(usersDeleteCommand(ctx));
}

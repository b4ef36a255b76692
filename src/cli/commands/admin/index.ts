// `panelctl admin …`: commands for whoever owns the data directory, not for an API login.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { adminResetPasswordCommand } from './reset-password.js';
import { adminUnlockCommand } from './unlock.js';

export function adminCommand(ctx: Context): Command {
  return new Command('admin')
    .description("recovery commands for the data directory's owner (no login needed)")
    .addCommand(adminResetPasswordCommand(ctx))
    .addCommand(adminUnlockCommand(ctx));
}

// `panelctl 2fa setup|enable|disable`: TOTP two-factor authentication of your account.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { twoFactorDisableCommand, twoFactorEnableCommand } from './toggle.js';
import { twoFactorSetupCommand } from './setup.js';

export function twoFactorCommand(ctx: Context): Command {
  return new Command('2fa')
    .description('set up, enable and disable two-factor authentication (TOTP) for your account')
    .addCommand(twoFactorSetupCommand(ctx))
    .addCommand(twoFactorEnableCommand(ctx))
    .addCommand(twoFactorDisableCommand(ctx));
}

// `panelctl 2fa setup|enable|disable`: TOTP two-factor authentication of your account.
import { family } from '../../family.js';
import { twoFactorDisableCommand, twoFactorEnableCommand } from './toggle.js';
import { twoFactorSetupCommand } from './setup.js';

export const twoFactorCommand = family('2fa', 'set up, enable and disable two-factor authentication (TOTP) for your account', {
  setup: twoFactorSetupCommand,
  enable: twoFactorEnableCommand,
  disable: twoFactorDisableCommand,
});

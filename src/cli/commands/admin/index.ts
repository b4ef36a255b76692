// `panelctl admin …`: commands for whoever owns the data directory, not for an API login.
import { family } from '../../family.js';
import { adminResetPasswordCommand } from './reset-password.js';
import { adminUnlockCommand } from './unlock.js';

export const adminCommand = family('admin', "recovery commands for the data directory's owner (no login needed)", {
  'reset-password': adminResetPasswordCommand,
  unlock: adminUnlockCommand,
});

// `panelctl settings get [KEY] | set KEY VALUE` (admin).
import { family } from '../../family.js';
import { settingsGetCommand } from './get.js';
import { settingsSetCommand } from './set.js';

export const settingsCommand = family('settings', 'read and change the daemon settings (admin)', {
  get: settingsGetCommand,
  set: settingsSetCommand,
});

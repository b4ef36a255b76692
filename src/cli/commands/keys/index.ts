// `panelctl keys create|list|delete`: API keys for scripts (need a login session, not a key).
import { family } from '../../family.js';
import { keysCreateCommand } from './create.js';
import { keysDeleteCommand } from './delete.js';
import { keysListCommand } from './list.js';

export const keysCommand = family('keys', 'create, list and delete API keys (requires a login session)', {
  create: keysCreateCommand,
  list: keysListCommand,
  delete: keysDeleteCommand,
});

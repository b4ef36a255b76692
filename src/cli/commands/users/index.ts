// `panelctl users list|create|delete` (admin).
import { family } from '../../family.js';
import { usersCreateCommand } from './create.js';
import { usersDeleteCommand } from './delete.js';
import { usersListCommand } from './list.js';

export const usersCommand = family('users', 'list, create and delete user accounts (admin)', {
  list: usersListCommand,
  create: usersCreateCommand,
  delete: usersDeleteCommand,
});

// `panelctl sites list|create|delete`: websites of a subscription.
import { family } from '../../family.js';
import { sitesCreateCommand } from './create.js';
import { sitesDeleteCommand } from './delete.js';
import { sitesListCommand } from './list.js';

export const sitesCommand = family('sites', 'list, create and delete websites', {
  list: sitesListCommand,
  create: sitesCreateCommand,
  delete: sitesDeleteCommand,
});

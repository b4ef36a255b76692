// `panelctl store migrate`.
import { family } from '../../family.js';
import { storeMigrateCommand } from './migrate.js';

export const storeCommand = family('store', "move the data directory's store to PostgreSQL", { migrate: storeMigrateCommand });

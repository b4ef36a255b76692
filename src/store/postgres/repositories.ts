// The repositories in SQL, one module each (or per group of closely related statements) in
// repositories/, and the one list of them: a store and each of its transactions get a set bound
// to where their statements run (see RepositoryFactory).
import type { Repositories } from '../store.js';
import type { Db } from './db.js';
import { apiKeysRepository } from './repositories/api-keys.js';
import type { RepositoryFactory, StoreContext } from './repositories/context.js';
import { deliveryLogRepository } from './repositories/delivery-log.js';
import { sitesRepository, subscriptionsRepository } from './repositories/domains.js';
import { limiterRepository } from './repositories/limiter.js';
import { outboxRepository } from './repositories/outbox.js';
import { settingsRepository } from './repositories/settings.js';
import { resetTokensRepository, revokedTokensRepository } from './repositories/tokens.js';
import { usersRepository } from './repositories/users.js';
import { webhooksRepository } from './repositories/webhooks.js';

export { CHANNEL, timedCommit, type StoreContext } from './repositories/context.js';

/** Every repository of the contract, by its name in `Repositories`. */
const FACTORIES: { [K in keyof Repositories]: RepositoryFactory<Repositories[K]> } = {
  users: usersRepository,
  apiKeys: apiKeysRepository,
  subscriptions: subscriptionsRepository,
  sites: sitesRepository,
  webhooks: webhooksRepository,
  resetTokens: resetTokensRepository,
  revokedTokens: revokedTokensRepository,
  limiter: limiterRepository,
  settings: settingsRepository,
  outbox: outboxRepository,
  deliveryLog: deliveryLogRepository,
};

/** The repositories bound to `db`; the dispatcher's outbox statements run on `work`. */
export function createRepositories(db: Db, ctx: StoreContext, work: Db = db): Repositories {
  const entries = Object.entries(FACTORIES).map(([name, factory]) => [name, (factory as RepositoryFactory<unknown>)(db, ctx, work)]);
  return Object.fromEntries(entries) as unknown as Repositories;
}

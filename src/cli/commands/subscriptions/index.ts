// `panelctl subscriptions list|create|suspend`.
import { family } from '../../family.js';
import { subscriptionsCreateCommand } from './create.js';
import { subscriptionsListCommand } from './list.js';
import { subscriptionsSuspendCommand } from './suspend.js';

export const subscriptionsCommand = family('subscriptions', 'list subscriptions; create and suspend them (admin)', {
  list: subscriptionsListCommand,
  create: subscriptionsCreateCommand,
  suspend: subscriptionsSuspendCommand,
});

// `panelctl subscriptions list|create|suspend`.
import { Command } from 'commander';
import type { Context } from '../../context.js';
import { subscriptionsCreateCommand } from './create.js';
import { subscriptionsListCommand } from './list.js';
import { subscriptionsSuspendCommand } from './suspend.js';

export function subscriptionsCommand(ctx: Context): Command {
  return new Command('subscriptions')
    .description('list subscriptions; create and suspend them (admin)')
    .addCommand(subscriptionsListCommand(ctx))
    .addCommand(subscriptionsCreateCommand(ctx))
    .addCommand(subscriptionsSuspendCommand(ctx));
}

// `panelctl subscriptions create --customer ID --domain D [--default]` (admin; emits subscription.created).
import { Command } from 'commander';
import type { Subscription } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { showSubscription } from './view.js';

export interface SubscriptionsCreateOptions {
  customer: number;
  domain: string;
  default?: boolean;
}

export function subscriptionsCreateCommand(ctx: Context): Command {
  return new Command('create')
    .description('create a subscription for a customer (admin; emits subscription.created); the customer must exist first: panelctl users create --role customer')
    .requiredOption('--customer <id>', 'id of a user with the role customer (panelctl users list)', parseId)
    .requiredOption('--domain <domain>', 'main domain of the subscription')
    .option('--default', "make it the customer's default subscription")
    .action(async (options: SubscriptionsCreateOptions) => subscriptionsCreateRun(ctx, options));
}

export async function subscriptionsCreateRun(ctx: Context, options: SubscriptionsCreateOptions): Promise<void> {
  const body: { customer_id: number; main_domain: string; is_default?: boolean } = { customer_id: options.customer, main_domain: options.domain };
  if (options.default) body.is_default = true;
  const { data } = await ctx.client().call<Subscription>('POST', '/admin/subscriptions', body);
  await ctx.render(data, (ui, s) => {
    showSubscription(ui, s);
    ui.success(`Created subscription ${s.id} (${s.main_domain})`);
  });
}

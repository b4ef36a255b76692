// `panelctl subscriptions suspend ID` (admin; emits subscription.suspended).
import { Command } from 'commander';
import type { Subscription } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function subscriptionsSuspendCommand(ctx: Context): Command {
  return new Command('suspend')
    .description('suspend a subscription (admin; emits subscription.suspended)')
    .argument('<id>', 'subscription id', parseId)
    .action(async (id: number) => subscriptionsSuspendRun(ctx, id));
}

export async function subscriptionsSuspendRun(ctx: Context, id: number): Promise<void> {
  const { data } = await ctx.client().call<Subscription>('POST', `/admin/subscriptions/${id}/suspend`);
  await ctx.render(data, (ui, s) => ui.success(`Suspended subscription ${id}${s?.main_domain ? ` (${s.main_domain})` : ''}`));
}

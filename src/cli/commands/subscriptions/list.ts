// `panelctl subscriptions list`: the caller's subscriptions (admin: all).
import { Command } from 'commander';
import type { Subscription } from '../../api-types.js';
import type { Context } from '../../context.js';
import { subscriptionColumns } from './view.js';

export function subscriptionsListCommand(ctx: Context): Command {
  return new Command('list').description('list your subscriptions (admins: all)').action(async () => subscriptionsListRun(ctx));
}

export async function subscriptionsListRun(ctx: Context): Promise<void> {
  const { data } = await ctx.client().call<Subscription[]>('GET', '/subscriptions');
  await ctx.render(data, (ui, rows) => ui.table(rows, subscriptionColumns(ui), 'no subscriptions'));
}

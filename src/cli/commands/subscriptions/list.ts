// `panelctl subscriptions list`: the caller's subscriptions (admin: all).
import { Command } from 'commander';
import type { Subscription } from '../../api-types.js';
import { LIMIT_HELP, parseCount } from '../../args.js';
import type { Context } from '../../context.js';
import { subscriptionColumns } from './view.js';

export function subscriptionsListCommand(ctx: Context): Command {
  return new Command('list')
    .description('list your subscriptions (admins: all)')
    .option('-n, --limit <n>', LIMIT_HELP, parseCount)
    .action(async (options: { limit?: number }) => subscriptionsListRun(ctx, options.limit));
}

export async function subscriptionsListRun(ctx: Context, limit?: number): Promise<void> {
  const data = await ctx.client().list<Subscription>('/subscriptions', limit);
  await ctx.render(data, (ui, rows) => ui.table(rows, subscriptionColumns(ui), 'no subscriptions'));
}

// `panelctl sites list [--subscription ID]`: without it a customer sees their default
// subscription's sites, an admin all sites.
import { Command } from 'commander';
import type { Site } from '../../api-types.js';
import { LIMIT_HELP, parseCount, parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function sitesListCommand(ctx: Context): Command {
  return new Command('list')
    .description("list websites (default: your default subscription's; admins: all)")
    .option('--subscription <id>', 'only the sites of this subscription', parseId)
    .option('-n, --limit <n>', LIMIT_HELP, parseCount)
    .action(async (options: { subscription?: number; limit?: number }) => sitesListRun(ctx, options.subscription, options.limit));
}

export async function sitesListRun(ctx: Context, subscriptionId?: number, limit?: number): Promise<void> {
  const query = subscriptionId ? `?subscription_id=${subscriptionId}` : '';
  const data = await ctx.client().list<Site>(`/sites${query}`, limit);
  await ctx.render(data, (ui, sites) =>
    ui.table(
      sites,
      [
        { header: 'id', value: (s) => String(s.id) },
        { header: 'domain', value: (s) => s.domain, shrink: true },
        { header: 'subscription', value: (s) => String(s.subscription_id) },
        { header: 'created', value: (s) => ui.time(s.created_at) },
      ],
      'no sites',
    ),
  );
}

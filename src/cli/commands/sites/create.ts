// `panelctl sites create DOMAIN [--subscription ID]` (emits site.created).
import { Command } from 'commander';
import type { Site } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { ApiRequestError } from '../../api-client.js';
import { CliError } from '../../errors.js';

export function sitesCreateCommand(ctx: Context): Command {
  return new Command('create')
    .description('create a website (emits site.created)')
    .argument('<domain>', 'domain name of the site')
    .option('--subscription <id>', 'subscription to create it in (default: your default subscription; admins have none and must name one)', parseId)
    .action(async (domain: string, options: { subscription?: number }) => sitesCreateRun(ctx, domain, options.subscription));
}

export async function sitesCreateRun(ctx: Context, domain: string, subscriptionId?: number): Promise<void> {
  const body: { domain: string; subscription_id?: number } = { domain };
  if (subscriptionId) body.subscription_id = subscriptionId;
  let data: Site;
  try {
    ({ data } = await ctx.client().call<Site>('POST', '/sites', body));
  } catch (error) {
    // The API names its field; the person at the terminal needs the flag and where to find an id.
    if (subscriptionId === undefined && error instanceof ApiRequestError && error.status === 400 && error.message.startsWith('subscription_id:')) {
      throw new CliError('--subscription ID: admins have no default subscription; name the one to create the site in (panelctl subscriptions list)', error.exitCode, error.envelope);
    }
    throw error;
  }
  await ctx.render(data, (ui, site) => {
    ui.record([
      ['id', String(site.id)],
      ['domain', site.domain],
      ['subscription', String(site.subscription_id)],
      ['created', ui.time(site.created_at)],
    ]);
    ui.success(`Created site ${site.domain}`);
  });
}

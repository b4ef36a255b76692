// `panelctl users delete ID` (admin): removes the user with their API keys and endpoints.
import { Command } from 'commander';
import type { Deleted } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function usersDeleteCommand(ctx: Context): Command {
  return new Command('delete')
    .description('delete a user account with its API keys and webhook endpoints (admin)')
    .argument('<id>', 'user id', parseId)
    .action(async (id: number) => usersDeleteRun(ctx, id));
}

export async function usersDeleteRun(ctx: Context, id: number): Promise<void> {
  const { data } = await ctx.client().call<Deleted>('DELETE', `/admin/users/${id}`);
  await ctx.render(data, (ui) => ui.success(`Deleted user ${id}`));
}

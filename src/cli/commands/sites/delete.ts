// `panelctl sites delete ID` (emits site.deleted).
import { Command } from 'commander';
import type { Deleted } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function sitesDeleteCommand(ctx: Context): Command {
  return new Command('delete')
    .description('delete a website (emits site.deleted)')
    .argument('<id>', 'site id', parseId)
    .action(async (id: number) => sitesDeleteRun(ctx, id));
}

export async function sitesDeleteRun(ctx: Context, id: number): Promise<void> {
  const { data } = await ctx.client().call<Deleted>('DELETE', `/sites/${id}`);
  await ctx.render(data, (ui) => ui.success(`Deleted site ${id}`));
}

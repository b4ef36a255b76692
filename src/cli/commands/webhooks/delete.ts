// `panelctl webhooks delete ID`.
import { Command } from 'commander';
import type { Deleted } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function webhooksDeleteCommand(ctx: Context): Command {
  return new Command('delete')
    .description('delete a webhook endpoint')
    .argument('<id>', 'webhook id', parseId)
    .action(async (id: number) => webhooksDeleteRun(ctx, id));
}

export async function webhooksDeleteRun(ctx: Context, id: number): Promise<void> {
  const { data } = await ctx.client().call<Deleted>('DELETE', `/webhooks/${id}`);
  await ctx.render(data, (ui) => ui.success(`Deleted webhook ${id}`));
}

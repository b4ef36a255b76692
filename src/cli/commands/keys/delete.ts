// `panelctl keys delete ID`: the key stops working at once.
import { Command } from 'commander';
import type { Deleted } from '../../api-types.js';
import { parseId } from '../../args.js';
import type { Context } from '../../context.js';

export function keysDeleteCommand(ctx: Context): Command {
  return new Command('delete')
    .description('delete an API key; it stops working at once')
    .argument('<id>', 'API key id (see panelctl keys list)', parseId)
    .action(async (id: number) => keysDeleteRun(ctx, id));
}

export async function keysDeleteRun(ctx: Context, id: number): Promise<void> {
  const { data } = await ctx.client().call<Deleted>('DELETE', `/auth/api-keys/${id}`);
  await ctx.render(data, (ui) => ui.success(`Deleted API key ${id}`));
}

// `panelctl logout`: forgets the stored session (URL and token). The JWT itself expires on
// its own; the API has no revocation of JWTs.
import { Command } from 'commander';
import type { Context } from '../context.js';

export function logoutCommand(ctx: Context): Command {
  return new Command('logout').description('forget the stored session token').action(async () => logoutRun(ctx));
}

export async function logoutRun(ctx: Context): Promise<void> {
  const previous = await ctx.forgetLogin();
  await ctx.render({ logged_out: Boolean(previous), url: previous?.url ?? null }, (ui) => {
    if (previous) ui.success(`Logged out of ${previous.url}${previous.email ? ` (${previous.email})` : ''}`);
    else ui.note('not logged in: nothing to forget');
  });
}

// `panelctl logout`: revokes the stored session token at the daemon (POST /auth/logout, best
// effort: an unreachable daemon or an already expired token does not keep you logged in),
// then forgets the stored URL and token.
import { Command } from 'commander';
import type { Context } from '../context.js';

export function logoutCommand(ctx: Context): Command {
  return new Command('logout').description('revoke the stored session token and forget it').action(async () => logoutRun(ctx));
}

/** Asks the daemon to refuse the token from now on; false when it could not (unreachable, expired, refused). */
async function revoke(ctx: Context, url: string, token: string): Promise<boolean> {
  const client = ctx.newClient({ baseUrl: url, token, tokenSource: 'stored', caFile: ctx.caFile(), timeoutMs: 5_000 });
  try {
    await client.call('POST', '/auth/logout');
    return true;
  } catch {
    return false;
  } finally {
    await client.close();
  }
}

export async function logoutRun(ctx: Context): Promise<void> {
  let stored;
  try {
    stored = ctx.storedLogin();
  } catch {
    stored = undefined; // unreadable: forgetLogin removes it
  }
  const revoked = stored ? await revoke(ctx, stored.url, stored.token) : false;
  const previous = await ctx.forgetLogin();
  await ctx.render({ logged_out: Boolean(previous), revoked, url: previous?.url ?? null }, (ui) => {
    if (!previous) {
      ui.note('not logged in: nothing to forget');
      return;
    }
    ui.success(`Logged out of ${previous.url}${previous.email ? ` (${previous.email})` : ''}`);
    if (!revoked) ui.note('the daemon could not be told; the token stays valid until it expires');
  });
}

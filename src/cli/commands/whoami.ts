// `panelctl whoami`: the account behind the current token (GET /auth/me).
import { Command } from 'commander';
import type { UserDetail } from '../../shared/api/users.js';
import type { Context } from '../context.js';

export function whoamiCommand(ctx: Context): Command {
  return new Command('whoami').description('show the account the current token belongs to').action(async () => whoamiRun(ctx));
}

export async function whoamiRun(ctx: Context): Promise<void> {
  const client = ctx.client();
  const { data } = await client.call<UserDetail>('GET', '/auth/me');
  await ctx.render(data, (ui, user) => {
    ui.record([
      ['email', user.email],
      ['name', user.name],
      ['role', user.role],
      ['id', String(user.id)],
      ['2fa', user.two_factor_enabled ? ui.c.green('enabled') : 'disabled'],
      ['daemon', client.baseUrl],
      ['token', ctx.token()?.source === 'flag' ? '--token / PANELCTL_TOKEN' : `stored login (${ctx.configFile()})`],
    ]);
  });
}

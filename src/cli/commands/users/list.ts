// `panelctl users list` (admin).
import { Command } from 'commander';
import type { UserDetail } from '../../api-types.js';
import { LIMIT_HELP, parseCount } from '../../args.js';
import type { Context } from '../../context.js';

export function usersListCommand(ctx: Context): Command {
  return new Command('list')
    .description('list user accounts (admin)')
    .option('-n, --limit <n>', LIMIT_HELP, parseCount)
    .action(async (options: { limit?: number }) => usersListRun(ctx, options.limit));
}

export async function usersListRun(ctx: Context, limit?: number): Promise<void> {
  const data = await ctx.client().list<UserDetail>('/admin/users', limit);
  await ctx.render(data, (ui, users) =>
    ui.table(users, [
      { header: 'id', value: (u) => String(u.id) },
      { header: 'email', value: (u) => u.email, shrink: true },
      { header: 'name', value: (u) => u.name, shrink: true },
      { header: 'role', value: (u) => u.role, style: (text, u) => (u.role === 'admin' ? ui.c.magenta(text) : text) },
      { header: '2fa', value: (u) => (u.two_factor_enabled ? 'on' : 'off') },
      { header: 'created', value: (u) => ui.time(u.created_at) },
    ]),
  );
}

// `panelctl users create --email E --name N --role R [--password-stdin]` (admin). Without
// --password-stdin the password is asked on a terminal, else generated and printed once.
import { randomBytes } from 'node:crypto';
import { Command, Option } from 'commander';
import type { UserDetail } from '../../api-types.js';
import type { Context } from '../../context.js';
import { readNewPassword } from '../../prompt.js';

export interface UsersCreateOptions {
  email: string;
  name: string;
  role: 'admin' | 'customer';
  passwordStdin?: boolean;
}

export function usersCreateCommand(ctx: Context): Command {
  return new Command('create')
    .description('create a user account (admin); the password is read, asked, or generated and shown once')
    .requiredOption('--email <email>', 'login email')
    .requiredOption('--name <name>', 'display name')
    .addOption(new Option('--role <role>', 'account role').choices(['admin', 'customer']).makeOptionMandatory())
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(async (options: UsersCreateOptions) => usersCreateRun(ctx, options));
}

export async function usersCreateRun(ctx: Context, options: UsersCreateOptions): Promise<void> {
  const chosen = await readNewPassword(ctx, Boolean(options.passwordStdin), 'Password for the new user (empty to generate one): ');
  const password = chosen ?? randomBytes(12).toString('base64url');
  const body = { email: options.email, name: options.name, role: options.role, password };
  const { data } = await ctx.client().call<UserDetail>('POST', '/admin/users', body);
  if (ctx.json) {
    ctx.printJson(chosen ? data : { ...data, password });
    if (!chosen) ctx.err('warning: the generated password is shown only once and cannot be retrieved again.');
    return;
  }
  const ui = await ctx.ui();
  const pairs: Array<[string, string]> = [
    ['id', String(data.id)],
    ['email', data.email],
    ['name', data.name],
    ['role', data.role],
  ];
  if (!chosen) pairs.push(['password', ui.c.bold(password)]);
  ui.record(pairs);
  if (!chosen) ui.warn('The generated password is shown only once and cannot be retrieved again: pass it on now.');
  ui.success(`Created user ${data.email} (${data.role})`);
}

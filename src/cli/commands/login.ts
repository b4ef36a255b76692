// `panelctl login`: exchanges email and password (and a TOTP code when 2FA is on) for a JWT,
// and keeps URL and token in the config file (mode 0600) for the following commands.
import { existsSync } from 'node:fs';
import { Command } from 'commander';
import { EXIT } from '../../shared/errors.js';
import type { LoginResult } from '../../shared/api/users.js';
import { ApiRequestError } from '../api-client.js';
import type { Context } from '../context.js';
import { CliError, UsageError } from '../errors.js';
import { promptHidden, promptLine, readSecretFromStdin } from '../prompt.js';

export interface LoginOptions {
  email?: string;
  passwordStdin?: boolean;
  totp?: string;
}

export function loginCommand(ctx: Context): Command {
  return new Command('login')
    .description('log in to the daemon and keep the session token for the next commands')
    .option('--email <email>', 'account email (prompted on a terminal when absent)')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .option('--totp <code>', 'the current two-factor code, when 2FA is enabled')
    .action(async (options: LoginOptions) => loginRun(ctx, options));
}

function interactive(ctx: Context): boolean {
  return Boolean(ctx.io.stdin.isTTY && ctx.io.stderr.isTTY);
}

export async function loginRun(ctx: Context, options: LoginOptions): Promise<void> {
  let email = options.email?.trim();
  if (!email) {
    if (!interactive(ctx) || options.passwordStdin) throw new UsageError('--email is required when not on a terminal');
    email = await promptLine(ctx, 'Email: ');
    if (!email) throw new UsageError('an email is required');
  }
  let password: string;
  if (options.passwordStdin) password = await readSecretFromStdin(ctx);
  else if (interactive(ctx)) password = await promptHidden(ctx, 'Password: ');
  else throw new UsageError('no terminal to ask for the password: pass it on standard input with --password-stdin');
  if (!password) throw new UsageError('a password is required');

  // Where the data directory's daemon runs now, not where an older login was made (unless
  // --url or PANELCTL_URL says otherwise).
  ctx.followRunningDaemon();
  // No token on the login request itself, whatever is stored or set in the environment.
  const baseUrl = ctx.baseUrl();
  const client = ctx.newClient({ baseUrl, caFile: ctx.caFile(), whenRefused: () => ctx.refusedAdvice(baseUrl) });
  const body: { email: string; password: string; totp_code?: string } = { email, password };
  if (options.totp) body.totp_code = options.totp.trim();
  let result: LoginResult;
  try {
    result = (await client.call<LoginResult>('POST', '/auth/login', body)).data;
  } catch (error) {
    if (!(error instanceof ApiRequestError) || error.error !== '2fa_required') throw error;
    if (!interactive(ctx) || options.passwordStdin) {
      throw new CliError('two-factor authentication is enabled for this account: pass the current code with --totp CODE', EXIT.AUTH, error.envelope);
    }
    body.totp_code = (await promptLine(ctx, 'Two-factor code: ')).replace(/\s+/g, '');
    result = (await client.call<LoginResult>('POST', '/auth/login', body)).data;
  }

  const ca = ctx.caFile();
  await client.close();
  await ctx.saveLogin({ url: client.baseUrl, token: result.token, email: result.user.email, ca: existsSync(ca) ? ca : undefined });
  await ctx.render(result, (ui) => {
    ui.success(`Logged in to ${client.baseUrl} as ${result.user.email} (${result.user.role})`);
  });
}

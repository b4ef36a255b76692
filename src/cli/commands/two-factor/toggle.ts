// `panelctl 2fa enable CODE` and `2fa disable CODE`: a current code proves the authenticator works.
import { Command } from 'commander';
import type { Context } from '../../context.js';

export function twoFactorEnableCommand(ctx: Context): Command {
  return new Command('enable')
    .description('turn on two-factor authentication with a code from your authenticator app')
    .argument('<code>', 'the current 6-digit code')
    .action(async (code: string) => twoFactorToggleRun(ctx, 'enable', code));
}

export function twoFactorDisableCommand(ctx: Context): Command {
  return new Command('disable')
    .description('turn off two-factor authentication with a current code')
    .argument('<code>', 'the current 6-digit code')
    .action(async (code: string) => twoFactorToggleRun(ctx, 'disable', code));
}

export async function twoFactorToggleRun(ctx: Context, action: 'enable' | 'disable', code: string): Promise<void> {
  const { data } = await ctx.client().call<unknown>('POST', `/auth/2fa/${action}`, { totp_code: code.replace(/\s+/g, '') });
  await ctx.render(data, (ui) =>
    ui.success(action === 'enable' ? 'Two-factor authentication is enabled: login now asks for a code' : 'Two-factor authentication is disabled'),
  );
}

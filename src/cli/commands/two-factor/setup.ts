// `panelctl 2fa setup`: a new TOTP secret (not yet enabled), as an otpauth:// URL and a QR code
// to scan with an authenticator app; `2fa enable CODE` then turns it on.
import { Command } from 'commander';
import type { TwoFactorSetup } from '../../api-types.js';
import type { Context } from '../../context.js';

export function twoFactorSetupCommand(ctx: Context): Command {
  return new Command('setup')
    .description('create a TOTP secret and show it as a QR code; confirm with panelctl 2fa enable CODE')
    .action(async () => twoFactorSetupRun(ctx));
}

export function qrCode(text: string): Promise<string> {
  return import('qrcode-terminal').then(
    ({ default: qrcode }) => new Promise<string>((resolve) => qrcode.generate(text, { small: true }, (code: string) => resolve(code))),
  );
}

export async function twoFactorSetupRun(ctx: Context): Promise<void> {
  const { data } = await ctx.client().call<TwoFactorSetup>('POST', '/auth/2fa/setup');
  await ctx.render(data, async (ui, setup) => {
    // The QR code only means something to a person at a terminal.
    if (ui.tty) ctx.out(await qrCode(setup.otpauth_url));
    ui.record([
      ['otpauth url', setup.otpauth_url],
      ['secret', ui.c.bold(setup.secret)],
    ]);
    ui.note('Scan the QR code (or enter the secret) in your authenticator app, then run: panelctl 2fa enable CODE');
  });
}

// `panelctl webhooks rotate-secret ID [--secret-stdin | --generate-secret] [--overlap 24h]`: a new
// signing secret, the previous one still signing beside it for the overlap (default 24 h, `0`
// ends it now). Without --secret-stdin the daemon generates the secret and it is printed once.
import { Command, InvalidArgumentError } from 'commander';
import { parseDuration, parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { resolveSecret, warnSecretShownOnce } from './secret.js';

export interface WebhooksRotateSecretOptions {
  secretStdin?: boolean;
  generateSecret?: boolean;
  /** Seconds. */
  overlap?: number;
}

interface RotatedSecret {
  secret?: string;
  previous_secret_expires_at: string | null;
}

/** `24h`, `90m`, `7d` or `0` → whole seconds, at most 7 days. */
export function parseOverlap(value: string): number {
  const seconds = value.trim() === '0' ? 0 : Math.floor(parseDuration(value) / 1000);
  if (seconds > 604_800) throw new InvalidArgumentError(`the overlap is at most 7d (604800 s), got "${value}"`);
  return seconds;
}

export function webhooksRotateSecretCommand(ctx: Context): Command {
  return new Command('rotate-secret')
    .description('rotate the signing secret; the previous one keeps signing beside it for the overlap')
    .argument('<id>', 'webhook id', parseId)
    .option('--secret-stdin', 'read the new secret from the first line of standard input')
    .option('--generate-secret', 'let the daemon generate the new secret and print it once (the default)')
    .option('--overlap <duration>', 'how long the previous secret still signs: 24h, 90m, 7d (at most), or 0 to end it now', parseOverlap)
    .action(async (id: number, options: WebhooksRotateSecretOptions) => webhooksRotateSecretRun(ctx, id, options));
}

export async function webhooksRotateSecretRun(ctx: Context, id: number, options: WebhooksRotateSecretOptions): Promise<void> {
  // Only --secret-stdin sends a secret: a generated one comes from the daemon, in the scheme's form.
  const given = await resolveSecret(ctx, { secretStdin: options.secretStdin, generateSecret: options.generateSecret }, false);
  const body: Record<string, unknown> = {};
  if (given && !given.generated) body.secret = given.value;
  if (options.overlap !== undefined) body.overlap_seconds = options.overlap;
  const { data } = await ctx.client().call<RotatedSecret>('POST', `/webhooks/${id}/rotate-secret`, body);
  if (ctx.json) {
    ctx.printJson(data);
    if (data.secret) ctx.err('warning: the generated signing secret is shown only once and cannot be retrieved again.');
    return;
  }
  const ui = await ctx.ui();
  ui.record([
    ['id', String(id)],
    ...(data.secret ? [['secret', ui.c.bold(data.secret)] as [string, string]] : []),
    ['previous secret', data.previous_secret_expires_at ? `signs too until ${ui.time(data.previous_secret_expires_at)}` : 'no longer signs'],
  ]);
  if (data.secret) warnSecretShownOnce(ui);
  ui.success(`Rotated the signing secret of webhook ${id}`);
}

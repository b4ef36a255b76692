// `panelctl webhooks create --url U --events E (--secret S | --secret-stdin | --generate-secret) [--inactive] [--paused] [--signature S] [--header 'Name: value' …]`.
import { Command, InvalidArgumentError, Option } from 'commander';
import type { WebhookEndpoint } from '../../api-types.js';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { SIGNATURE_SCHEMES, resolveSecret, warnSecretShownOnce, type SecretOptions, type SignatureScheme } from './secret.js';
import { showEndpoint } from './view.js';

export interface WebhooksCreateOptions extends SecretOptions {
  url: string;
  events: string;
  inactive?: boolean;
  paused?: boolean;
  signature?: SignatureScheme;
  header?: Array<[string, string]>;
}

/**
 * `--header 'Name: value'`, repeatable, collected in order; `Name:` (no value) is kept as an
 * empty value, which `update` sends as a removal.
 */
export function collectHeader(option: string, previous: Array<[string, string]> = []): Array<[string, string]> {
  const colon = option.indexOf(':');
  const name = colon === -1 ? '' : option.slice(0, colon).trim();
  if (!name) throw new InvalidArgumentError(`expected 'Name: value', got "${option}"`);
  return [...previous, [name, option.slice(colon + 1).trim()]];
}

export function webhooksCreateCommand(ctx: Context): Command {
  return new Command('create')
    .description('register a webhook endpoint')
    .requiredOption('--url <url>', 'URL (https://) that receives the POSTs')
    .requiredOption('--events <events>', '"*" or a comma-separated list of event names (see panelctl events types)')
    .option('--secret <secret>', 'signing secret (visible to other users in ps: prefer --secret-stdin)')
    .option('--secret-stdin', 'read the signing secret from the first line of standard input')
    .option('--generate-secret', 'generate a random signing secret and print it once')
    .option('--inactive', 'create it inactive (it receives no events until enabled)')
    .option('--paused', 'create it paused (its events are kept until `webhooks resume`)')
    .addOption(
      new Option('--signature <scheme>', 'seed: X-Webhook-Signature only; standard-webhooks: also the Standard Webhooks headers (needs a whsec_ secret)')
        .choices(SIGNATURE_SCHEMES)
        .default('seed'),
    )
    .option('--header <header>', "extra request header 'Name: value' sent with every delivery (repeatable; the value is never shown again)", collectHeader)
    .action(async (options: WebhooksCreateOptions) => webhooksCreateRun(ctx, options));
}

export async function webhooksCreateRun(ctx: Context, options: WebhooksCreateOptions): Promise<void> {
  const scheme = options.signature ?? 'seed';
  const secret = (await resolveSecret(ctx, options, true, scheme))!;
  const body: Record<string, unknown> = { url: options.url, events: options.events, secret: secret.value, active: !options.inactive, signature: scheme };
  if (options.paused) body.paused = true;
  if (options.header?.length) {
    const empty = options.header.find(([, value]) => value === '');
    if (empty) throw new UsageError(`--header ${empty[0]}: needs a value`);
    body.headers = Object.fromEntries(options.header);
  }
  const { data } = await ctx.client().call<WebhookEndpoint>('POST', '/webhooks', body);
  if (ctx.json) {
    // The generated secret exists nowhere else: it joins the data, once.
    ctx.printJson(secret.generated ? { ...data, secret: secret.value } : data);
    if (secret.generated) ctx.err('warning: the generated signing secret is shown only once and cannot be retrieved again.');
    return;
  }
  const ui = await ctx.ui();
  showEndpoint(ui, data, secret.generated ? [['secret', ui.c.bold(secret.value)]] : []);
  if (secret.generated) warnSecretShownOnce(ui);
  ui.success(`Created webhook ${data.id}`);
}

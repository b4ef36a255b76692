// `panelctl webhooks create --url U --events E (--secret S | --secret-stdin | --generate-secret) [--inactive] [--paused] [--signature S] [--header 'Name: value' …]
// [--retry-schedule 1,1,2|none] [--max-in-flight N] [--rate-limit N|none]`.
import { Command, InvalidArgumentError, Option } from 'commander';
import { parseCount } from '../../args.js';
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
  retrySchedule?: number[];
  maxInFlight?: number;
  /** Attempts per second; 'none': no limit. */
  rateLimit?: number | 'none';
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

/** Help of --retry-schedule, shared by create and update. */
export const RETRY_SCHEDULE_HELP = 'seconds before each retry, comma-separated (e.g. 1,1,2; default 2); "none" for no retry';

/** `1,1,2` → [1, 1, 2]; `none` → [] (the daemon checks the bounds). */
export function parseRetrySchedule(value: string): number[] {
  const text = value.trim();
  if (text.toLowerCase() === 'none') return [];
  const parts = text.split(',').map((part) => part.trim());
  if (parts.some((part) => !/^[1-9]\d{0,5}$/.test(part))) {
    throw new InvalidArgumentError(`expected whole seconds separated by commas (e.g. 1,1,2) or "none", got "${value}"`);
  }
  return parts.map(Number);
}

/** Help of --rate-limit, shared by create and update. */
export const RATE_LIMIT_HELP = 'attempts per second to the endpoint at most, 1-1000, over every daemon; "none" for no limit (the default)';

/** `5` → 5; `none` stays (commander would turn a null into ''); the daemon checks the bounds. */
export function parseRateLimit(value: string): number | 'none' {
  const text = value.trim();
  if (text.toLowerCase() === 'none') return 'none';
  if (!/^[1-9]\d{0,5}$/.test(text)) throw new InvalidArgumentError(`expected a whole number of attempts per second (e.g. 5) or "none", got "${value}"`);
  return Number(text);
}

/** The policy fields of a create or update body, the given ones only. */
export function policyBody(options: Pick<WebhooksCreateOptions, 'retrySchedule' | 'maxInFlight' | 'rateLimit'>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (options.retrySchedule !== undefined) body.retry_schedule = options.retrySchedule;
  if (options.maxInFlight !== undefined) body.max_in_flight = options.maxInFlight;
  if (options.rateLimit !== undefined) body.rate_limit_per_second = options.rateLimit === 'none' ? null : options.rateLimit;
  return body;
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
    .option('--retry-schedule <seconds>', RETRY_SCHEDULE_HELP, parseRetrySchedule)
    .option('--max-in-flight <n>', 'attempts at once to the endpoint, 1-64 (default 8)', parseCount)
    .option('--rate-limit <n>', RATE_LIMIT_HELP, parseRateLimit)
    .action(async (options: WebhooksCreateOptions) => webhooksCreateRun(ctx, options));
}

export async function webhooksCreateRun(ctx: Context, options: WebhooksCreateOptions): Promise<void> {
  const scheme = options.signature ?? 'seed';
  const secret = (await resolveSecret(ctx, options, true, scheme))!;
  const body: Record<string, unknown> = { url: options.url, events: options.events, secret: secret.value, active: !options.inactive, signature: scheme, ...policyBody(options) };
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

// `panelctl webhooks update ID [--url U] [--events E] [--active|--inactive] [--signature S] [--secret-stdin | --generate-secret]
// [--header 'Name: value' | --header 'Name:' …] [--retry-schedule 1,1,2|none] [--max-in-flight N] [--rate-limit N|none]`: a partial update (PUT with only the given
// fields); a new secret rotates the signing key at once (`webhooks rotate-secret` keeps the old one signing for a while). A header with a
// value sets it, `Name:` removes it; the others stay.
import { Command, Option } from 'commander';
import type { WebhookEndpoint } from '../../api-types.js';
import { parseCount, parseId } from '../../args.js';
import type { Context } from '../../context.js';
import { UsageError } from '../../errors.js';
import { SIGNATURE_SCHEMES, resolveSecret, warnSecretShownOnce, type SignatureScheme } from './secret.js';
import { RATE_LIMIT_HELP, RETRY_SCHEDULE_HELP, collectHeader, parseRateLimit, parseRetrySchedule, policyBody } from './create.js';
import { showEndpoint } from './view.js';

export interface WebhooksUpdateOptions {
  url?: string;
  events?: string;
  active?: boolean;
  secretStdin?: boolean;
  generateSecret?: boolean;
  signature?: SignatureScheme;
  header?: Array<[string, string]>;
  retrySchedule?: number[];
  maxInFlight?: number;
  rateLimit?: number | 'none';
}

export function webhooksUpdateCommand(ctx: Context): Command {
  return new Command('update')
    .description('change the URL, events, state or signing secret of an endpoint')
    .argument('<id>', 'webhook id', parseId)
    .option('--url <url>', 'new URL (https://)')
    .option('--events <events>', 'new subscription: "*" or a comma-separated list of event names')
    .addOption(new Option('--active', 'enable the endpoint').conflicts('inactive'))
    .addOption(new Option('--inactive', 'disable the endpoint (it receives no events)'))
    .option('--secret-stdin', 'rotate the signing secret: read the new one from standard input')
    .option('--generate-secret', 'rotate the signing secret: generate one and print it once')
    .addOption(new Option('--signature <scheme>', 'seed or standard-webhooks (which needs a whsec_ secret)').choices(SIGNATURE_SCHEMES))
    .option('--header <header>', "set a request header 'Name: value', or remove one with 'Name:' (repeatable)", collectHeader)
    .option('--retry-schedule <seconds>', RETRY_SCHEDULE_HELP, parseRetrySchedule)
    .option('--max-in-flight <n>', 'attempts at once to the endpoint, 1-64', parseCount)
    .option('--rate-limit <n>', RATE_LIMIT_HELP, parseRateLimit)
    .action(async (id: number, options: WebhooksUpdateOptions & { inactive?: boolean }) =>
      webhooksUpdateRun(ctx, id, { ...options, active: options.active ? true : options.inactive ? false : undefined }),
    );
}

export async function webhooksUpdateRun(ctx: Context, id: number, options: WebhooksUpdateOptions): Promise<void> {
  // A generated secret takes the form of the scheme the endpoint will have.
  let scheme = options.signature;
  if (options.generateSecret && !scheme) scheme = (await ctx.client().call<WebhookEndpoint>('GET', `/webhooks/${id}`)).data.signature;
  const secret = await resolveSecret(ctx, { secretStdin: options.secretStdin, generateSecret: options.generateSecret }, false, scheme ?? 'seed');
  const body: Record<string, unknown> = {};
  if (options.signature !== undefined) body.signature = options.signature;
  if (options.url !== undefined) body.url = options.url;
  if (options.events !== undefined) body.events = options.events;
  if (options.active !== undefined) body.active = options.active;
  if (secret) body.secret = secret.value;
  if (options.header?.length) body.headers = Object.fromEntries(options.header.map(([name, value]) => [name, value === '' ? null : value]));
  Object.assign(body, policyBody(options));
  if (Object.keys(body).length === 0) {
    throw new UsageError('nothing to change: give --url, --events, --active, --inactive, --signature, --header, --secret-stdin, --generate-secret, --retry-schedule, --max-in-flight or --rate-limit');
  }
  const { data } = await ctx.client().call<WebhookEndpoint>('PUT', `/webhooks/${id}`, body);
  if (ctx.json) {
    ctx.printJson(secret?.generated ? { ...data, secret: secret.value } : data);
    if (secret?.generated) ctx.err('warning: the generated signing secret is shown only once and cannot be retrieved again.');
    return;
  }
  const ui = await ctx.ui();
  showEndpoint(ui, data, secret?.generated ? [['secret', ui.c.bold(secret.value)]] : []);
  if (secret?.generated) warnSecretShownOnce(ui);
  ui.success(`Updated webhook ${id}${secret ? ' (signing secret rotated)' : ''}`);
}

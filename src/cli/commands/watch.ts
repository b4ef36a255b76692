// `panelctl watch [--endpoint ID] [--failed]`: a live full-screen view of webhook deliveries.
// Interactive only: without a terminal it points to the scriptable `webhooks deliveries --follow`.
import { Command, InvalidArgumentError } from 'commander';
import type { Context } from '../context.js';
import { UsageError } from '../errors.js';

export interface WatchOptions {
  endpoint?: number;
  failed?: boolean;
}

function endpointId(value: string): number {
  const id = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(id) || id < 1) throw new InvalidArgumentError('must be a positive integer');
  return id;
}

export function watchCommand(ctx: Context): Command {
  return new Command('watch')
    .description('watch webhook deliveries live in a full-screen terminal view (test, redeliver, filter)')
    .option('--endpoint <id>', 'only this webhook endpoint', endpointId)
    .option('--failed', 'start with only failed attempts shown (f toggles)')
    .action(async (options: WatchOptions) => watchRun(ctx, options));
}

export async function watchRun(ctx: Context, options: WatchOptions): Promise<void> {
  const { stdin, stdout, stderr } = ctx.io;
  if (!stdin.isTTY || !stdout.isTTY || ctx.json) {
    const id = options.endpoint ?? 'ID';
    throw new UsageError(
      `watch needs an interactive terminal${ctx.json ? ' and has no --json output' : ''}; ` +
        `in scripts use: panelctl webhooks deliveries ${id} --follow --json`,
    );
  }
  const client = await ctx.client();
  // Checked before the screen is taken over: an unreachable daemon, a refused token or an
  // unknown --endpoint is a plain one-line error with its exit code, like any other command.
  const { loadEndpoints } = await import('../ui/source.js');
  const endpoints = await loadEndpoints(client, options.endpoint);

  const env = process.env;
  const color = ctx.colorAllowed;
  // ink turns live rendering off when CI is set (it reads the variable once, on import); this
  // is an interactive terminal, checked above, so it is hidden from ink while it loads.
  const ci = { CI: env.CI, CONTINUOUS_INTEGRATION: env.CONTINUOUS_INTEGRATION };
  delete env.CI;
  delete env.CONTINUOUS_INTEGRATION;
  let runWatch: typeof import('../ui/run.js').runWatch;
  try {
    ({ runWatch } = await import('../ui/run.js'));
  } finally {
    for (const [name, value] of Object.entries(ci)) if (value !== undefined) env[name] = value;
  }
  await runWatch({
    client,
    baseUrl: client.baseUrl,
    endpointId: options.endpoint,
    endpoints,
    failedOnly: Boolean(options.failed),
    color,
    stdin: stdin as NodeJS.ReadStream,
    stdout: stdout as NodeJS.WriteStream,
    stderr: stderr as NodeJS.WriteStream,
  });
}

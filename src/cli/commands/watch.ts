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
  // ink and react are most of watch's start-up (about 0.6 s on a quiet machine, seconds on a
  // busy one): they load while the pre-flight check runs and the stream connects, so the view
  // opens on a stream that is already connected (or connecting) instead of starting it then.
  const view = loadView();
  view.catch(() => undefined); // awaited below; a failed pre-flight must not leave it unhandled
  // Checked before the screen is taken over: an unreachable daemon, a refused token or an
  // unknown --endpoint is a plain one-line error with its exit code, like any other command.
  const { apiWatchSource, loadEndpoints } = await import('../ui/source.js');
  const endpoints = await loadEndpoints(client, options.endpoint);

  const { WatchStore, initialState } = await import('../ui/state.js');
  const store = new WatchStore(initialState({ baseUrl: client.baseUrl, endpointId: options.endpoint, failedOnly: Boolean(options.failed) }));
  const source = apiWatchSource(client, { endpointId: options.endpoint, endpoints });
  const stop = source.start(store.dispatch);
  try {
    const { runWatch } = await view;
    await runWatch({
      client,
      baseUrl: client.baseUrl,
      endpointId: options.endpoint,
      endpoints,
      failedOnly: Boolean(options.failed),
      color: ctx.colorAllowed,
      stdin: stdin as NodeJS.ReadStream,
      stdout: stdout as NodeJS.WriteStream,
      stderr: stderr as NodeJS.WriteStream,
      store,
      source: { ...source, start: () => stop },
    });
  } finally {
    stop();
  }
}

/**
 * Imports the view (ink, react). ink turns live rendering off when CI is set (it reads the
 * variable once, on import); watch runs only on an interactive terminal, checked before, so the
 * variable is hidden from ink while it loads.
 */
async function loadView(): Promise<typeof import('../ui/run.js')> {
  const env = process.env;
  const ci = { CI: env.CI, CONTINUOUS_INTEGRATION: env.CONTINUOUS_INTEGRATION };
  delete env.CI;
  delete env.CONTINUOUS_INTEGRATION;
  try {
    // ink first, on its own: it has a top-level await, so the bundle cannot require() it where
    // the view's modules import it (scripts/build.mjs); they use this import's namespace.
    await import('ink');
    return await import('../ui/run.js');
  } finally {
    for (const [name, value] of Object.entries(ci)) if (value !== undefined) env[name] = value;
  }
}

// The command tree. Kept apart from main.ts so completions and the man page are generated
// from the very same tree the CLI runs. Top-level commands are loaded on demand: a run of
// `panelctl keys list` imports the keys commands only and builds the list verb alone (start-up
// time is benchmarked), while help, unknown commands and the generators load and build them all.
import { Command, Option } from 'commander';
import { VERSION } from '../shared/version.js';
import type { Transport } from './api-client.js';
import { Context, type Io } from './context.js';
import { acceptGlobalOptions } from './global-options.js';

/** A top-level command; a noun's builds only `verb` when it names one of its verbs (family.ts). */
type CommandFactory = (ctx: Context, verb?: string | null) => Command;

/** Top-level commands in the order help lists them, each with the loader of its module. */
export const TOP_COMMANDS: ReadonlyArray<{ name: string; load: () => Promise<CommandFactory> }> = [
  { name: 'init', load: async () => (await import('./commands/init.js')).initCommand },
  { name: 'daemon', load: async () => (await import('./commands/daemon/index.js')).daemonCommand },
  { name: 'login', load: async () => (await import('./commands/login.js')).loginCommand },
  { name: 'logout', load: async () => (await import('./commands/logout.js')).logoutCommand },
  { name: 'whoami', load: async () => (await import('./commands/whoami.js')).whoamiCommand },
  { name: 'keys', load: async () => (await import('./commands/keys/index.js')).keysCommand },
  { name: 'webhooks', load: async () => (await import('./commands/webhooks/index.js')).webhooksCommand },
  { name: 'listen', load: async () => (await import('./commands/listen.js')).listenCommand },
  { name: 'events', load: async () => (await import('./commands/events/index.js')).eventsCommand },
  { name: 'sites', load: async () => (await import('./commands/sites/index.js')).sitesCommand },
  { name: 'subscriptions', load: async () => (await import('./commands/subscriptions/index.js')).subscriptionsCommand },
  { name: 'users', load: async () => (await import('./commands/users/index.js')).usersCommand },
  { name: 'admin', load: async () => (await import('./commands/admin/index.js')).adminCommand },
  { name: 'store', load: async () => (await import('./commands/store/index.js')).storeCommand },
  { name: 'settings', load: async () => (await import('./commands/settings/index.js')).settingsCommand },
  { name: '2fa', load: async () => (await import('./commands/two-factor/index.js')).twoFactorCommand },
  // watch is the TUI's (src/cli/commands/watch.ts); ink and react load only when it runs.
  { name: 'watch', load: async () => (await import('./commands/watch.js')).watchCommand },
  { name: 'completion', load: async () => (await import('./commands/completion.js')).completionCommand },
];

function rootCommand(): Command {
  return (
    new Command('panelctl')
    .description('manage a hosting panel: API keys, webhooks, delivery logs, and the panelctl daemon')
    .version(VERSION, '-V, --version')
    .addOption(new Option('--url <url>', 'daemon URL (default: the stored login, else https://127.0.0.1:3443)').env('PANELCTL_URL'))
    .addOption(new Option('--token <token>', 'JWT or API key to authenticate with').env('PANELCTL_TOKEN'))
    .addOption(new Option('--ca <file>', "CA certificate to trust (default: the data directory's tls/cert.pem)").env('PANELCTL_CA'))
    .addOption(new Option('--data-dir <dir>', 'data directory').env('PANEL_DATA_DIR'))
    .option('--json', "print the response's data as JSON on stdout, nothing else")
    .option('--no-color', 'no colours (also NO_COLOR)')
    .showSuggestionAfterError(true)
    .configureHelp({ sortSubcommands: false, showGlobalOptions: true })
    // Program options are parsed up to the command name only; each command carries hidden
    // copies of them (see acceptGlobalOptions), so `webhooks create --url` can mean the
    // webhook's URL while `keys list --json` still works.
    .enablePositionalOptions()
  );
}

/**
 * The top-level command that `args` (argv without node and script) runs, or null when all
 * are needed (no command, help, unknown). Skips global options and their values.
 */
export function targetCommand(program: Command, args: readonly string[]): string | null {
  return commandPath(program, args)?.name ?? null;
}

/**
 * The top-level command `args` runs and the word right after it, its verb when it is a noun
 * (null when an option or nothing follows, or for `help NAME`: then every verb is built).
 */
function commandPath(program: Command, args: readonly string[]): { name: string; verb: string | null } | null {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === '--') return null;
    if (arg.startsWith('-')) {
      if (arg.includes('=')) continue;
      const option = program.options.find((o) => o.long === arg || o.short === arg);
      if (option && (option.required || option.optional)) i++;
      continue;
    }
    if (arg === 'help') {
      const next = args.slice(i + 1).find((a) => !a.startsWith('-'));
      return next && TOP_COMMANDS.some((c) => c.name === next) ? { name: next, verb: null } : null;
    }
    if (!TOP_COMMANDS.some((c) => c.name === arg)) return null;
    const next = args[i + 1];
    return { name: arg, verb: next !== undefined && !next.startsWith('-') ? next : null };
  }
  return null;
}

/**
 * Builds the program. With `args`, only the command they run is loaded (when there is one),
 * and of a noun only the verb they name (when it has one by that name); without, the whole
 * tree (for help, completions and the man page).
 */
export async function buildProgram(options: { args?: readonly string[]; io?: Io; transport?: Transport } = {}): Promise<{ program: Command; ctx: Context }> {
  const program = rootCommand();
  const ctx = new Context(program, options.io, options.transport);
  const target = options.args ? commandPath(program, options.args) : null;
  const wanted = target ? TOP_COMMANDS.filter((c) => c.name === target.name) : TOP_COMMANDS;
  const factories = await Promise.all(wanted.map((c) => c.load()));
  for (const factory of factories) {
    const command = factory(ctx, target?.verb);
    acceptGlobalOptions(program, command);
    program.addCommand(command);
  }
  program.hook('preAction', (_program, actionCommand) => ctx.setActionCommand(actionCommand));
  return { program, ctx };
}

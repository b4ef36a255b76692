// The command tree. Kept apart from main.ts so completions and the man page are generated
// from the very same tree the CLI runs.
import { Command, Option } from 'commander';
import { VERSION } from '../shared/version.js';
import { Context, type Io } from './context.js';
import { daemonCommand } from './commands/daemon/index.js';
import { initCommand } from './commands/init.js';
import { watchCommand } from './commands/watch.js';

export function buildProgram(io?: Io): { program: Command; ctx: Context } {
  const program = new Command('panelctl');
  const ctx = new Context(program, io);
  program
    .description('manage a hosting panel: API keys, webhooks, delivery logs, and the panelctl daemon')
    .version(VERSION, '-V, --version')
    .addOption(new Option('--url <url>', 'daemon URL').env('PANELCTL_URL'))
    .addOption(new Option('--token <token>', 'JWT or API key to authenticate with').env('PANELCTL_TOKEN'))
    .addOption(new Option('--ca <file>', "CA certificate to trust (default: the data directory's tls/cert.pem)").env('PANELCTL_CA'))
    .addOption(new Option('--data-dir <dir>', 'data directory').env('PANEL_DATA_DIR'))
    .option('--json', "print the response's data as JSON on stdout, nothing else")
    .option('--no-color', 'no colours (also NO_COLOR)')
    .showSuggestionAfterError(true)
    .configureHelp({ sortSubcommands: false, showGlobalOptions: true });

  program.addCommand(initCommand(ctx));
  program.addCommand(daemonCommand(ctx));
  program.addCommand(watchCommand(ctx));
  return { program, ctx };
}

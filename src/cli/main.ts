// Entry point of the CLI: parses argv, runs the command, maps failures to one clear line on
// stderr (the envelope with --json) and to the documented exit code. The only place that
// calls process.exit.
import { CommanderError } from 'commander';
import { EXIT } from '../shared/errors.js';
import { CliError } from './errors.js';
import { buildProgram } from './program.js';

function applyExitOverride(command: import('commander').Command): void {
  command.exitOverride();
  for (const sub of command.commands) applyExitOverride(sub);
}

export async function run(argv: string[]): Promise<number> {
  const { program, ctx } = await buildProgram({ args: argv.slice(2) });
  applyExitOverride(program);
  program.configureOutput({ outputError: (text, write) => write(text) });
  try {
    await program.parseAsync(argv);
    return EXIT.OK;
  } catch (error) {
    if (error instanceof CommanderError) {
      // Commander has printed its message (and help) already.
      if (['commander.helpDisplayed', 'commander.version'].includes(error.code)) return EXIT.OK;
      return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    if (error instanceof CliError) {
      if (ctx.json && error.envelope) ctx.err(JSON.stringify(error.envelope));
      else if (ctx.json) ctx.err(JSON.stringify({ data: null, error: 'cli error', message: error.message }));
      else ctx.err(`panelctl: ${error.message}`);
      return error.exitCode;
    }
    ctx.err(`panelctl: unexpected error: ${(error as Error)?.stack ?? String(error)}`);
    return EXIT.ERROR;
  } finally {
    await ctx.close().catch(() => undefined);
  }
}

export function main(argv: string[]): void {
  run(argv).then(
    (code) => {
      process.exitCode = code;
      // Lingering keep-alive sockets must not hold a finished command open.
      setTimeout(() => process.exit(code), 50).unref();
    },
    (error) => {
      process.stderr.write(`panelctl: ${(error as Error)?.message ?? String(error)}\n`);
      process.exit(EXIT.ERROR);
    },
  );
}

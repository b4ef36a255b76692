// Entry point of the CLI: parses argv, runs the command, maps failures to one clear line on
// stderr (the envelope with --json) and to the documented exit code. The only place that
// calls process.exit.
import { CommanderError } from 'commander';
import { EXIT } from '../shared/errors.js';
import { CliError } from './errors.js';
import { buildProgram } from './program.js';
import type { Transport } from './api-client.js';
import type { Context, Io } from './context.js';

/**
 * Commander throws instead of exiting, and writes help and usage errors to the context's
 * streams, on every command (addCommand does not pass settings down).
 */
function applyExitOverride(command: import('commander').Command, io: Io): void {
  command.exitOverride();
  command.configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text), outputError: (text, write) => write(text) });
  for (const sub of command.commands) applyExitOverride(sub, io);
}

/**
 * Runs one command line to its exit code. `deps` replaces the process's streams and the HTTP
 * layer (tests run commands in-process against a fake API: test/helpers/cli.ts).
 */
export async function run(argv: string[], deps: { io?: Io; transport?: Transport } = {}): Promise<number> {
  const { program, ctx } = await prepare(argv, deps);
  try {
    return await execute(program, ctx, argv);
  } finally {
    await ctx.close().catch(() => undefined);
  }
}

async function prepare(argv: string[], deps: { io?: Io; transport?: Transport }): Promise<{ program: import('commander').Command; ctx: Context }> {
  const built = await buildProgram({ args: argv.slice(2), ...deps });
  applyExitOverride(built.program, built.ctx.io);
  return built;
}

/** Parses and runs the command: its exit code, every failure reported on the context's stderr. */
async function execute(program: import('commander').Command, ctx: Context, argv: string[]): Promise<number> {
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
  }
}

/**
 * A reader that goes away (`panelctl events types | head -1`) is not an error: like git and
 * gh, stop quietly with exit 0 once stdout or stderr is a closed pipe. Without a listener,
 * the EPIPE of the next write would surface as an uncaught exception with its stack.
 */
export function exitQuietlyOnClosedPipe(stream: NodeJS.WriteStream, exit: (code: number) => void = process.exit): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED') exit(EXIT.OK);
    else throw error;
  });
}

/**
 * Guards process.stdout or process.stderr with exitQuietlyOnClosedPipe when something first uses
 * it (our output, commander, Node's own warnings through console), instead of creating it at
 * start: a stream costs a socket of its own when it is a pipe, and a `keys list --json` that
 * succeeds never writes to stderr. Returns the stream once created, else null.
 */
function guardWhenCreated(name: 'stdout' | 'stderr'): () => NodeJS.WriteStream | null {
  let created: NodeJS.WriteStream | null = null;
  const own = Object.getOwnPropertyDescriptor(process, name);
  if (!own?.get || !own.configurable) {
    created = process[name];
    exitQuietlyOnClosedPipe(created);
    return () => created;
  }
  const create = own.get;
  Object.defineProperty(process, name, {
    configurable: true,
    enumerable: own.enumerable,
    get() {
      // Node's getter creates the stream once and keeps it: put it back, then guard the stream.
      Object.defineProperty(process, name, own);
      created = create.call(process) as NodeJS.WriteStream;
      exitQuietlyOnClosedPipe(created);
      return created;
    },
  });
  return () => created;
}

/** process.exit(code) once `streams` have written what they were given. */
function exitWhenWritten(code: number, streams: NodeJS.WriteStream[]): void {
  let pending = 0;
  const done = () => {
    if (--pending === 0) process.exit(code);
  };
  for (const stream of streams) {
    if (stream.writableLength > 0 && !stream.destroyed) {
      pending++;
      stream.write('', done);
    }
  }
  if (pending === 0) process.exit(code);
}

export function main(argv: string[]): void {
  const stdout = guardWhenCreated('stdout');
  const stderr = guardWhenCreated('stderr');
  // As run(), but the context's connections are left to the exit, which closes them: destroying
  // a TLS socket first is work for a process about to end (and Node's socket teardown creates
  // process.stderr to compare it with).
  prepare(argv, {})
    .then(({ program, ctx }) => execute(program, ctx, argv))
    .then(
      (code) => {
        process.exitCode = code;
        // execute() awaits all of a command's work. What is left are open connections, closing
        // handles and V8's idle-time work (a young-generation collection), which a finished
        // command need not wait for: exit once stdout and stderr hold nothing unwritten (pipes,
        // files and terminals are written synchronously on Linux; elsewhere a pipe can still hold
        // some). A stream that failed (a closed pipe) is left to its 'error' listener; a stream
        // never created holds nothing.
        const streams = [stdout(), stderr()].filter((stream) => stream !== null);
        if (!streams.some((stream) => stream.errored)) exitWhenWritten(code, streams);
        // Lingering keep-alive sockets must not hold a finished command open.
        setTimeout(() => process.exit(code), 50).unref();
      },
      (error) => {
        process.stderr.write(`panelctl: ${(error as Error)?.message ?? String(error)}\n`);
        process.exit(EXIT.ERROR);
      },
    );
}

// `panelctl daemon logs [--follow] [--level L] [--lines N]`: the daemon's log file (daemon.log,
// JSON lines) as one readable line per event, filtered by level; --follow keeps printing new
// lines, across rotations. --json prints the JSON lines themselves. Lines that are not pino's
// (a crash's last words on stderr) are shown as they are, whatever the level.
import { closeSync, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Command, Option } from 'commander';
import { layout } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import { LEVEL_NAMES, LEVELS, levelOf, type LevelName } from '../../../shared/log-format.js';
import { parseCount } from '../../args.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';

export interface DaemonLogsOptions {
  follow?: boolean;
  level: LevelName;
  lines: number;
}

export function daemonLogsCommand(ctx: Context): Command {
  return new Command('logs')
    .description("show the daemon's log file (DATA_DIR/daemon.log) readably, filtered by level; --follow for new lines")
    .option('-f, --follow', 'keep printing new lines as they are written (across rotations) until interrupted')
    .addOption(new Option('--level <level>', 'only lines at this level or above').choices(LEVEL_NAMES).default('info'))
    .option('-n, --lines <n>', 'the last N lines (0: the whole file)', (value: string) => (value === '0' ? 0 : parseCount(value)), 100)
    .action(async (options: DaemonLogsOptions) => daemonLogsRun(ctx, options));
}

/** The log file: the running daemon's own (daemon.json), else the data directory's daemon.log. */
async function logFileOf(ctx: Context): Promise<string> {
  const { readState } = await import('../../../daemon/state-file.js');
  const paths = layout(ctx.dataDir());
  return (await readState(paths))?.log_file ?? paths.logFile;
}

export async function daemonLogsRun(ctx: Context, options: DaemonLogsOptions): Promise<void> {
  const file = await logFileOf(ctx);
  const minimum = LEVELS[options.level];
  const format = await formatter(ctx);
  const show = (line: string) => {
    if (!line) return;
    const level = levelOf(line);
    if (level !== null && level < minimum) return;
    ctx.io.stdout.write(level === null || ctx.json ? `${line}\n` : format(line));
  };

  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || !options.follow) {
      throw new CliError(`cannot read the daemon log ${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file (the detached daemon writes it; a --foreground daemon logs to its output)' : (error as Error).message}`, EXIT.ERROR);
    }
    text = '';
  }
  // The last N lines at the level asked for: from the previous file too when this one (just
  // rotated) holds fewer.
  let lines = text.split('\n').filter(Boolean);
  const wanted = (line: string) => (levelOf(line) ?? Infinity) >= minimum;
  if (options.lines > 0 && lines.filter(wanted).length < options.lines) {
    const previous = await readFile(`${file}.1`, 'utf8').catch(() => '');
    lines = [...previous.split('\n').filter(Boolean), ...lines];
  }
  let selected = lines.filter(wanted);
  if (options.lines > 0) selected = selected.slice(-options.lines);
  for (const line of selected) show(line);
  if (!options.follow) return;
  await follow(file, Buffer.byteLength(text), show);
}

async function formatter(ctx: Context): Promise<(line: string) => string> {
  if (ctx.json) return (line) => `${line}\n`;
  const [{ prettyFactory }, { prettyOptions }] = await Promise.all([import('pino-pretty'), import('../../../shared/log-format.js')]);
  const colorize = ctx.colorAllowed && Boolean((ctx.io.stdout as NodeJS.WriteStream).isTTY);
  return prettyFactory(prettyOptions(colorize));
}

/**
 * Prints lines appended to `file` from byte `start` on, until SIGINT or SIGTERM. The file is
 * looked at four times a second; when it was rotated (another file now has its name), the rest
 * of the old one is read, then the new one from its start.
 */
async function follow(file: string, start: number, show: (line: string) => void): Promise<void> {
  let fd: number | null = null;
  let position = start;
  let partial = '';
  const open = () => {
    try {
      fd = openSync(file, 'r');
    } catch {
      fd = null; // not there (yet): rotated this instant, or the daemon has not written it
    }
  };
  const drain = () => {
    if (fd === null) return;
    const buffer = Buffer.alloc(64 * 1024);
    for (let read = readSync(fd, buffer, 0, buffer.length, position); read > 0; read = readSync(fd, buffer, 0, buffer.length, position)) {
      position += read;
      partial += buffer.subarray(0, read).toString('utf8');
      const lines = partial.split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) show(line);
    }
  };
  const tick = () => {
    if (fd === null) {
      open();
      position = 0;
    }
    drain();
    let current: number | null = null;
    try {
      current = statSync(file).ino;
    } catch {
      // rotated away this instant
    }
    if (fd !== null && current !== fstatSync(fd).ino) {
      drain();
      closeSync(fd);
      fd = null;
      partial = '';
    }
  };
  open();
  if (fd !== null && fstatSync(fd).size < position) position = 0;
  await new Promise<void>((resolve) => {
    const timer = setInterval(tick, 250);
    const stop = () => {
      clearInterval(timer);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  if (fd !== null) closeSync(fd);
}

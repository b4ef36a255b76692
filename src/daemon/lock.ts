// The data directory's pid lock: created exclusively, so two daemons never share a data
// directory. A lock left by a killed daemon is taken over: its pid is no longer alive, or (pids
// are reused) it now belongs to a process that is not a panelctl daemon.
import { readFileSync } from 'node:fs';
import { readFile, unlink, writeFile } from 'node:fs/promises';

export class DirectoryLockedError extends Error {
  constructor(readonly pid: number, readonly dir: string) {
    super(`another panelctl daemon (pid ${pid}) is already using ${dir}; stop it first with \`panelctl daemon stop\``);
  }
}

export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The command line of a process (from /proc), or null where it cannot be read (no /proc, or
 * the process is gone).
 */
export function commandLine(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
}

/**
 * Whether a command line is a panelctl daemon's: `panelctl daemon start` however it was run
 * (`node …/bin/panelctl.js`, an npm shim `panelctl`, `npx panelctl`).
 * @example
 * isDaemonCommand(['node', '/usr/lib/node_modules/panelctl/bin/panelctl.js', 'daemon', 'start', '--foreground']); // true
 */
export function isDaemonCommand(argv: string[]): boolean {
  const cli = argv.findIndex((arg) => /(^|\/)panelctl(\.js)?$/.test(arg));
  if (cli === -1) return false;
  // Global options may come before the command (`panelctl --data-dir D daemon start`).
  const rest = argv.slice(cli + 1);
  return rest.some((arg, i) => arg === 'daemon' && rest[i + 1] === 'start');
}

/**
 * Whether `pid` is a running panelctl daemon. Where the command line cannot be read, a live
 * process is taken to be one (refusing to start is the safe mistake).
 */
export function isDaemon(pid: number): boolean {
  if (!isAlive(pid)) return false;
  const argv = commandLine(pid);
  return argv === null || isDaemonCommand(argv);
}

export async function readPid(pidFile: string): Promise<number | null> {
  try {
    const pid = Number.parseInt((await readFile(pidFile, 'utf8')).trim(), 10);
    return Number.isInteger(pid) ? pid : null;
  } catch {
    return null;
  }
}

/** Why a stale lock was taken over, for the daemon's log. */
export type TakeoverNotice = (message: string) => void;

export async function acquireLock(pidFile: string, dir: string, pid = process.pid, notice: TakeoverNotice = () => undefined): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(pidFile, `${pid}\n`, { flag: 'wx', mode: 0o600 });
      return async () => {
        if ((await readPid(pidFile)) === pid) await unlink(pidFile).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readPid(pidFile);
      if (holder !== null && holder !== pid && isAlive(holder)) {
        if (isDaemon(holder)) throw new DirectoryLockedError(holder, dir);
        const argv = commandLine(holder) ?? [];
        notice(
          `${pidFile} named pid ${holder}, which is now another program (${argv.join(' ').slice(0, 120)}), not a panelctl daemon: ` +
            'the lock was left by a daemon that did not stop cleanly; taken over',
        );
      }
      await unlink(pidFile).catch(() => undefined);
    }
  }
  throw new Error(`could not take the lock ${pidFile}`);
}

// The data directory's pid lock: created exclusively, so two daemons never share a data
// directory. A lock left by a killed daemon (its pid no longer alive) is taken over.
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

export async function readPid(pidFile: string): Promise<number | null> {
  try {
    const pid = Number.parseInt((await readFile(pidFile, 'utf8')).trim(), 10);
    return Number.isInteger(pid) ? pid : null;
  } catch {
    return null;
  }
}

export async function acquireLock(pidFile: string, dir: string, pid = process.pid): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(pidFile, `${pid}\n`, { flag: 'wx', mode: 0o600 });
      return async () => {
        if ((await readPid(pidFile)) === pid) await unlink(pidFile).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readPid(pidFile);
      if (holder !== null && holder !== pid && isAlive(holder)) throw new DirectoryLockedError(holder, dir);
      await unlink(pidFile).catch(() => undefined);
    }
  }
  throw new Error(`could not take the lock ${pidFile}`);
}

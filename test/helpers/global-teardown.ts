// Global setup and teardown of the suite (vitest `globalSetup`): the setup marks this run in the
// environment every worker and every process they start inherits; the teardown fails the run if
// any process carrying the mark is still alive, after ending it.
import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { RUN_MARK } from './processes.js';

interface Leftover {
  pid: number;
  command: string;
}

/** Processes whose environment carries `mark`, other than vitest's own (this process and its workers). */
export async function markedProcesses(mark: string): Promise<Leftover[]> {
  const needle = Buffer.from(`\0${mark}\0`);
  const found: Leftover[] = [];
  for (const name of await readdir('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = Buffer.concat([Buffer.from([0]), await readFile(`/proc/${pid}/environ`)]);
      if (!environ.includes(needle)) continue;
      // vitest's fork workers are this process's own children, named "node (vitest N)" (or, just
      // spawned, still running vitest's worker script). Not every child is one: the processes a
      // test in a worker thread starts are this process's children too.
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const command = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ').trim();
      if (ppid === process.pid && (command.startsWith('node (vitest') || command.includes('/vitest/dist/'))) continue;
      found.push({ pid, command });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return found;
}

export default function setup(): (() => Promise<void>) | void {
  // Once per run: vitest calls the global setup for each project and the root, and a later call
  // would give the workers a new mark that this one's check would not look for.
  if (process.env[RUN_MARK]) return;
  const run = `${process.pid}-${randomUUID()}`;
  process.env[RUN_MARK] = run;
  const mark = `${RUN_MARK}=${run}`;
  return async () => {
    // Processes told to stop (SIGTERM) get a few seconds to finish; then whatever is left leaked.
    const deadline = Date.now() + 10_000;
    let left = await markedProcesses(mark);
    while (left.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      left = await markedProcesses(mark);
    }
    if (!left.length) {
      console.log('leak check: no process started by the suite is alive');
      return;
    }
    for (const { pid } of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // exited meanwhile
      }
    }
    throw new Error(`leak check: ${left.length} process(es) started by the suite outlived it (now killed):\n${left.map((p) => `  ${p.pid} ${p.command}`).join('\n')}`);
  };
}

// Every process a test starts (daemon, CLI, receiver script, pseudo-terminal) is registered
// here, so none outlives its test file: the setup file ends them after a failed or timed-out
// test and after each file, and the worker ends them when it exits or is signalled. The global
// teardown (global-teardown.ts) then checks that nothing carrying this run's mark is alive.
import type { ChildProcess } from 'node:child_process';

/** Set by the global setup; inherited by workers, by every child and by their children. */
export const RUN_MARK = 'PANELCTL_TEST_RUN';

interface Tracked {
  child: ChildProcess;
  /**
   * The test that started it, ended when that test fails; null when started in a hook outside
   * a test, or while tests of a concurrent suite ran side by side (which of them started it is
   * not known, so it is left to the end of the file rather than killed under a neighbour).
   */
  owner: string | null;
  /** Spawned with detached: true, so it leads a process group (script(1) and its shell). */
  group: boolean;
}

const tracked = new Set<Tracked>();
/** The tests running now (several in a `describe.concurrent`), by vitest task id. */
const running = new Set<string>();

/** Called by the setup file when a test starts and when it ends. */
export function enterTest(id: string): void {
  running.add(id);
}
export function leaveTest(id: string): void {
  running.delete(id);
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null && child.pid !== undefined;
}

function signal(entry: Tracked, sig: NodeJS.Signals): void {
  if (!alive(entry.child)) return;
  try {
    if (entry.group) process.kill(-entry.child.pid!, sig);
    else entry.child.kill(sig);
  } catch {
    // already gone
  }
}

/**
 * Registers a child so it is ended with its test. `group`: the child was spawned detached and
 * its whole process group goes with it.
 *
 * @example
 * const child = track(spawn(process.execPath, [BIN, 'watch']));
 */
export function track<T extends ChildProcess>(child: T, options: { group?: boolean } = {}): T {
  const entry: Tracked = { child, owner: running.size === 1 ? running.values().next().value! : null, group: options.group ?? false };
  tracked.add(entry);
  child.once('exit', () => {
    tracked.delete(entry);
    // A group leader's exit can leave the rest of its group running (script's shell, a sleep).
    if (entry.group && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is gone too
      }
    }
  });
  return child;
}

/** SIGKILLs tracked children (those the test `which` started, or all) and waits for them. */
export async function killTracked(which: { test: string } | 'all'): Promise<number> {
  const victims = [...tracked].filter((entry) => which === 'all' || entry.owner === which.test);
  await Promise.all(
    victims.map(
      (entry) =>
        new Promise<void>((resolve) => {
          if (!alive(entry.child)) return resolve();
          const timer = setTimeout(resolve, 5_000);
          entry.child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          signal(entry, 'SIGKILL');
        }),
    ),
  );
  for (const entry of victims) tracked.delete(entry);
  return victims.length;
}

function killAllNow(): void {
  for (const entry of tracked) signal(entry, 'SIGKILL');
}

// The worker exiting normally, crashing, or being told to stop: no child stays behind.
process.once('exit', killAllNow);
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  process.once(sig, () => {
    killAllNow();
    process.kill(process.pid, sig);
  });
}

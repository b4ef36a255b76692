// Every process a test starts (daemon, CLI, receiver script, pseudo-terminal) is registered
// here, so none outlives its test file: the setup file ends them after a failed or timed-out
// test and after each file, and the worker ends them when it exits or is signalled. The global
// teardown (global-teardown.ts) then checks that nothing carrying this run's mark is alive.
import type { ChildProcess } from 'node:child_process';

/** Set by the global setup; inherited by workers, by every child and by their children. */
export const RUN_MARK = 'PANELCTL_TEST_RUN';

interface Tracked {
  child: ChildProcess;
  /** Started inside a test (not in a beforeAll): ended when that test fails. */
  inTest: boolean;
  /** Spawned with detached: true, so it leads a process group (script(1) and its shell). */
  group: boolean;
}

const tracked = new Set<Tracked>();
let currentTest = false;

/** Called by the setup file around each test. */
export function enterTest(inTest: boolean): void {
  currentTest = inTest;
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
  const entry: Tracked = { child, inTest: currentTest, group: options.group ?? false };
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

/** SIGKILLs tracked children (those of the current test only, or all) and waits for them. */
export async function killTracked(which: 'test' | 'all'): Promise<number> {
  const victims = [...tracked].filter((entry) => which === 'all' || entry.inTest);
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

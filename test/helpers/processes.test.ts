// The suite's own process tracking (test/helpers/processes.ts): a failed test's children are
// ended with it, but never a child a concurrent neighbour may have started.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { enterTest, killTracked, leaveTest, track } from './processes.js';

const sleeper = () => track(spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' }));
const exited = (child: ReturnType<typeof sleeper>) => new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve(undefined) : child.once('exit', resolve)));

describe('tracked test processes', () => {
  it('ends the children a test started alone, and only when that test is named', async ({ task }) => {
    const child = sleeper();
    expect(await killTracked({ test: 'another test' })).toBe(0);
    expect(child.exitCode === null && child.signalCode === null).toBe(true);
    expect(await killTracked({ test: task.id })).toBe(1);
    await exited(child);
    expect(child.signalCode).toBe('SIGKILL');
  });

  it('leaves a child started while a neighbour ran beside the test to the end of the file', async ({ task }) => {
    enterTest('neighbour');
    const shared = sleeper();
    leaveTest('neighbour');
    const own = sleeper();
    expect(await killTracked({ test: task.id })).toBe(1);
    await exited(own);
    expect(shared.exitCode === null && shared.signalCode === null).toBe(true);
    expect(await killTracked('all')).toBeGreaterThanOrEqual(1);
    await exited(shared);
    expect(shared.signalCode).toBe('SIGKILL');
  });
});

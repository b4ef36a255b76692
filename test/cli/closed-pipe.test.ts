// A reader that goes away (`panelctl events types | head -1`) ends the command quietly with exit 0,
// as git and gh do, never with a `write EPIPE` stack. The read end of the pipe is closed right
// after the spawn, before the CLI writes anything, so every run meets the closed pipe.
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';
import { startDaemon, type TestDaemon } from '../helpers/daemon.js';

function runWithClosed(stream: 'stdout' | 'stderr', args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; signal: string | null; other: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    child[stream].destroy();
    let other = '';
    child[stream === 'stdout' ? 'stderr' : 'stdout'].on('data', (chunk) => (other += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, other });
    });
  });
}

describe('a closed pipe', () => {
  let daemon: TestDaemon;
  let env: NodeJS.ProcessEnv;
  beforeAll(async () => {
    daemon = await startDaemon();
    env = { PANELCTL_URL: daemon.url, PANELCTL_TOKEN: await daemon.login(), PANEL_DATA_DIR: daemon.dataDir, PANELCTL_CONFIG_DIR: daemon.dataDir };
  });
  afterAll(async () => {
    await daemon?.dispose();
  });

  it.each([
    ['events', 'types'],
    ['--json', 'events', 'types'],
    ['keys', 'list', '--json'],
    ['users', 'list'],
    ['webhooks', 'list'],
    ['settings', 'get'],
    ['whoami'],
    ['--help'],
    ['completion', 'bash'],
    ['daemon', 'status'],
  ])('stdout closed: panelctl %s … exits 0 without a stack trace', async (...args) => {
    const result = await runWithClosed('stdout', args, env);
    expect(result, result.other).toMatchObject({ code: 0, signal: null });
    expect(result.other).not.toMatch(/EPIPE|Error|at /);
  });

  it.each([
    [['webhooks', 'show', '999']],
    [['no-such-command']],
  ])('stderr closed: a failing panelctl %s exits 0 quietly too', async (args) => {
    const result = await runWithClosed('stderr', args, env);
    expect(result).toMatchObject({ code: 0, signal: null });
    expect(result.other).toBe('');
  });
});

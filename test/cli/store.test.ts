// `panelctl store migrate --to URL` and `--database-url`: the offline checks (a daemon holding
// the data directory, with the built CLI beside a real daemon; no JSON store and an unusable
// database, in process: exit 1 with one line), and the command's run with a stand-in importer
// (options → output).
import { PassThrough } from 'node:stream';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/program.js';
import { storeMigrateRun } from '../../src/cli/commands/store/migrate.js';
import { runCli, runInProcess } from '../helpers/cli.js';
import { initDataDir, makeDataDir, startDaemon, type TestDaemon } from '../helpers/daemon.js';

const URL_WITH_PASSWORD = 'postgres://panel:s3cret-pw@127.0.0.1:1/panel';

function fakeIo(env: NodeJS.ProcessEnv) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (chunk) => (out += chunk));
  stderr.on('data', (chunk) => (err += chunk));
  return { io: { stdout, stderr, stdin: new PassThrough(), env }, out: () => out, err: () => err };
}

describe('panelctl store migrate', () => {
  let daemon: TestDaemon;
  let empty: string;

  beforeAll(async () => {
    daemon = await startDaemon();
    empty = await makeDataDir();
  });
  afterAll(async () => {
    await daemon?.dispose();
    await rm(empty, { recursive: true, force: true });
  });

  it('refuses while a daemon holds the data directory (exit 1, one line)', async () => {
    const result = await runCli(['store', 'migrate', '--to', URL_WITH_PASSWORD, '--data-dir', daemon.dataDir]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/a daemon \(pid \d+\) holds .*; stop it first/);
    expect(result.stderr).not.toContain('s3cret-pw');
  });

  it('refuses a data directory without a JSON store, naming the database without its password', async () => {
    const result = await runInProcess(['store', 'migrate', '--to', URL_WITH_PASSWORD, '--data-dir', empty]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(`panelctl: cannot migrate ${empty} to 127.0.0.1:1/panel: ${empty} holds no JSON store`);
  });

  it('hands the data directory and URL to the importer and prints what it copied', async () => {
    const dir = await makeDataDir();
    try {
      await initDataDir(dir);
      const { io, out, err } = fakeIo({ PANEL_DATA_DIR: dir, NO_COLOR: '1' });
      const { ctx } = await buildProgram({ io });
      const calls: string[][] = [];
      await storeMigrateRun(ctx, { to: URL_WITH_PASSWORD }, async () => async (dataDir, url) => {
        calls.push([dataDir, url]);
        return { users: 1, api_keys: 1, webhooks: 0, limiter: 2, settings: true };
      });
      expect(calls).toEqual([[dir, URL_WITH_PASSWORD]]);
      // Singular for one, and the limiter rows named for what they are.
      expect(err()).toContain(`Copied ${dir} to 127.0.0.1:1/panel: 1 user, 1 API key, 0 webhooks, 2 request-limit and login-lockout counters`);
      expect(out()).toContain('--database-url');

      const failing = fakeIo({ PANEL_DATA_DIR: dir, NO_COLOR: '1' });
      const second = await buildProgram({ io: failing.io });
      await expect(
        storeMigrateRun(second.ctx, { to: URL_WITH_PASSWORD }, async () => async () => {
          throw new Error('the database already holds panel data\n  at somewhere');
        }),
      ).rejects.toThrow(`cannot migrate ${dir} to 127.0.0.1:1/panel: the database already holds panel data`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('--database-url', () => {
  it('init fails with exit 1 and one line when the database cannot be used', async () => {
    const dir = await makeDataDir();
    try {
      const result = await runInProcess(['init', '--data-dir', dir, '--password-stdin', '--database-url', URL_WITH_PASSWORD], { input: 'a-long-password-1\n' });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain('cannot initialise the database 127.0.0.1:1/panel');
      expect(result.stderr).not.toContain('s3cret-pw');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

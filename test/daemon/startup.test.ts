// Start-up with a damaged data directory, through the built CLI: `daemon start --foreground`
// exits 1 with one line naming the file and what to do; a pid file left pointing at a pid that
// now belongs to another program is taken over; a TLS pair removed on purpose is made anew.
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateCertificate } from '../../src/daemon/tls.js';
import { BIN, runCli } from '../helpers/cli.js';
import { initDataDir, makeDataDir, startDaemon, waitForExit, type TestDaemon } from '../helpers/daemon.js';

describe('start-up with a damaged data directory', () => {
  let pristine: string;
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  /** The daemon of the take-over test, left running for the test that starts a second one beside it. */
  let running: TestDaemon | undefined;

  /** A copy of an initialised data directory, damaged by `damage`. */
  async function damaged(damage: (dir: string) => Promise<void>): Promise<string> {
    const dir = await makeDataDir();
    dirs.push(dir);
    await cp(pristine, dir, { recursive: true });
    await damage(dir);
    return dir;
  }

  const start = (dir: string) => runCli(['daemon', 'start', '--foreground', '--data-dir', dir, '--port', '0']);

  function expectOneLine(stderr: string, ...parts: Array<string | RegExp>): void {
    const lines = stderr.trim().split('\n');
    expect(lines, stderr).toHaveLength(1);
    for (const part of parts) expect(lines[0]).toMatch(part);
  }

  // The refusals below are each one short CLI run on a copy of their own: they run side by side.
  beforeAll(async () => {
    pristine = await makeDataDir();
    await initDataDir(pristine);
  });
  afterAll(async () => {
    await running?.kill();
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all([pristine, ...dirs].map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it.concurrent('refuses an empty jwt-secret, naming it and how to make a new one', async () => {
    const dir = await damaged((d) => writeFile(join(d, 'jwt-secret'), ''));
    const result = await start(dir);
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, join(dir, 'jwt-secret'), /is empty; write a new one with `openssl rand -base64 48 > /);
    // Nothing is left behind: the lock is released.
    await expect(stat(join(dir, 'daemon.pid'))).rejects.toThrow();
  });

  it.concurrent('refuses a short jwt-secret', async () => {
    const dir = await damaged((d) => writeFile(join(d, 'jwt-secret'), 'abc\n'));
    const result = await start(dir);
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, join(dir, 'jwt-secret'), /is too short \(3 characters, at least 32\)/);
  });

  it.concurrent('refuses a truncated tls/key.pem, naming it', async () => {
    const dir = await damaged(async (d) => truncate(join(d, 'tls', 'key.pem'), 300));
    const result = await start(dir);
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, join(dir, 'tls', 'key.pem'), /is not a usable private key \(truncated, or not PEM\); restore it from a backup, or remove both/);
  });

  it.concurrent('refuses a truncated tls/cert.pem, naming it', async () => {
    const dir = await damaged(async (d) => truncate(join(d, 'tls', 'cert.pem'), 200));
    const result = await start(dir);
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, join(dir, 'tls', 'cert.pem'), /is not a usable certificate/);
  });

  it.concurrent('refuses an unreadable tls/key.pem, naming it and the reason', async () => {
    // A directory in the key's place: unreadable even for root, who ignores file modes.
    const dir = await damaged(async (d) => {
      await rm(join(d, 'tls', 'key.pem'));
      await mkdir(join(d, 'tls', 'key.pem'));
    });
    const result = await start(dir);
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, `the TLS key ${join(dir, 'tls', 'key.pem')} cannot be read (EISDIR)`);
  });

  it.concurrent('refuses a key and certificate that do not go together', async () => {
    const other = await damaged(async () => undefined);
    const dir = await damaged(async (d) => {
      await rm(join(d, 'tls'), { recursive: true });
      // A different pair's key, of the kind init makes.
      await cp(join(other, 'tls'), join(d, 'tls'), { recursive: true });
      await writeFile(join(d, 'tls', 'key.pem'), (await generateCertificate()).key, { mode: 0o600 });
    });
    const result = await start(dir);
    expect(result.code).toBe(1);
    expectOneLine(result.stderr, /do not go together/, join(dir, 'tls', 'key.pem'));
  });

  it('takes over a pid file whose pid is now another program, and leaves that program alone', async () => {
    const dir = await damaged(async () => undefined);
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    children.push(other);
    await writeFile(join(dir, 'daemon.pid'), `${other.pid}\n`);

    // The CLI does not take it for a daemon: not running, and stop does not signal it.
    expect((await runCli(['daemon', 'status', '--data-dir', dir])).code).toBe(1);
    const stop = await runCli(['daemon', 'stop', '--data-dir', dir]);
    expect(stop.stderr).toMatch(/the daemon is not running/);

    const daemon = await startDaemon({ dataDir: dir, keep: true });
    expect((await daemon.request('GET', '/health')).status).toBe(200);
    expect((await readFile(join(dir, 'daemon.pid'), 'utf8')).trim()).toBe(String(daemon.proc.pid));
    expect(daemon.output()).toContain(`${join(dir, 'daemon.pid')} named pid ${other.pid}, which is now another program`);
    expect(daemon.output()).toMatch(/not a panelctl daemon: the lock was left by a daemon that did not stop cleanly; taken over/);
    running = daemon;
    expect(other.exitCode).toBeNull();
    expect(other.signalCode).toBeNull();
    other.kill('SIGKILL');
    await waitForExit(other);
  });

  it('refuses to start beside a running daemon, as before', async () => {
    // The daemon that took over above (a daemon of its own when this test runs alone).
    const daemon = running ?? (await startDaemon({ dataDir: await damaged(async () => undefined), keep: true }));
    running = undefined;
    try {
      expect(daemon.proc.exitCode).toBeNull();
      const second = await start(daemon.dataDir);
      expect(second.code).toBe(1);
      expect(second.stderr).toMatch(new RegExp(`already running \\(pid ${daemon.proc.pid}\\)`));
    } finally {
      await daemon.stop();
    }
  });

  it('makes a new self-signed pair when both TLS files were removed, and says so', async () => {
    const dir = await damaged((d) => rm(join(d, 'tls', 'cert.pem')).then(() => rm(join(d, 'tls', 'key.pem'))));
    const child = spawn(process.execPath, [BIN, 'daemon', 'start', '--foreground', '--data-dir', dir, '--port', '0', '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    await vi.waitFor(
      () => {
        if (child.exitCode !== null) return; // told below, with the output
        if (!/made a new self-signed pair/.test(output)) throw new Error(`no new pair: ${output}`);
      },
      { timeout: 20_000, interval: 50 },
    );
    if (child.exitCode !== null) throw new Error(`no new pair: ${output}`);
    expect((await stat(join(dir, 'tls', 'key.pem'))).mode & 0o777).toBe(0o600);
    expect(await readFile(join(dir, 'tls', 'cert.pem'), 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
    child.kill('SIGTERM');
    expect(await waitForExit(child)).toBe(0);
  });
});

// The daemon as a user meets it: started as a process, spoken to over verified HTTPS.
import { spawn } from 'node:child_process';
import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BIN, runCli } from '../helpers/cli.js';
import { makeDataDir, startDaemon, waitForExit, type TestDaemon } from '../helpers/daemon.js';
import { track } from '../helpers/processes.js';

// One daemon serves the file until the shutdown tests end it: its requests are logged at info
// (the request-log test reads them), it is killed and restarted for durability, then stopped and
// started for the SIGTERM rounds, and its released directory is the one the corrupt-store test
// damages. Only the detached start makes a data directory of its own (auto-init is its point).
let daemon: TestDaemon;

beforeAll(async () => {
  daemon = await startDaemon({ args: ['--log-level', 'info'], keep: true });
});
afterAll(async () => {
  await daemon?.kill();
  if (daemon) await rm(daemon.dataDir, { recursive: true, force: true });
});

describe('daemon lifecycle', () => {
  it('answers /health over HTTPS verified against the generated certificate', async () => {
    const health = await daemon.request('GET', '/health');
    expect(health.status).toBe(200);
    expect(health.body).toEqual({ data: { status: 'ok', version: expect.any(String) }, error: null, message: '' });
    expect(daemon.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
  });

  it('is not trusted without the generated certificate', async () => {
    await expect(request(`${daemon.url}/api/v1/health`)).rejects.toThrow();
  });

  it('answers unknown paths, malformed JSON and oversized bodies with the envelope', async () => {
    const notFound = await daemon.request('GET', '/no/such/route');
    expect(notFound.status).toBe(404);
    expect(notFound.body).toEqual({ data: null, error: 'not found', message: expect.stringContaining('/api/v1/no/such/route') });

    const badJson = await daemon.request('POST', '/auth/login', { rawBody: '{"email": ', headers: { 'content-type': 'application/json' } });
    expect(badJson.status).toBe(400);
    expect(badJson.body).toEqual({ data: null, error: 'invalid json', message: expect.any(String) });

    const big = await daemon.request('POST', '/auth/login', {
      rawBody: JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(1024 * 1024 + 10) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(big.status).toBe(413);
    expect(big.body).toEqual({ data: null, error: 'payload too large', message: expect.stringContaining('1 MiB') });

    const missing = await daemon.request('POST', '/auth/login', { body: { email: 'a@b.c' } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('bad request');
    expect(missing.body.message).toContain('password');
  });

  it('keeps the data directory 0700 and secret files 0600', async () => {
    const mode = async (path: string) => (await stat(join(daemon.dataDir, path))).mode & 0o777;
    expect(await mode('.')).toBe(0o700);
    for (const file of ['store.json', 'jwt-secret', 'tls/key.pem', 'daemon.pid', 'daemon.json']) {
      expect([file, await mode(file)]).toEqual([file, 0o600]);
    }
  });

  it('refuses a second daemon on the same data directory', async () => {
    const result = await runCli(['daemon', 'start', '--foreground', '--data-dir', daemon.dataDir, '--port', '0']);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/already running|already using/);
    expect((await daemon.request('GET', '/health')).status).toBe(200);
  });

  it('reports its status through the CLI', async () => {
    const status = await runCli(['daemon', 'status', '--data-dir', daemon.dataDir]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(daemon.url);
    expect(status.stdout).toContain(`pid ${daemon.proc.pid}`);
  });

  it('logs each request at info with its request id, and no credential', async () => {
    // The lines of this test's requests only: the file's earlier tests wrote theirs before.
    const mark = daemon.output().length;
    const token = await daemon.login();
    const { key } = (await daemon.request('POST', '/auth/api-keys', { token, body: { name: 'logged' } })).body.data;
    expect((await daemon.request('GET', '/sites', { token: key })).status).toBe(200);
    expect((await daemon.request('GET', '/sites', { token: 'ncp_' + '0'.repeat(64) })).status).toBe(401);
    // The daemon's output reaches this process through a pipe: wait for the last answer's line.
    // Complete lines only: the last piece may still be arriving.
    const parsed = () =>
      daemon
        .output()
        .slice(mark)
        .split('\n')
        .slice(0, -1)
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l));
    await vi.waitFor(() => expect(parsed().some((l) => l.msg === 'request completed' && l.res?.statusCode === 401)).toBe(true), { timeout: 30_000, interval: 50 });
    const lines = parsed();
    const sites = lines.filter((l) => l.msg === 'incoming request' && l.req?.url === '/api/v1/sites');
    expect(sites).toHaveLength(2);
    for (const incoming of sites) {
      expect(incoming.req_id).toMatch(/^[0-9a-f-]{36}$/);
      const completed = lines.find((l) => l.msg === 'request completed' && l.req_id === incoming.req_id);
      expect(completed?.res?.statusCode).toBeDefined();
    }
    expect(lines.filter((l) => l.msg === 'request completed').map((l) => l.res.statusCode)).toEqual(expect.arrayContaining([200, 201, 401]));
    expect(daemon.output()).not.toContain(key);
    expect(daemon.output()).not.toContain(token);
  });
});

describe('durability and shutdown', () => {
  it('keeps an acknowledged write across SIGKILL', async () => {
    const token = await daemon.login();
    const put = await daemon.request('PUT', '/admin/settings', { token, body: { login_max_attempts: 9, jwt_ttl_seconds: 3600 } });
    expect(put.status).toBe(200);
    expect(put.body.data.login_max_attempts).toBe(9);
    daemon = await daemon.restart(); // SIGKILL right after the acknowledgement
    const token2 = await daemon.login();
    const get = await daemon.request('GET', '/admin/settings', { token: token2 });
    expect(get.body.data).toMatchObject({ login_max_attempts: 9, jwt_ttl_seconds: 3600, rate_limit_mode: 'both' });
  });

  it('exits 0 on SIGTERM and releases the data directory', async () => {
    // SIGTERM goes out the moment daemon.json names the process, which is when a lost signal
    // showed up (a listener swapped at start-up); three such rounds make a regression hard to
    // miss. The daemon of the test above is stopped first: it has been up for a while.
    expect(await daemon.stop()).toBe(0);
    for (let round = 1; round <= 3; round++) {
      daemon = await startDaemon({ dataDir: daemon.dataDir, keep: true });
      expect(await daemon.stop()).toBe(0);
    }
    await expect(stat(join(daemon.dataDir, 'daemon.pid'))).rejects.toThrow();
    const status = await runCli(['daemon', 'status', '--data-dir', daemon.dataDir]);
    expect(status.code).toBe(1);
    expect(status.stderr).toContain('not running');
    // Three starts and stops: seconds on a quiet machine, several times that on a loaded one;
    // the bound only catches a hang (each start has its own deadline in startDaemon).
  }, 120_000);

  it('refuses to start on a corrupt store and leaves the file untouched', async () => {
    // The data directory the daemon above released: the store file is all a daemon reads first.
    const dataDir = daemon.dataDir;
    expect(daemon.proc.exitCode).not.toBeNull();
    const file = join(dataDir, 'store.json');
    const garbage = '{"schema_version": 1, "users": [ {"id": 1,';
    await writeFile(file, garbage);
    const proc = track(spawn(process.execPath, [BIN, 'daemon', 'start', '--foreground', '--port', '0', '--data-dir', dataDir], { stdio: ['ignore', 'pipe', 'pipe'] }));
    let stderr = '';
    proc.stderr!.on('data', (chunk) => (stderr += chunk));
    expect(await waitForExit(proc)).toBe(1);
    expect(stderr).toContain(file);
    expect(stderr).toMatch(/not valid JSON/);
    expect(await readFile(file, 'utf8')).toBe(garbage);
  });

  it('starts detached, reports URL and pid, and stops through the CLI', async () => {
    const dataDir = await makeDataDir();
    const start = await runCli(['daemon', 'start', '--data-dir', dataDir, '--port', '0']);
    try {
      expect(start.code).toBe(0);
      expect(start.stdout).toMatch(/Admin password: \S{24}/); // auto-init prints it once
      expect(start.stdout).toMatch(/running at https:\/\/127\.0\.0\.1:\d+ \(pid \d+\)/);
      const log = await readFile(join(dataDir, 'daemon.log'), 'utf8');
      expect(log).not.toMatch(/Admin password/);
    } finally {
      const stop = await runCli(['daemon', 'stop', '--data-dir', dataDir]);
      expect(stop.code).toBe(0);
      expect(stop.stdout).toContain('stopped');
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

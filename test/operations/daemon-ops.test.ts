// Running the daemon as an operator does: the detached daemon's rotated daemon.log, `daemon logs`,
// `daemon status --json`, and start-up errors that say what to do (busy port, unreadable
// certificate, a data directory in use).
import { createServer, type Server } from 'node:net';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { prettyFactory } from 'pino-pretty';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeDatabaseUrl } from '../../src/store/factory.js';
import { RotatingFile } from '../../src/daemon/log/rotating-file.js';
import { prettyOptions } from '../../src/shared/log-format.js';
import { layout } from '../../src/shared/paths.js';
import { runCli } from '../helpers/cli.js';
import { ADMIN_PASSWORD, initDataDir } from '../helpers/daemon.js';

async function rotatedFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.startsWith('daemon.log')).sort();
}

describe('RotatingFile', () => {
  it('rotates by size and keeps the configured number of files, the newest lines in daemon.log', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-rotate-'));
    try {
      const file = new RotatingFile(join(dir, 'daemon.log'), { maxBytes: 1000, keep: 3 });
      for (let i = 0; i < 200; i++) file.write(`${JSON.stringify({ level: 30, n: i, msg: 'x'.repeat(60) })}\n`);
      file.end();
      expect(await rotatedFiles(dir)).toEqual(['daemon.log', 'daemon.log.1', 'daemon.log.2', 'daemon.log.3']);
      for (const name of ['daemon.log.1', 'daemon.log.2', 'daemon.log.3']) {
        const size = (await stat(join(dir, name))).size;
        expect(size).toBeGreaterThanOrEqual(1000);
        expect(size).toBeLessThan(1200);
        expect((await stat(join(dir, name))).mode & 0o777).toBe(0o600);
      }
      // Nothing lost between the files kept: .3 → .2 → .1 → daemon.log are consecutive lines.
      const numbers: number[] = [];
      for (const name of ['daemon.log.3', 'daemon.log.2', 'daemon.log.1', 'daemon.log']) {
        const text = await readFile(join(dir, name), 'utf8');
        numbers.push(...text.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { n: number }).n));
      }
      expect(numbers.at(-1)).toBe(199);
      expect(numbers).toEqual(numbers.map((_, index) => numbers[0] + index));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps appending to an existing file and counts its size', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'panelctl-rotate-'));
    try {
      const path = join(dir, 'daemon.log');
      new RotatingFile(path, { maxBytes: 1000, keep: 1 }).write('a'.repeat(900) + '\n');
      const again = new RotatingFile(path, { maxBytes: 1000, keep: 1 });
      again.write('b'.repeat(200) + '\n'); // 1102 bytes: rotates
      again.end();
      expect(await rotatedFiles(dir)).toEqual(['daemon.log', 'daemon.log.1']);
      expect((await stat(path)).size).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('readable log lines', () => {
  it('one line with local time, level, message, the request in words and the key fields', () => {
    const format = prettyFactory(prettyOptions(false));
    const time = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
    const line = format(
      JSON.stringify({ level: 30, time, pid: 1, hostname: 'h', reqId: 'req-7', req: { method: 'GET', url: '/api/v1/sites' }, msg: 'incoming request' }),
    );
    expect(line.trim().split('\n')).toHaveLength(1);
    expect(line).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: incoming request GET \/api\/v1\/sites \{"reqId":"req-7"\}/);
    const warn = format(JSON.stringify({ level: 40, time, msg: 'delivery failed', endpoint_id: 3, reason: 'HTTP 500' }));
    expect(warn).toContain('WARN: delivery failed {"endpoint_id":3,"reason":"HTTP 500"}');
    const done = format(JSON.stringify({ level: 30, time, msg: 'request completed', res: { statusCode: 404 }, responseTime: 1.234 }));
    expect(done).toContain('INFO: request completed → 404 (1.2 ms)');
  });
});

describe('store location', () => {
  it('names PostgreSQL as host:port/db without credentials', () => {
    expect(describeDatabaseUrl('postgres://panel:s3cret@db.internal/paneldb')).toBe('db.internal:5432/paneldb');
    expect(describeDatabaseUrl('postgresql://u:p@10.0.0.5:6432/x?sslmode=require')).toBe('10.0.0.5:6432/x');
    expect(describeDatabaseUrl('postgres://panel:s3cret@db/p')).not.toContain('s3cret');
    // A Unix socket: its directory and port come as parameters.
    expect(describeDatabaseUrl('postgres:///paneldb?host=%2Fvar%2Frun%2Fpostgresql&port=5433&user=panel&password=s3cret')).toBe('/var/run/postgresql:5433/paneldb');
    expect(describeDatabaseUrl('postgres:///paneldb?host=%2Frun&user=panel&password=s3cret')).not.toContain('s3cret');
    expect(describeDatabaseUrl('postgresql:///paneldb?host=/var/run/postgresql')).toBe('/var/run/postgresql:5432/paneldb');
  });
});

// Each CLI run is a node start: seconds apiece on a loaded machine.
describe('the detached daemon: daemon.log rotated, daemon logs, daemon status --json', { timeout: 60_000 }, () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  let started = false;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-ops-'));
    await initDataDir(dir);
    env = { PANELCTL_CONFIG_DIR: join(dir, 'config'), PANELCTL_TOKEN: '', PANELCTL_URL: '' };
    // 2 KB files, two kept: a handful of requests at info rotates several times.
    const start = await runCli(['daemon', 'start', '--data-dir', dir, '--port', '0', '--log-level', 'info', '--log-max-size', '0.002', '--log-keep', '2'], { env });
    expect(start.code, start.stderr).toBe(0);
    started = true;
  }, 60_000);

  afterAll(async () => {
    if (started) {
      const stop = await runCli(['daemon', 'stop', '--data-dir', dir], { env });
      if (stop.code !== 0) {
        const state = JSON.parse(await readFile(join(dir, 'daemon.json'), 'utf8').catch(() => '{}')) as { pid?: number };
        if (state.pid) process.kill(state.pid, 'SIGKILL');
      }
    }
    await rm(dir, { recursive: true, force: true });
  }, 40_000);

  it('status --json: URL, pid, uptime, version, data directory, store, log file; admin detail with a token', async () => {
    const state = JSON.parse(await readFile(join(dir, 'daemon.json'), 'utf8'));
    const plain = await runCli(['daemon', 'status', '--data-dir', dir, '--json'], { env });
    expect(plain.code, plain.stderr).toBe(0);
    const status = JSON.parse(plain.stdout);
    expect(status).toMatchObject({
      running: true,
      healthy: true,
      url: state.url,
      pid: state.pid,
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      data_dir: dir,
      store: { kind: 'json', location: join(dir, 'store.json') },
      log_file: join(dir, 'daemon.log'),
      private_webhooks: { allowed: null, flag: false, setting: null },
      pending_deliveries: null,
    });
    expect(status.uptime_seconds).toBeGreaterThanOrEqual(0);
    expect(Date.parse(status.started_at)).not.toBeNaN();

    const login = await runCli(['login', '--url', state.url, '--data-dir', dir, '--email', 'admin@localhost', '--password-stdin'], { env, input: `${ADMIN_PASSWORD}\n` });
    expect(login.code, login.stderr).toBe(0);
    const [adminStatus, text] = await Promise.all([runCli(['daemon', 'status', '--data-dir', dir, '--json'], { env }), runCli(['daemon', 'status', '--data-dir', dir], { env })]);
    const admin = JSON.parse(adminStatus.stdout);
    expect(admin.private_webhooks).toEqual({ allowed: false, flag: false, setting: false });
    expect(admin.pending_deliveries).toBe(0);

    expect(text.stdout).toContain(`store               JSON file ${join(dir, 'store.json')}`);
    expect(text.stdout).toMatch(/pending deliveries\s+0/);
    expect(text.stdout).toMatch(/private webhooks\s+refused/);
  });

  it('writes JSON lines to daemon.log and rotates it, keeping the configured number of files', async () => {
    const state = JSON.parse(await readFile(join(dir, 'daemon.json'), 'utf8'));
    const agent = new Agent({ connect: { ca: await readFile(join(dir, 'tls', 'cert.pem'), 'utf8') } });
    try {
      // Two info lines of about 300 bytes per request: 40 requests write about 24 KB.
      for (let i = 0; i < 40; i++) {
        const answer = await request(`${state.url}/api/v1/health`, { dispatcher: agent });
        expect(answer.statusCode).toBe(200);
        await answer.body.text();
      }
    } finally {
      await agent.close();
    }
    const files = await rotatedFiles(dir);
    expect(files).toEqual(['daemon.log', 'daemon.log.1', 'daemon.log.2']);
    const lines = (await readFile(join(dir, 'daemon.log.1'), 'utf8')).split('\n').filter(Boolean);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
  });

  it('daemon logs: readable lines, filtered by level, the last N', async () => {
    // Three readers of the same files: side by side.
    const [logs, warnings, json] = await Promise.all([
      runCli(['daemon', 'logs', '--data-dir', dir, '-n', '4'], { env }),
      runCli(['daemon', 'logs', '--data-dir', dir, '--level', 'warn'], { env }),
      runCli(['daemon', 'logs', '--data-dir', dir, '-n', '2', '--json'], { env }),
    ]);
    expect(logs.code, logs.stderr).toBe(0);
    const lines = logs.stdout.trim().split('\n');
    expect(lines).toHaveLength(4);
    for (const line of lines) expect(line).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: (incoming request GET|request completed → )/);
    expect(warnings.code).toBe(0);
    expect(warnings.stdout).not.toContain('INFO');
    expect(json.stdout.trim().split('\n').map((line) => JSON.parse(line).level)).toEqual([30, 30]);
  });

  it('a data directory in use points to daemon stop', async () => {
    // The detached daemon above holds this data directory.
    const result = await runCli(['daemon', 'start', '--foreground', '--data-dir', dir, '--port', '0'], { env });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('panelctl daemon stop');
  });
});

describe('start-up errors say what to do', { timeout: 60_000 }, () => {
  let dir: string;
  let blocker: Server;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-startup-'));
    await initDataDir(dir);
    blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  }, 30_000);
  afterAll(async () => {
    await new Promise((resolve) => blocker.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  it('a busy port: names it, suggests --port and daemon stop; the data directory is released', async () => {
    const port = (blocker.address() as { port: number }).port;
    const result = await runCli(['daemon', 'start', '--foreground', '--data-dir', dir, '--port', String(port)]);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe(
      `panelctl: cannot start the daemon: port ${port} is in use on 127.0.0.1: another daemon? try --port N or panelctl daemon stop`,
    );
    await expect(stat(join(dir, 'daemon.pid'))).rejects.toThrow();
    // Detached, the same sentence comes back from the child.
    const detached = await runCli(['daemon', 'start', '--data-dir', dir, '--port', String(port)]);
    expect(detached.code).toBe(1);
    expect(detached.stderr).toContain(`port ${port} is in use on 127.0.0.1: another daemon? try --port N or panelctl daemon stop`);
    expect(detached.stderr).not.toContain('panelctl: cannot start the daemon: panelctl:');
  });

  it('an unreadable certificate is named', async () => {
    const missing = join(dir, 'nope.pem');
    const result = await runCli(['daemon', 'start', '--foreground', '--data-dir', dir, '--port', '0', '--tls-cert', missing, '--tls-key', join(dir, 'tls', 'key.pem')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`the TLS certificate ${missing} is missing`);
  });

  it('a certificate or key that is not PEM is named', async () => {
    const jwt = join(dir, 'jwt-secret');
    const result = await runCli(['daemon', 'start', '--foreground', '--data-dir', dir, '--port', '0', '--tls-cert', jwt, '--tls-key', jwt]);
    expect(result.code).toBe(1);
    // The first file found unusable is named (here the key), with what to do.
    expect(result.stderr).toMatch(new RegExp(`the TLS (certificate|key) ${jwt.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a usable`));
    expect(result.stderr).toContain('--tls-cert and --tls-key');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
  });
});

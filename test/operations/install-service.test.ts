// `panelctl daemon install-service`: the unit it prints passes `systemd-analyze verify`, runs this
// panelctl's `daemon start --foreground` on the data directory with the hardening asked for, and
// keeps the database URL out of the unit (in a 0600 EnvironmentFile). The first run is the built
// CLI; the others run the command in process (the unit names the same node and bin/panelctl.js).
import { execFile, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderEnvironment, systemdQuote } from '../../src/cli/service/unit.js';
import { BIN, runCli, runInProcess } from '../helpers/cli.js';

const run = promisify(execFile);
const ANALYZE = ['/usr/bin/systemd-analyze', '/bin/systemd-analyze'].find((path) => spawnSync(path, ['--version']).status === 0);
if (!ANALYZE) console.warn('skipping systemd-analyze verify of the service unit: systemd-analyze is not installed (.ci/run installs systemd)');

describe('daemon install-service', { timeout: 60_000 }, () => {
  let dir: string;
  let dataDir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-service-'));
    dataDir = join(dir, 'data dir');
    await mkdir(dataDir, { mode: 0o700 });
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const install = (args: string[], env: NodeJS.ProcessEnv = {}, run: typeof runCli = runInProcess) =>
    run(['daemon', 'install-service', '--data-dir', dataDir, ...args], { env: { PANELCTL_DATABASE_URL: '', ...env } });

  it('--print: a system unit running daemon start --foreground on the data directory, hardened', async () => {
    const result = await install(['--print', '--port', '8443'], {}, runCli);
    expect(result.code, result.stderr).toBe(0);
    const unit = result.stdout;
    expect(unit).toContain(`ExecStart=${process.execPath} ${BIN} daemon start --foreground --data-dir "${dataDir}" --port 8443\n`);
    for (const line of [
      'Restart=on-failure',
      'KillSignal=SIGTERM',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'ProtectHome=read-only',
      `ReadWritePaths="${dataDir}"`,
      'PrivateTmp=yes',
      `EnvironmentFile=-${join(dataDir, 'service.env')}`,
      'WantedBy=multi-user.target',
    ]) {
      expect(unit.split('\n'), line).toContain(line);
    }
  });

  it('--metrics-port goes to daemon start; the start job waits for readiness (daemon status --wait-ready)', async () => {
    const result = await install(['--print', '--metrics-port', '9464']);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines).toContain(`ExecStart=${process.execPath} ${BIN} daemon start --foreground --data-dir "${dataDir}" --metrics-port 9464`);
    expect(lines).toContain(`ExecStartPost=${process.execPath} ${BIN} daemon status --data-dir "${dataDir}" --wait-ready 90`);
    expect(lines).toContain('TimeoutStartSec=120s');
    expect((await install(['--print', '--metrics-port', 'x'])).code).toBe(2);
    expect((await install(['--print', '--metrics-host', '0.0.0.0'])).code).toBe(2);
  });

  it.skipIf(!ANALYZE)('--print output passes systemd-analyze verify (system and --user units)', async () => {
    await writeFile(join(dir, 'metrics.service'), (await install(['--print', '--metrics-port', '9464', '--metrics-host', '127.0.0.1'])).stdout);
    const verifiedMetrics = await run(ANALYZE!, ['verify', join(dir, 'metrics.service')]).catch((error: { stderr: string; code: number }) => error);
    expect(verifiedMetrics.stderr, verifiedMetrics.stderr).toBe('');
    const system = join(dir, 'panelctl.service');
    await writeFile(system, (await install(['--print'])).stdout);
    const verified = await run(ANALYZE!, ['verify', system]).catch((error: { stderr: string; code: number }) => error);
    expect(verified.stderr, verified.stderr).toBe('');

    const userDir = join(dir, 'user');
    await mkdir(userDir, { recursive: true });
    const userUnit = join(userDir, 'panelctl.service');
    await writeFile(userUnit, (await install(['--print', '--user'])).stdout);
    // A user manager needs a runtime directory; a temporary one does for verify.
    const runtime = join(dir, 'runtime');
    await mkdir(runtime, { mode: 0o700 });
    const verifiedUser = await run(ANALYZE!, ['--user', 'verify', userUnit], { env: { ...process.env, XDG_RUNTIME_DIR: runtime } }).catch(
      (error: { stderr: string }) => error,
    );
    expect(verifiedUser.stderr, verifiedUser.stderr).toBe('');
  });

  it('--user writes the unit under XDG_CONFIG_HOME, the database URL only to a 0600 environment file, and prints the enable line', async () => {
    const config = join(dir, 'config');
    const url = 'postgres://panel:s3cret@db.internal:5432/panel';
    const result = await install(['--user', '--database-url', url], { XDG_CONFIG_HOME: config });
    expect(result.code, result.stderr).toBe(0);
    const unitFile = join(config, 'systemd', 'user', 'panelctl.service');
    const unit = await readFile(unitFile, 'utf8');
    expect(unit).not.toContain('s3cret');
    expect(unit).toContain('WantedBy=default.target');
    expect(unit).not.toMatch(/^User=/m);
    const envFile = join(dataDir, 'service.env');
    expect(await readFile(envFile, 'utf8')).toBe(renderEnvironment(url));
    expect((await stat(envFile)).mode & 0o777).toBe(0o600);
    expect(result.stdout).toContain(`Wrote ${unitFile}`);
    expect(result.stdout).toContain('systemctl --user daemon-reload && systemctl --user enable --now panelctl.service');
  });

  it('quotes arguments the way systemd reads them', () => {
    expect(systemdQuote('/usr/bin/node')).toBe('/usr/bin/node');
    expect(systemdQuote('/srv/my data')).toBe('"/srv/my data"');
    expect(systemdQuote('100%')).toBe('100%%');
    expect(systemdQuote('$HOME')).toBe('$$HOME');
    expect(systemdQuote('a"b')).toBe('"a\\"b"');
  });
});

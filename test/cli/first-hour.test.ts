// The frictions of a newcomer's first hour (issue 36), each driven through the CLI against a real
// daemon as a user meets it: login follows the data directory's running daemon and a refused
// connection names it, an admin's `sites create` names the flag, a loopback webhook names the
// daemon flag and the certificate step, a mistyped global option after the command is suggested,
// `subscriptions create` says it needs a customer, and `webhooks test` prints the row format of
// `deliveries --follow` and `listen`. The commands run in process (the CLI's source with its real
// HTTP layer); the login that finds the running daemon runs as the built CLI.
import { createServer } from 'node:net';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { hostname, tmpdir } from 'node:os';
import { BIN, runCli } from '../helpers/cli.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, makeDataDir, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { initDataDir as initPanel } from '../../src/daemon/init.js';
import { createDatabase, pgAdminUrl } from '../helpers/postgres-db.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';
import { attemptLine } from '../../src/cli/commands/listen.js';
import { buildProgram } from '../../src/cli/program.js';
import { cliSession, type CliSession } from './helpers.js';

/** A port nothing listens on: bound, then closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** One row of an attempt: time, mark, status, event, where, duration, delivery id (tab-separated when piped). */
const ATTEMPT_ROW = /^\S+\t[✓✗]\tHTTP \d{3}[^\t]*\t[a-z.]+\t(webhook \d+\t)(entry \d+\tattempt \d\t)?\d+ ms\t[0-9a-f-]{36}$/;

describe('the first hour with panelctl', () => {
  let daemon: TestDaemon;
  let cli: CliSession;
  let tls: ReceiverTls;
  let receiver: Receiver;

  beforeAll(async () => {
    tls = await makeReceiverTls();
    receiver = await startReceiver(tls);
    daemon = await startDaemon({ args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: tls.caFile } });
    cli = await cliSession(null, { inProcess: true });
  });
  afterAll(async () => {
    await receiver?.close();
    await tls?.dispose();
    await cli?.dispose();
    await daemon?.dispose();
  });

  /** panelctl with the daemon's data directory but no --url: what the user types. */
  const run = (args: string[], input?: string) => cli.run(['--data-dir', daemon.dataDir, ...args], { input });

  it('login goes to the running daemon, not to an older login on another port; a refused connection names both URLs', async () => {
    const stale = `https://127.0.0.1:${await closedPort()}`;
    await mkdir(cli.configDir, { recursive: true });
    await writeFile(join(cli.configDir, 'config.json'), JSON.stringify({ login: { url: stale, token: 'old-token', email: ADMIN_EMAIL } }), { mode: 0o600 });

    const refused = await run(['whoami']);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim()).toBe(
      `panelctl: cannot connect to ${stale}: connection refused. The daemon of ${daemon.dataDir} runs at ${daemon.url} (pid ${daemon.proc.pid}): run panelctl login to use it, or pass --url ${daemon.url}`,
    );

    const login = await cli.built.run(['--data-dir', daemon.dataDir, 'login', '--email', ADMIN_EMAIL, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
    expect(login.code).toBe(0);
    expect(login.stderr).toContain(`Logged in to ${daemon.url} as ${ADMIN_EMAIL} (admin)`);
    expect((await cli.json(['--data-dir', daemon.dataDir, 'whoami'])).email).toBe(ADMIN_EMAIL);

    // An explicit --url still wins over the running daemon.
    const explicit = await run(['--url', stale, 'login', '--email', ADMIN_EMAIL, '--password-stdin'], `${ADMIN_PASSWORD}\n`);
    expect(explicit.code).toBe(1);
    expect(explicit.stderr).toContain(`cannot connect to ${stale}: connection refused. The daemon of ${daemon.dataDir} runs at ${daemon.url}`);
  });

  it('says to start the daemon only when none runs', async () => {
    const empty = await makeDataDir();
    const other = await cliSession(null, { inProcess: true });
    try {
      const result = await other.run(['--data-dir', empty, '--url', `https://127.0.0.1:${await closedPort()}`, 'whoami'], { env: { PANELCTL_TOKEN: 'x' } });
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`connection refused\\. Is the daemon running\\? panelctl daemon start --data-dir ${empty}$`, 'm'));
    } finally {
      await other.dispose();
    }
  });

  it('an admin creating a site without --subscription is told the flag', async () => {
    const result = await run(['sites', 'create', 'first-hour.example']);
    expect(result.code).toBe(1);
    expect(result.stderr.trim()).toBe('panelctl: --subscription ID: admins have no default subscription; name the one to create the site in (panelctl subscriptions list)');
    const help = await run(['subscriptions', 'create', '--help']);
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('the customer must exist first: panelctl users create --role customer');
  });

  it('suggests --json for --jsn, after the command name as before it', async () => {
    for (const args of [['keys', 'list', '--jsn'], ['--jsn', 'keys', 'list'], ['webhooks', 'deliveries', '1', '--jsn']]) {
      const result = await run(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toContain("error: unknown option '--jsn'\n(Did you mean --json?)");
    }
  });

  describe('daemons that refuse a receiver on this machine', () => {
    // In-process apps listening on loopback: what is checked is the daemon's refusal and the
    // CLI's hint, which the built CLI reads from them over HTTP as from a daemon. One strict app
    // for both refusals (at create, and at connect), one that does not trust the receiver.
    let strict: TestApp;
    let untrusting: TestApp;
    let strictUrl: string;
    let untrustingUrl: string;
    beforeAll(async () => {
      [strict, untrusting] = await Promise.all([buildTestApp(), buildTestApp({ allowPrivateWebhooks: true })]);
      [strictUrl, untrustingUrl] = await Promise.all([strict.listen(), untrusting.listen()]);
    });
    afterAll(async () => {
      await strict?.close();
      await untrusting?.close();
    });

    it('a loopback webhook on a daemon without --allow-private-webhooks names the flag and the certificate step', async () => {
      const result = await cli.run(['--data-dir', strict.dataDir, '--url', strictUrl, 'webhooks', 'create', '--url', 'https://127.0.0.1:8443/webhooks', '--events', '*', '--generate-secret'], {
        env: { PANELCTL_TOKEN: await strict.login() },
      });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('url: 127.0.0.1 is a loopback address');
      expect(result.stderr).toContain('start the daemon with --allow-private-webhooks');
      expect(result.stderr).toContain('NODE_EXTRA_CA_CERTS=receiver-cert.pem panelctl daemon start --allow-private-webhooks');
    });

    it('a test delivery refused as private or over an untrusted certificate says which daemon flag or variable fixes it', async () => {
      // localhost passes create (only literal addresses are checked there) and is refused at connect.
      const strictToken = await strict.login();
      const blocked = await cli.run(['--url', strictUrl, '--data-dir', strict.dataDir, '--json', 'webhooks', 'create', '--url', `https://localhost:${receiver.port}/hook`, '--events', '*', '--generate-secret'], {
        env: { PANELCTL_TOKEN: strictToken },
      });
      const refused = await cli.run(['--url', strictUrl, '--data-dir', strict.dataDir, 'webhooks', 'test', String(JSON.parse(blocked.stdout).id), '--no-wait'], {
        env: { PANELCTL_TOKEN: strictToken },
      });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('blocked: loopback address');
      expect(refused.stderr).toContain('start the daemon with --allow-private-webhooks');

      const token = await untrusting.login();
      const created = await cli.run(['--url', untrustingUrl, '--data-dir', untrusting.dataDir, '--json', 'webhooks', 'create', '--url', receiver.url, '--events', '*', '--generate-secret'], { env: { PANELCTL_TOKEN: token } });
      const untrusted = await cli.run(['--url', untrustingUrl, '--data-dir', untrusting.dataDir, 'webhooks', 'test', String(JSON.parse(created.stdout).id), '--no-wait'], { env: { PANELCTL_TOKEN: token } });
      expect(untrusted.code).toBe(1);
      expect(untrusted.stderr).toContain('TLS: ');
      expect(untrusted.stderr).toContain("the daemon does not trust the receiver's certificate; start it with NODE_EXTRA_CA_CERTS=receiver-cert.pem");
    });
  });

  it('webhooks test prints the row of deliveries --follow and listen', async () => {
    const created = await cli.json(['--data-dir', daemon.dataDir, 'webhooks', 'create', '--url', receiver.url, '--events', 'site.created', '--generate-secret']);
    const result = await run(['webhooks', 'test', String(created.id)]);
    expect(result.code).toBe(0);
    const [row] = result.stdout.trim().split('\n');
    expect(row).toMatch(ATTEMPT_ROW);
    expect(row).toContain(`\t✓\tHTTP 200\twebhook.test\twebhook ${created.id}\tentry `);

    // listen forwards the same kind of attempt and prints it the same way.
    const { ctx } = await buildProgram({ args: [], io: { stdout: new PassThrough(), stderr: new PassThrough(), stdin: new PassThrough(), env: {} } });
    const ui = await ctx.ui();
    const forwarded = attemptLine(ui, { delivery_id: '3f1c2a9e-8b4d-4e2f-9a61-0c7d5e4b8a12', event: 'site.created', headers: {}, body: '{}' }, { status_code: 200, duration_ms: 4 }, 7);
    expect(forwarded).toMatch(ATTEMPT_ROW);
    expect(forwarded.split('\t').slice(1, 5)).toEqual(['✓', 'HTTP 200', 'site.created', 'webhook 7']);
  });
});

const pg = pgAdminUrl();

describe.skipIf(!pg.url)(`a database URL on a data directory that holds a JSON store${pg.url ? '' : ` (skipped: ${pg.reason})`}`, () => {
  it('warns that the JSON store is not used and names store migrate, in the log and where the detached daemon was started', async () => {
    const url = await createDatabase(pg.url!, 'panelctl_first_hour');
    const jsonDir = await makeDataDir();
    const other = await makeDataDir();
    try {
      // Initialised in process (as `panelctl init` does it); the daemon start is the point.
      await initPanel(jsonDir, { password: ADMIN_PASSWORD });
      // The database gets its panel from another data directory, as on a second server.
      await initPanel(other, { password: ADMIN_PASSWORD, databaseUrl: url });
      const detached = await runCli(['daemon', 'start', '--data-dir', jsonDir, '--port', '0'], { env: { PANELCTL_DATABASE_URL: url } });
      try {
        expect(detached.code, detached.stderr).toBe(0);
        expect(detached.stderr).toMatch(new RegExp(`^warning: ${jsonDir}/store\\.json holds a JSON store that this daemon does not use: it serves from the PostgreSQL database \\S+\\. To bring that data over, stop the daemon and run panelctl store migrate --to URL`, 'm'));
        expect(detached.stderr).not.toContain('postgres://');
        // The daemon's log says it too.
        await vi.waitFor(async () => expect(await readFile(join(jsonDir, 'daemon.log'), 'utf8')).toContain(`${jsonDir}/store.json holds a JSON store that this daemon does not use`), { timeout: 10_000 });
        expect(await readFile(join(jsonDir, 'daemon.log'), 'utf8')).toContain('stop the daemon and run panelctl store migrate --to URL');
      } finally {
        await runCli(['daemon', 'stop', '--data-dir', jsonDir]);
      }
    } finally {
      await rm(jsonDir, { recursive: true, force: true });
      await rm(other, { recursive: true, force: true });
    }
  });
});

const BASH_COMPLETION = '/usr/share/bash-completion/bash_completion';

// A daemon names itself by host and process: the first is the in-process app (this worker's
// pid), the second a daemon process on the same database.
describe.skipIf(!pg.url)(`two daemons on one database${pg.url ? '' : ` (skipped: ${pg.reason})`}`, () => {
  it('each log entry names the daemon that made the attempt', async () => {
    const url = await createDatabase(pg.url!, 'panelctl_first_hour');
    const tls = await makeReceiverTls();
    const receiver = await startReceiver(tls);
    const first = await buildTestApp({ databaseUrl: url, allowPrivateWebhooks: true, webhookCa: [tls.cert] });
    let firstOpen = true;
    let second: TestDaemon | undefined;
    try {
      const token = await first.login();
      const created = await first.request('POST', '/webhooks', { token, body: { url: receiver.url, events: '*', secret: 'first-hour-secret' } });
      const id = created.body.data.id as number;
      const byFirst = await first.request('POST', `/webhooks/${id}/test`, { token });
      expect(byFirst.body.data.daemon).toBe(`${hostname()}:${process.pid}`);
      second = await startDaemon({ databaseUrl: url, args: ['--allow-private-webhooks'], env: { NODE_EXTRA_CA_CERTS: tls.caFile } });
      // Only the second is left to make the next attempt.
      await first.close();
      firstOpen = false;
      const bySecond = await second.request('POST', `/webhooks/${id}/test`, { token });
      expect(bySecond.body.data.daemon).toBe(`${hostname()}:${second.proc.pid}`);
      const log = await second.request('GET', `/webhooks/${id}/deliveries`, { token });
      expect(log.body.data.map((entry: { daemon: string }) => entry.daemon)).toEqual([`${hostname()}:${second.proc.pid}`, `${hostname()}:${process.pid}`]);
    } finally {
      await second?.dispose();
      if (firstOpen) await first.close();
      await receiver.close();
      await tls.dispose();
    }
  });
});

describe('completion install lines', () => {
  it('work as printed in a fresh account, and bash-completion loads the bash one', async () => {
    const home = await mkdtemp(join(tmpdir(), 'panelctl-home-'));
    try {
      // `panelctl` on PATH, as README step 0 puts it.
      await mkdir(join(home, 'bin'));
      await symlink(BIN, join(home, 'bin', 'panelctl'));
      const env = { ...process.env, HOME: home, XDG_DATA_HOME: '', PATH: `${join(home, 'bin')}:${process.env.PATH}` };
      const help = await runCli(['completion', '--help'], { env });
      const lines = [...help.stdout.matchAll(/^ {2}(bash|zsh|fish)\s+(mkdir -p .*)$/gm)].map((m) => ({ shell: m[1], line: m[2] }));
      expect(lines.map((l) => l.shell)).toEqual(['bash', 'zsh', 'fish']);
      expect(help.stdout).toContain('bash-completion package');
      const files = { bash: 'completions/panelctl.bash', zsh: 'completions/_panelctl', fish: 'completions/panelctl.fish' } as const;
      for (const { shell, line } of lines) {
        const run = spawnSync('sh', ['-c', line], { env, encoding: 'utf8' });
        expect(run.status, `${line}: ${run.stderr}`).toBe(0);
        const target = /> (\S+)$/.exec(line)![1].replace(/^~/, home);
        expect(await readFile(target, 'utf8')).toBe(await readFile(new URL(`../../${files[shell as keyof typeof files]}`, import.meta.url), 'utf8'));
      }
      if (!existsSync(BASH_COMPLETION)) {
        console.warn(`skipped the loading check: ${BASH_COMPLETION} is missing (package bash-completion)`);
        return;
      }
      const loaded = spawnSync('bash', ['-c', `source ${BASH_COMPLETION}; _completion_loader panelctl; complete -p panelctl`], { env, encoding: 'utf8' });
      expect(loaded.stdout).toContain('complete -F _panelctl panelctl');
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

// The CLI without a daemon: usage errors (exit 2), an unreachable daemon (exit 1 with the
// hint; a real refused connection), run in process; and the generated completions and man page
// (fresh, valid for each shell and groff).
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runInProcess } from '../helpers/cli.js';
import { cliSession, type CliSession } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('panelctl usage and errors', () => {
  let cli: Pick<CliSession, 'run' | 'configDir' | 'dispose'>;
  beforeAll(async () => {
    const session = await cliSession(null);
    // In process, with the real HTTP layer: nothing answers, and nothing needs to.
    cli = { ...session, run: (args, options = {}) => runInProcess(args, { input: options.input, env: { ...session.env, ...options.env } }) };
  });
  afterAll(async () => {
    await cli.dispose();
  });

  it('exits 2 on an unknown command, with a suggestion', async () => {
    const result = await cli.run(['kyes', 'list']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("unknown command 'kyes'");
    expect(result.stderr).toContain('keys');
    expect(result.stdout).toBe('');
  });

  it('exits 2 on unknown options, missing arguments, bad values and a missing verb', async () => {
    const cases: string[][] = [
      ['keys', 'list', '--bogus'],
      ['webhooks', 'show'],
      ['webhooks', 'show', 'abc'],
      ['webhooks', 'deliveries', '3', '--limit', '0'],
      ['keys', 'create', 'ci', '--expires-in', 'soon'],
      ['keys', 'create', 'ci', '--expires-at', '2030-01-01'],
      ['keys', 'create', 'ci', '--expires-at', '2030-01-01T00:00:00Z', '--expires-in', '30d'],
      ['users', 'create', '--email', 'a@b.c', '--name', 'A', '--role', 'root'],
      ['completion', 'tcsh'],
      ['webhooks', 'update', '3', '--active', '--inactive'],
      ['keys'],
    ];
    for (const args of cases) {
      const result = await cli.run(['--token', 'x', '--url', 'https://127.0.0.1:9', ...args]);
      expect([args.join(' '), result.code]).toEqual([args.join(' '), 2]);
      expect(result.stderr.trim().length).toBeGreaterThan(0);
    }
  });

  it('exits 2 on usage errors found before any request (settings, secrets, webhooks update)', async () => {
    const target = ['--token', 'x', '--url', 'https://127.0.0.1:9'];
    const unknownKey = await cli.run([...target, 'settings', 'set', 'no_such_key', '1']);
    expect(unknownKey.code).toBe(2);
    expect(unknownKey.stderr).toContain('jwt_ttl_seconds');
    const badInt = await cli.run([...target, 'settings', 'set', 'jwt_ttl_seconds', 'soon']);
    expect(badInt).toMatchObject({ code: 2, stderr: expect.stringContaining('integer') });
    const twoSecrets = await cli.run([...target, 'webhooks', 'create', '--url', 'https://x.test', '--events', '*', '--secret', 's', '--generate-secret']);
    expect(twoSecrets).toMatchObject({ code: 2, stderr: expect.stringContaining('only one') });
    const noSecret = await cli.run([...target, 'webhooks', 'create', '--url', 'https://x.test', '--events', '*']);
    expect(noSecret).toMatchObject({ code: 2, stderr: expect.stringContaining('secret') });
    const nothing = await cli.run([...target, 'webhooks', 'update', '3']);
    expect(nothing).toMatchObject({ code: 2, stderr: expect.stringContaining('nothing to change') });
    const badData = await cli.run([...target, 'events', 'emit', 'site.created', '--data', 'site_id']);
    expect(badData).toMatchObject({ code: 2, stderr: expect.stringContaining('key=value') });
  });

  it('prints help and the version with exit 0', async () => {
    const help = await cli.run(['--help']);
    expect(help.code).toBe(0);
    for (const command of ['login', 'keys', 'webhooks', 'events', 'sites', 'subscriptions', 'users', 'settings', '2fa', 'watch', 'completion']) {
      expect(help.stdout).toMatch(new RegExp(`^  ${command}\\b`, 'm'));
    }
    const version = await cli.run(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: expect.stringMatching(/^\d+\.\d+\.\d+\n$/) });
  });

  it('exits 1 with the daemon-start hint when the daemon is unreachable', async () => {
    const port = await closedPort();
    const result = await cli.run(['--url', `https://127.0.0.1:${port}`, '--token', 'x', 'whoami']);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toContain('connection refused');
    expect(result.stderr).toContain('panelctl daemon start');

    const json = await cli.run(['--json', '--url', `https://127.0.0.1:${port}`, '--token', 'x', 'whoami']);
    expect(json.code).toBe(1);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr)).toEqual({ data: null, error: 'cli error', message: expect.stringContaining('daemon start') });
  });

  it('names an unreadable config file, and logout resets it', async () => {
    await writeFile(join(cli.configDir, 'config.json'), '{broken');
    const broken = await cli.run(['--url', 'https://127.0.0.1:9', 'whoami']);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain(`cannot read ${join(cli.configDir, 'config.json')}`);
    expect(broken.stderr).toContain('panelctl logout');
    expect((await cli.run(['logout'])).code).toBe(0);
    expect((await cli.run(['--url', 'https://127.0.0.1:9', 'whoami'])).code).toBe(4);
  });

  it('exits 4 with the login hint when there is no login at all', async () => {
    const result = await cli.run(['--url', 'https://127.0.0.1:9', 'keys', 'list']);
    expect(result.code).toBe(4);
    expect(result.stderr).toContain('run panelctl login');
  });
});

describe('completions and man page', () => {
  let cli: CliSession;
  beforeAll(async () => {
    cli = await cliSession(null);
  });
  afterAll(async () => {
    await cli.dispose();
  });

  it('checked-in files are what the generator makes (run npm run gen:docs when this fails)', async () => {
    const check = spawnSync(process.execPath, ['dist/cli/gen/docs.js', '--check'], { cwd: ROOT, encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
    for (const [shell, file] of [
      ['bash', 'completions/panelctl.bash'],
      ['zsh', 'completions/_panelctl'],
      ['fish', 'completions/panelctl.fish'],
    ]) {
      const printed = await cli.run(['completion', shell]);
      expect(printed.code).toBe(0);
      expect([file, printed.stdout === (await readFile(`${ROOT}${file}`, 'utf8'))]).toEqual([file, true]);
    }
  });

  it('bash: the script sources cleanly and completes commands, flags, event names and lists', () => {
    const script = `
      source completions/panelctl.bash || exit 9
      t() { COMP_WORDS=("$@"); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _panelctl; echo "\${COMPREPLY[*]}"; }
      t panelctl ""
      t panelctl webhooks ""
      t panelctl webhooks create --ev
      t panelctl --json events emit site.
      t panelctl webhooks create --events site.created,subscription.s
      t panelctl users create --role ""
      t panelctl settings set rate
      t panelctl --data-dir /tmp webhooks deliveries 3 --f
      complete -p panelctl
    `;
    const result = spawnSync('bash', ['--norc', '--noprofile', '-c', script], { cwd: ROOT, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0].split(' ')).toEqual(expect.arrayContaining(['login', 'keys', 'webhooks', 'events', 'completion', 'watch', '2fa']));
    expect(lines[1].split(' ')).toEqual(['create', 'list', 'show', 'update', 'enable', 'disable', 'delete', 'test', 'deliveries', 'redeliver', 'recover', 'rotate-secret', 'pause', 'resume']);
    expect(lines[2]).toBe('--events');
    expect(lines[3]).toBe('site.created site.deleted');
    expect(lines[4]).toBe('site.created,subscription.suspended');
    expect(lines[5]).toBe('admin customer');
    expect(lines[6].split(' ')).toEqual(expect.arrayContaining(['rate_limit_mode', 'rate_limit_login_per_minute']));
    expect(lines[7]).toBe('--follow --failed');
    expect(lines[8]).toContain('complete -F _panelctl panelctl');
  });

  it.skipIf(!has('zsh'))('zsh: the script parses (zsh -n) and defines the completion function', () => {
    const syntax = spawnSync('zsh', ['-n', 'completions/_panelctl'], { cwd: ROOT, encoding: 'utf8' });
    expect(syntax.stderr).toBe('');
    expect(syntax.status).toBe(0);
    const loaded = spawnSync('zsh', ['-f', '-c', 'autoload -Uz compinit && compinit -u -D; source completions/_panelctl; whence -w _panelctl _panelctl_has_subcommands; _panelctl_has_subcommands webhooks'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect(loaded.stderr).toBe('');
    expect(loaded.stdout).toContain('_panelctl: function');
    expect(loaded.stdout).toContain('create list show update enable disable delete test deliveries redeliver');
  });

  it.skipIf(!has('fish'))('fish: the script parses (fish -n) and completes commands, flags and event names', () => {
    const syntax = spawnSync('fish', ['-n', 'completions/panelctl.fish'], { cwd: ROOT, encoding: 'utf8' });
    expect(syntax.stderr).toBe('');
    expect(syntax.status).toBe(0);
    const complete = (line: string) =>
      spawnSync('fish', ['--no-config', '-c', `source completions/panelctl.fish; complete -C '${line}'`], { cwd: ROOT, encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]);
    expect(complete('panelctl webhooks ')).toEqual(expect.arrayContaining(['create', 'deliveries', 'redeliver']));
    expect(complete('panelctl webhooks deliveries 3 --f')).toEqual(['--failed', '--follow']);
    expect(complete('panelctl events emit sub')).toEqual(['subscription.created', 'subscription.suspended']);
    expect(complete('panelctl webhooks create --events site.created,site.')).toEqual(['site.created,site.created', 'site.created,site.deleted']);
  });

  it.skipIf(!has('groff'))('man page renders without warnings (groff -man -ww -z) and documents every command', async () => {
    const result = spawnSync('groff', ['-man', '-ww', '-z', 'man/panelctl.1'], { cwd: ROOT, encoding: 'utf8' });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const page = await readFile(`${ROOT}man/panelctl.1`, 'utf8');
    for (const section of ['NAME', 'SYNOPSIS', 'DESCRIPTION', 'GLOBAL OPTIONS', 'COMMANDS', 'ENVIRONMENT', 'FILES', 'EXIT STATUS', 'EXAMPLES']) {
      expect(page).toContain(`.SH ${section.includes(' ') ? section : section}`);
    }
    for (const command of ['keys create', 'webhooks deliveries', 'events emit', 'settings set', '2fa setup', 'completion', 'daemon start']) {
      expect(page).toContain(`.SS "${command}"`);
    }
    expect(page).toContain('PANELCTL_CONFIG_DIR');
  });
});

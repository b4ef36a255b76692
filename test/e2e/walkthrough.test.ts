// The README's "first five minutes", run as written: every command line of its first shell
// block (and the "(second terminal)" lines in its comments) is run by bash, in order, in a copy
// of the repository with a fresh HOME, starting with step 0 (npm link into ~/.local) so that
// every later `panelctl` is the one on PATH. Only what a reader would fill in is filled in: the
// password step 1 printed, the API key of step 3, the signing secrets the CLI printed.
//
// "A fresh clone" is a copy of the working tree's package files (times kept, so `prepare` finds
// dist/ current and does not rebuild) with node_modules linked to this checkout's: a real clone
// would need an `npm install`, minutes the suite should not spend, and would test the last
// commit rather than the tree under test. The ports are the README's (3443, 8000, 8443); when
// one is taken on this machine (a developer's own daemon) the test skips and says so.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { track } from '../helpers/processes.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PORTS = [3443, 8000, 8443];
const COPIED = ['bin', 'dist', 'docs', 'src', 'scripts', 'completions', 'man', 'package.json', 'package-lock.json', 'tsconfig.json', 'README.md'];
const HAS_SCRIPT = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
const HAS_CURL = spawnSync('curl', ['--version'], { stdio: 'ignore' }).status === 0;

/** A command of the walkthrough: a line of the block, or one a comment says to run in another terminal. */
interface Line {
  command: string;
  /** Run in another terminal: it keeps running while the next lines run. */
  terminal: boolean;
}

/** The command lines of the README's "first five minutes" block, trailing comments removed. */
function walkthroughLines(readme: string): Line[] {
  const section = readme.slice(readme.indexOf('## The first five minutes'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)![1];
  const lines: Line[] = [];
  for (const raw of block.split('\n')) {
    const terminal = /^#\s+\((?:second|third) terminal\)\s+(.*)$/.exec(raw);
    if (terminal) lines.push({ command: terminal[1].trim(), terminal: true });
    else if (raw.trim() && !raw.startsWith('#')) lines.push({ command: raw.replace(/\s{2,}#\s.*$/, '').trim(), terminal: false });
  }
  return lines;
}

async function portFree(port: number): Promise<boolean> {
  const server = createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

interface Background {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  done: Promise<number | null>;
}

const readme = await readFile(join(ROOT, 'README.md'), 'utf8');
const busy = (await Promise.all(PORTS.map(async (port) => ((await portFree(port)) ? null : port)))).filter((p) => p !== null);
if (busy.length) console.warn(`walkthrough skipped: port ${busy.join(', ')} is in use on this machine (the README's ports)`);

describe.skipIf(busy.length > 0)('the README walkthrough, from a fresh copy and a fresh HOME', () => {
  let dir: string;
  let clone: string;
  let home: string;
  /** The shell's variables so far: the environment of a fresh login plus the README's assignments. */
  let env: NodeJS.ProcessEnv;
  const background: Background[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'panelctl-walkthrough-'));
    clone = join(dir, 'panelctl');
    home = join(dir, 'home');
    await mkdir(clone);
    await mkdir(home);
    // cp -a keeps modification times, directories' included: dist/ stays current for `prepare`.
    const copy = spawnSync('cp', ['-a', ...COPIED.map((name) => join(ROOT, name)), clone]);
    if (copy.status !== 0) throw new Error(`cp failed: ${copy.stderr}`);
    await symlink(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
    env = {};
    for (const [name, value] of Object.entries(process.env)) {
      // A fresh account: no panelctl or XDG settings, and none of the npm_config_* that `npm
      // test` hands its children (they would override step 0's NPM_CONFIG_PREFIX).
      if (/^(npm_|XDG_|PANEL_DATA_DIR$|NODE_EXTRA_CA_CERTS$)/i.test(name)) continue;
      if (name.startsWith('PANELCTL_') && name !== 'PANELCTL_TEST_RUN') continue;
      env[name] = value;
    }
    env.HOME = home;
    env.NO_COLOR = '1';
  });

  afterAll(async () => {
    for (const job of background) job.child.kill('SIGTERM');
    await Promise.all(background.map((job) => job.done));
    // Whatever happened above, the walkthrough's detached daemon does not outlive it.
    if (home) spawnSync('bash', ['-c', `${join(home, '.local/bin/panelctl')} daemon stop`], { env, cwd: clone });
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Runs one line in bash, as typed, and waits for it. */
  function run(command: string, input = ''): { code: number | null; stdout: string; stderr: string } {
    const result = spawnSync('bash', ['-c', command], { env, cwd: clone, input, encoding: 'utf8', timeout: 60_000 });
    return { code: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  /** Starts one line in bash, as in another terminal. */
  function start(command: string): Background {
    const child = track(spawn('bash', ['-c', `exec env ${command}`], { env, cwd: clone, stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk) => (stdout += chunk));
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const job = { child, stdout: () => stdout, stderr: () => stderr, done: new Promise<number | null>((resolve) => child.on('close', resolve)) };
    background.push(job);
    return job;
  }

  /** `NAME=value` or `export NAME=value` alone on a line: the shell keeps it for the next lines. */
  function assign(command: string): boolean {
    const match = /^(?:export\s+)?([A-Z_]+)=(\S+)$/.exec(command);
    if (!match) return false;
    const value = run(`${command}\nprintf '%s' "$${match[1]}"`).stdout;
    env[match[1]] = value;
    return true;
  }

  const waitFor = (what: string, check: () => unknown, timeout = 30_000) =>
    vi.waitFor(() => {
      if (!check()) throw new Error(`still waiting for ${what}`);
    }, { timeout, interval: 50 });

  it('runs every command of "The first five minutes", the local step 6 included', { timeout: 300_000 }, async () => {
    const lines = walkthroughLines(readme);
    const filled: Record<string, string> = {};
    /** The reader's part: the values the README shows cut short (`ncp_…`, `5f0c…`). */
    const fill = (command: string) => command.replace(/\b(ncp_|[0-9a-f]{4})…/g, (text) => filled[text] ?? text);
    let listen: Background | undefined;
    const handled: string[] = [];

    for (const { command: written, terminal } of lines) {
      const command = fill(written);
      handled.push(written);
      if (assign(command)) continue;

      if (terminal) {
        const job = start(command);
        if (/webhook-receiver\.mjs$/.test(command)) {
          const port = /PORT=(\d+)/.exec(command)![1];
          await waitFor(`the receiver on ${port}`, () => job.stdout().includes(`listening on ${port}`));
        } else {
          // A one-shot command of another terminal (events emit): it ends by itself.
          expect(await job.done, `${command}: ${job.stderr()}`).toBe(0);
          if (listen) await waitFor('the forwarded attempt', () => /✓\tHTTP 200\tsite\.created\twebhook 1\t\d+ ms\t[0-9a-f-]{36}/.test(listen!.stdout()));
        }
        continue;
      }

      if (/^panelctl login --email \S+$/.test(command)) {
        // The prompting login: typed on a terminal.
        if (!HAS_SCRIPT) {
          console.warn('walkthrough: the prompting login needs script(1); its --password-stdin twin runs instead');
          continue;
        }
        const tty = track(spawn('script', ['-qfec', command, '/dev/null'], { env, cwd: clone, stdio: ['pipe', 'pipe', 'pipe'], detached: true }), { group: true });
        let output = '';
        tty.stdout!.on('data', (chunk) => (output += chunk));
        const closed = new Promise<number | null>((resolve) => tty.on('close', resolve));
        await waitFor('the password prompt', () => output.includes('Password:'));
        tty.stdin!.write(`${env.PASSWORD}\n`);
        expect(await closed, output).toBe(0);
        expect(output).toContain('Logged in to https://127.0.0.1:3443 as admin@localhost');
        continue;
      }

      if (command.startsWith('panelctl listen ')) {
        listen = start(command);
        // Two lines, written one after the other: wait for the second (the secret) itself.
        const secretLine = /Signing secret of this session \(X-Webhook-Signature\): (\S+)\n/;
        await waitFor('listen to print its signing secret', () => secretLine.test(listen!.stderr()));
        expect(listen.stderr()).toContain('Ready: events site.created');
        filled['5f0c…'] = secretLine.exec(listen.stderr())![1];
        continue;
      }

      if (/^panelctl webhooks deliveries \d+ --follow$/.test(command)) {
        const follow = start(command);
        await waitFor('the test delivery in the followed log', () => /✓\tHTTP 200\twebhook\.test\twebhook 2\tentry \d+\tattempt 1\t/.test(follow.stdout()));
        // Ctrl-C once it says it follows (before that, the signal would find no handler yet).
        await waitFor('the follow notice', () => follow.stderr().includes('following deliveries'));
        follow.child.kill('SIGINT');
        expect(await follow.done).toBe(0);
        continue;
      }

      if (command.startsWith('curl ') && !HAS_CURL) {
        console.warn(`walkthrough: curl is not installed; skipped: ${command}`);
        continue;
      }

      if (command === 'panelctl daemon stop' && listen) {
        // The reader ends listen (Ctrl-C) before restarting the daemon it streams from.
        listen.child.kill('SIGINT');
        expect(await listen.done).toBe(0);
        listen = undefined;
      }

      const result = run(command);
      expect(result, `${command}\n${result.stderr}`).toMatchObject({ code: 0 });
      const out = result.stdout + result.stderr;

      if (command.startsWith('NPM_CONFIG_PREFIX=')) {
        expect(existsSync(join(home, '.local/bin/panelctl'))).toBe(true);
      } else if (command === 'panelctl daemon start') {
        expect(out).toContain('Admin user: admin@localhost');
        expect(out).toContain('panelctl daemon running at https://127.0.0.1:3443');
        env.PASSWORD = /Admin password: (\S+)/.exec(out)![1];
      } else if (command.includes('--password-stdin')) {
        expect(out).toContain('Logged in to https://127.0.0.1:3443 as admin@localhost (admin)');
      } else if (command.startsWith('panelctl keys create')) {
        filled['ncp_…'] = /(ncp_[0-9a-f]{64})/.exec(out)![1];
      } else if (command.startsWith('curl ')) {
        expect(JSON.parse(result.stdout)).toMatchObject({ error: null });
      } else if (command.startsWith('panelctl webhooks create')) {
        expect(out).toMatch(/^id: 2$/m);
        filled['3c5e…'] = /^secret: ([0-9a-f]{64})$/m.exec(out)![1];
      } else if (/^panelctl webhooks test \d+$/.test(command)) {
        expect(result.stdout).toMatch(/✓\tHTTP 200\twebhook\.test\twebhook 2\tentry \d+\tattempt 1\t\d+ ms\t[0-9a-f-]{36}/);
      }
    }

    // Every line of the block ran (a new line in the README needs a word here if it needs one).
    expect(handled).toEqual(lines.map((l) => l.command));
    expect(handled.length).toBeGreaterThan(15);
    expect(handled.some((c) => c.includes('--allow-private-webhooks'))).toBe(true);
    const stopped = run('panelctl daemon stop');
    expect(stopped.code, stopped.stderr).toBe(0);
  });
});

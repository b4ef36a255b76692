// Helpers of the CLI tests: the CLI pointed at a test daemon with its own config directory
// (built, or in process), the fake-API fixture of the run-*.test.ts files, an independent TOTP
// (RFC 6238) for 2FA, a pseudo-terminal through script(1), and long-running CLI children.
// (The HTTPS receiver is test/helpers/receiver.ts.)
import { spawn, spawnSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, expect } from 'vitest';
import { BIN, runCli, runInProcess, type CliResult, type InProcessOptions } from '../helpers/cli.js';
import { FakeApi } from '../helpers/fake-api.js';
import type { TestDaemon } from '../helpers/daemon.js';
import { track } from '../helpers/processes.js';

export interface CliRunner {
  /** panelctl --data-dir D --url U ARGS… with the session's config directory. */
  run(args: string[], options?: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<CliResult>;
  /** Runs with --json, expects exit 0, returns the parsed stdout. */
  json<T = any>(args: string[], options?: { input?: string; env?: NodeJS.ProcessEnv }): Promise<T>;
}

export interface CliSession extends CliRunner {
  configDir: string;
  env: NodeJS.ProcessEnv;
  /** The built CLI as a child process, whichever way `run` goes: where the process is the point. */
  built: CliRunner;
  dispose(): Promise<void>;
}

function runner(run: CliRunner['run']): CliRunner {
  return {
    run,
    async json(args, options = {}) {
      const result = await run(['--json', ...args], options);
      expect(result, `panelctl ${args.join(' ')}`).toMatchObject({ code: 0 });
      try {
        return JSON.parse(result.stdout);
      } catch {
        throw new Error(`panelctl ${args.join(' ')} printed no JSON: ${result.stdout}\n${result.stderr}`);
      }
    },
  };
}

/**
 * A config directory of its own (PANELCTL_CONFIG_DIR), so tests never see a real login.
 * `inProcess`: `run` and `json` run the CLI's source in this process (runInProcess, with its real
 * HTTP layer) against the daemon: the same argv, daemon, answers and exit codes without a node
 * start per command; `built` still spawns the built CLI.
 */
export async function cliSession(daemon: Pick<TestDaemon, 'dataDir' | 'url'> | null, options: { inProcess?: boolean } = {}): Promise<CliSession> {
  const configDir = await mkdtemp(join(tmpdir(), 'panelctl-cfg-'));
  const env: NodeJS.ProcessEnv = {
    PANELCTL_CONFIG_DIR: configDir,
    PANELCTL_TOKEN: '',
    PANELCTL_URL: '',
    PANELCTL_CA: '',
    PANEL_DATA_DIR: '',
  };
  const target = daemon ? ['--data-dir', daemon.dataDir, '--url', daemon.url] : [];
  const built = runner((args, o = {}) => runCli([...target, ...args], { input: o.input, env: { ...env, ...o.env }, timeoutMs: o.timeoutMs }));
  const local = runner((args, o = {}) => runInProcess([...target, ...args], { input: o.input, env: { ...env, ...o.env } }));
  return {
    ...(options.inProcess ? local : built),
    configDir,
    env,
    built,
    dispose: () => rm(configDir, { recursive: true, force: true }),
  };
}

// ─── The CLI in process against a fake API, a fresh one per test ───

export interface FakeApiCli {
  /** The fake daemon: emptied before each test, verified after it (no request left unanswered). */
  api: FakeApi;
  /** The config directory, empty at the start of each test; the data directory is `data` in it. */
  dir: string;
  /** `panelctl ARGS…` in process against `api`, with these directories and the fixture's variables. */
  cli(args: string[], options?: InProcessOptions): Promise<CliResult>;
}

/**
 * The fixture of the run-*.test.ts files (gh's runF with httpmock): registers the hooks that
 * give each test an empty config directory and a fake API without stubs, and fail a test that
 * sent a request no stub answered. `env` is added to every run (e.g. a token).
 * @example
 * const { api, cli } = useFakeApi({ PANELCTL_TOKEN: 'jwt' });
 * it('lists keys', async () => {
 *   api.on('GET', '/auth/api-keys', { data: [] });
 *   expect((await cli(['keys', 'list'])).code).toBe(0);
 * });
 */
export function useFakeApi(env: NodeJS.ProcessEnv = {}): FakeApiCli {
  const api = new FakeApi();
  const base = mkdtempSync(join(tmpdir(), 'panelctl-cfg-'));
  const dir = join(base, 'config');
  beforeEach(async () => {
    api.reset();
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { mode: 0o700 });
  });
  afterEach(() => api.verify());
  afterAll(() => rm(base, { recursive: true, force: true }));
  return {
    api,
    dir,
    cli: (args, options = {}) => runInProcess(args, { api, ...options, env: { PANELCTL_CONFIG_DIR: dir, PANEL_DATA_DIR: join(dir, 'data'), ...env, ...options.env } }),
  };
}

// ─── TOTP (RFC 6238: SHA-1, 6 digits, 30 s), independent of the daemon's implementation ───

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

function base32Decode(text: string): Buffer {
  let bits = 0;
  let value = 0;
  const out: number[] = [];
  for (const char of text.replace(/=+$/, '').toUpperCase()) {
    value = (value << 5) | BASE32.indexOf(char);
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

export function totp(secret: string, step: number): string {
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', base32Decode(secret)).update(message).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = ((mac[offset] & 0x7f) << 24) | (mac[offset + 1] << 16) | (mac[offset + 2] << 8) | mac[offset + 3];
  return String(binary % 1_000_000).padStart(6, '0');
}

export function currentStep(): number {
  return Math.floor(Date.now() / 30_000);
}

/** Waits out the end of a time step, so a short sequence of codes sees no step change. */
export async function awayFromStepEdge(marginSeconds = 8): Promise<void> {
  const into = (Date.now() / 1000) % 30;
  if (into > 30 - marginSeconds) await new Promise((resolve) => setTimeout(resolve, (30 - into) * 1000 + 200));
}

// ─── A pseudo-terminal via script(1), for prompts, colours and spinners ───

export const HAS_SCRIPT = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;

export interface TtyRun {
  /** Resolves once the output (ANSI included) matches. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<string>;
  write(text: string): void;
  done: Promise<{ code: number; output: string }>;
}

/** Runs the built CLI on a pseudo-terminal (stdin, stdout and stderr are the TTY). */
export function runOnTty(args: string[], env: NodeJS.ProcessEnv, columns = 120): TtyRun {
  const quoted = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  // Its own process group, so ending it ends the shell and the CLI that script(1) started.
  const child = track(
    spawn('script', ['-qfec', `stty cols ${columns} rows 40; exec ${quoted}`, '/dev/null'], {
      env: { ...process.env, TERM: 'xterm-256color', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    }),
    { group: true },
  );
  let output = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (chunk) => {
    output += chunk;
    for (const waiter of waiters.splice(0)) waiter();
  });
  child.stderr.on('data', (chunk) => (output += chunk));
  const done = new Promise<{ code: number; output: string }>((resolve) => child.on('close', (code) => resolve({ code: code ?? -1, output })));
  return {
    done,
    write: (text) => child.stdin.write(text),
    waitFor(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern} in:\n${output}`)), timeoutMs);
        const check = () => {
          if (pattern.test(output)) {
            clearTimeout(timer);
            resolve(output);
          } else waiters.push(check);
        };
        check();
      });
    },
  };
}

/** Text without ANSI escapes and carriage returns. */
export function plain(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '');
}

// ─── A long-running CLI (e.g. --follow) whose output is read while it runs ───

export interface RunningCli {
  /** Resolves once stderr matches. */
  waitForStderr(pattern: RegExp, timeoutMs?: number): Promise<void>;
  stdout(): string;
  kill(signal?: NodeJS.Signals): void;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

export function spawnCli(args: string[], env: NodeJS.ProcessEnv): RunningCli {
  const child = track(spawn(process.execPath, [BIN, ...args], { env: { ...process.env, NO_COLOR: '1', ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  let stdout = '';
  let stderr = '';
  const waiters: Array<() => void> = [];
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
    for (const waiter of waiters.splice(0)) waiter();
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return {
    done,
    stdout: () => stdout,
    kill: (signal = 'SIGINT') => child.kill(signal),
    waitForStderr(pattern, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`timed out waiting for ${pattern} on stderr:\n${stderr}`)), timeoutMs);
        const check = () => {
          if (pattern.test(stderr)) {
            clearTimeout(timer);
            resolve();
          } else waiters.push(check);
        };
        check();
      });
    },
  };
}

// Runs the built CLI (bin/panelctl.js) as a child process, the way a user or script would; or
// the CLI's source in process against a fake API (runInProcess).
import { spawn } from 'node:child_process';
import { PassThrough, Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { track } from './processes.js';

export const BIN = fileURLToPath(new URL('../../bin/panelctl.js', import.meta.url));

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function runCli(
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; cwd?: string } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = track(
      spawn(process.execPath, [BIN, ...args], {
        env: { ...process.env, NO_COLOR: '1', ...options.env },
        cwd: options.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`panelctl ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, options.timeoutMs ?? 50_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

// ─── The CLI in process, against a fake API (test/helpers/fake-api.ts) ───

/** The variables commander reads for global options (from process.env, not the Context's io). */
const CLI_VARIABLES = ['PANELCTL_URL', 'PANELCTL_TOKEN', 'PANELCTL_CA', 'PANEL_DATA_DIR', 'PANELCTL_CONFIG_DIR', 'NO_COLOR'];

export interface InProcessOptions {
  /** The daemon the CLI talks to; without one, every request is refused. */
  api?: import('./fake-api.js').FakeApi;
  env?: NodeJS.ProcessEnv;
  input?: string;
  /** stdout and stderr are a terminal of this width (tables, colours unless NO_COLOR). */
  tty?: boolean;
}

/** A stream that collects what is written, as a terminal or a pipe would receive it. */
function sink(tty: boolean): PassThrough & { text(): string; isTTY: boolean; columns: number } {
  const stream = new PassThrough();
  let text = '';
  stream.on('data', (chunk) => (text += chunk));
  return Object.assign(stream, { text: () => text, isTTY: tty, columns: 100 });
}

/**
 * Runs `panelctl ARGS…` in this process, as gh tests run a command with fake IO and httpmock:
 * argv → options → requests to `api` → the lines printed and the exit code. The variables
 * commander reads are set for the run and restored (test files run their tests one at a time).
 * @example
 * const api = new FakeApi().on('GET', '/auth/api-keys', { data: [] });
 * const { code, stdout } = await runInProcess(['--json', 'keys', 'list'], { api, env: { PANELCTL_TOKEN: 't' } });
 */
export async function runInProcess(args: string[], options: InProcessOptions = {}): Promise<CliResult> {
  const { run } = await import('../../src/cli/main.js');
  const env: NodeJS.ProcessEnv = { PANELCTL_URL: 'https://127.0.0.1:3443', ...(options.tty ? {} : { NO_COLOR: '1' }), ...options.env };
  const saved = CLI_VARIABLES.map((name) => [name, process.env[name]] as const);
  for (const name of CLI_VARIABLES) delete process.env[name];
  for (const name of CLI_VARIABLES) if (env[name] !== undefined) process.env[name] = env[name];
  const stdout = sink(Boolean(options.tty));
  const stderr = sink(Boolean(options.tty));
  const stdin = Object.assign(Readable.from(options.input === undefined ? [] : [options.input]), { isTTY: false });
  try {
    const code = await run(['node', 'panelctl', ...args], { io: { stdout, stderr, stdin, env }, transport: options.api });
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

// Runs the built CLI (bin/panelctl.js) as a child process, the way a user or script would.
import { spawn } from 'node:child_process';
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

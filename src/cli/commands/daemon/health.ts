// Waiting for a starting daemon: its daemon.json names the URL, /health says it answers.
import { readFile } from 'node:fs/promises';
import type { DataLayout } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';
import type { DaemonState } from '../../../daemon/state-file.js';

async function lastLogLine(file: string): Promise<string> {
  try {
    const lines = (await readFile(file, 'utf8')).trim().split('\n');
    const last = lines.at(-1) ?? '';
    try {
      const parsed = JSON.parse(last) as { msg?: string };
      return parsed.msg ?? last;
    } catch {
      return last.replace(/^panelctl: /, ''); // the child's own error line, as the CLI wrote it
    }
  } catch {
    return '';
  }
}

export async function probeHealth(ctx: Context, state: DaemonState, caFile: string): Promise<boolean> {
  const client = ctx.newClient({ baseUrl: state.url, caFile, timeoutMs: 2000 });
  try {
    const envelope = await client.call<{ status: string }>('GET', '/health');
    return envelope.data.status === 'ok';
  } catch {
    return false;
  } finally {
    await client.close();
  }
}

export async function waitForHealth(
  ctx: Context,
  paths: DataLayout,
  exited: () => number | null,
  timeoutMs: number,
): Promise<DaemonState> {
  const deadline = Date.now() + timeoutMs;
  const spinner = (ctx.io.stderr as NodeJS.WriteStream).isTTY && !ctx.json;
  const frames = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
  let frame = 0;
  try {
    while (Date.now() < deadline) {
      if (exited() !== null) {
        throw new CliError(`the daemon exited while starting: ${await lastLogLine(paths.logFile)} (see ${paths.logFile})`, EXIT.ERROR);
      }
      if (spinner) ctx.io.stderr.write(`\r${frames[frame++ % frames.length]} starting the daemon…`);
      try {
        const state = JSON.parse(await readFile(paths.stateFile, 'utf8')) as DaemonState;
        if (await probeHealth(ctx, state, paths.cert)) return state;
      } catch {
        // not written yet
      }
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    throw new CliError(`the daemon did not answer within ${timeoutMs / 1000} s (see ${paths.logFile})`, EXIT.ERROR);
  } finally {
    if (spinner) ctx.io.stderr.write('\r\x1b[K');
  }
}

// `panelctl daemon stop`: SIGTERM to the daemon of the data directory, then wait for it to exit.
import { Command } from 'commander';
import { layout } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';

export function daemonStopCommand(ctx: Context): Command {
  return new Command('stop')
    .description('stop the daemon of the data directory (SIGTERM, then wait)')
    .option('--timeout <seconds>', 'how long to wait for a clean exit', '30')
    .action(async (options: { timeout: string }) => daemonStopRun(ctx, Number(options.timeout) || 30));
}

export async function daemonStopRun(ctx: Context, timeoutSeconds: number): Promise<void> {
  const { readPid, isAlive, isDaemon } = await import('../../../daemon/lock.js');
  const paths = layout(ctx.dataDir());
  const pid = await readPid(paths.pidFile);
  if (!pid || !isDaemon(pid)) {
    if (ctx.json) ctx.printJson({ stopped: false, running: false });
    else ctx.err(`the daemon is not running (${paths.root})`);
    return;
  }
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + timeoutSeconds * 1000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new CliError(`the daemon (pid ${pid}) did not stop within ${timeoutSeconds} s`, EXIT.ERROR);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (ctx.json) ctx.printJson({ stopped: true, pid });
  else ctx.out(`panelctl daemon stopped (pid ${pid})`);
}

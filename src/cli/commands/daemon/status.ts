// `panelctl daemon status`: exit 0 with URL, pid and uptime when running; exit 1 when not.
import { Command } from 'commander';
import { layout } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import type { Context } from '../../context.js';
import { CliError } from '../../errors.js';
import { probeHealth } from './health.js';

export function formatUptime(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.floor(seconds % 60);
  return [d && `${d}d`, (d || h) && `${h}h`, (d || h || m) && `${m}m`, `${s}s`].filter(Boolean).join(' ');
}

export function daemonStatusCommand(ctx: Context): Command {
  return new Command('status').description('show whether the daemon runs, its URL, pid and uptime').action(async () => daemonStatusRun(ctx));
}

export async function daemonStatusRun(ctx: Context): Promise<void> {
  const { readPid, isDaemon } = await import('../../../daemon/lock.js');
  const { readState } = await import('../../../daemon/server.js');
  const paths = layout(ctx.dataDir());
  const pid = await readPid(paths.pidFile);
  const state = await readState(paths);
  if (!pid || !isDaemon(pid) || !state || state.pid !== pid) {
    throw new CliError(`the daemon is not running (${paths.root})`, EXIT.ERROR);
  }
  const healthy = await probeHealth(ctx, state, paths.cert);
  const uptime = Math.max(0, (Date.now() - Date.parse(state.started_at)) / 1000);
  if (ctx.json) {
    ctx.printJson({ running: true, healthy, url: state.url, pid, uptime_seconds: Math.floor(uptime), started_at: state.started_at });
  } else {
    ctx.out(`running: ${state.url} (pid ${pid}, up ${formatUptime(uptime)})${healthy ? '' : ' — but /health does not answer'}`);
  }
  if (!healthy) throw new CliError('the daemon process exists but its API does not answer', EXIT.ERROR);
}

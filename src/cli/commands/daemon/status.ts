// `panelctl daemon status`: exit 0 with what an operator checks first when the daemon runs:
// URL, pid, uptime, version, data directory, store, log file, whether private webhook targets
// are allowed and how many deliveries are pending; exit 1 when it does not run. The static facts
// come from daemon.json (written by the daemon at start); the live ones from GET /health, which
// adds them for an admin's credential (--token, PANELCTL_TOKEN, or the stored login for this
// daemon's URL). Without one they show as unknown (null with --json).
import { Command } from 'commander';
import { layout } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import { ApiClient } from '../../api-client.js';
import { sameUrl, type Context } from '../../context.js';
import { CliError } from '../../errors.js';
import type { DaemonState } from '../../../daemon/server.js';

export function formatUptime(seconds: number): string {
  const d = Math.floor(seconds / 86_400);
  const h = Math.floor((seconds % 86_400) / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = Math.floor(seconds % 60);
  return [d && `${d}d`, (d || h) && `${h}h`, (d || h || m) && `${m}m`, `${s}s`].filter(Boolean).join(' ');
}

/** What `daemon status --json` prints. */
export interface DaemonStatus {
  running: true;
  healthy: boolean;
  url: string;
  pid: number;
  uptime_seconds: number;
  started_at: string;
  version: string | null;
  data_dir: string;
  store: DaemonState['store'] | null;
  log_file: string | null;
  private_webhooks: { allowed: boolean | null; flag: boolean | null; setting: boolean | null };
  pending_deliveries: number | null;
}

interface HealthAnswer {
  status: string;
  version: string;
  detail?: { pending_deliveries: number; private_webhooks: { allowed: boolean; flag: boolean; setting: boolean } };
}

export function daemonStatusCommand(ctx: Context): Command {
  return new Command('status')
    .description('show whether the daemon runs: URL, pid, uptime, version, data directory, store, log file, private webhooks, pending deliveries')
    .action(async () => daemonStatusRun(ctx));
}

/** An explicit token, else the stored login's when it was made against this daemon's URL. */
function tokenFor(ctx: Context, url: string): string | undefined {
  const explicit = ctx.globals.token ?? ctx.env.PANELCTL_TOKEN;
  if (explicit) return explicit;
  const stored = ctx.storedLogin();
  return stored && sameUrl(stored.url, url) ? stored.token : undefined;
}

async function askHealth(ctx: Context, state: DaemonState, caFile: string): Promise<HealthAnswer | null> {
  const client = new ApiClient({ baseUrl: state.url, caFile, token: tokenFor(ctx, state.url), timeoutMs: 2000 });
  try {
    const { data } = await client.call<HealthAnswer>('GET', '/health');
    return data.status === 'ok' ? data : null;
  } catch {
    return null;
  } finally {
    await client.close();
  }
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
  const health = await askHealth(ctx, state, paths.cert);
  const uptime = Math.max(0, (Date.now() - Date.parse(state.started_at)) / 1000);
  const detail = health?.detail;
  const status: DaemonStatus = {
    running: true,
    healthy: health !== null,
    url: state.url,
    pid,
    uptime_seconds: Math.floor(uptime),
    started_at: state.started_at,
    version: health?.version ?? state.version ?? null,
    data_dir: state.data_dir ?? paths.root,
    store: state.store ?? null,
    log_file: state.log_file ?? null,
    private_webhooks: {
      allowed: detail?.private_webhooks.allowed ?? (state.allow_private_webhooks ? true : null),
      flag: detail?.private_webhooks.flag ?? state.allow_private_webhooks ?? null,
      setting: detail?.private_webhooks.setting ?? null,
    },
    pending_deliveries: detail?.pending_deliveries ?? null,
  };
  if (ctx.json) ctx.printJson(status);
  else ctx.out(formatStatus(status));
  if (!status.healthy) throw new CliError('the daemon process exists but its API does not answer', EXIT.ERROR);
}

const ADMIN_ONLY = 'unknown: log in as an admin (or pass --token) to see';

/** The human view: one fact a line, labels aligned. */
export function formatStatus(status: DaemonStatus): string {
  const store = !status.store ? 'unknown' : status.store.kind === 'json' ? `JSON file ${status.store.location}` : `PostgreSQL ${status.store.location}`;
  const { allowed, flag, setting } = status.private_webhooks;
  let privateWebhooks: string;
  if (flag) privateWebhooks = 'allowed (--allow-private-webhooks)';
  else if (setting === null) privateWebhooks = `refused unless the setting allows them (${ADMIN_ONLY})`;
  else privateWebhooks = allowed ? 'allowed (setting webhook_allow_private_networks)' : 'refused';
  const rows: Array<[string, string]> = [
    ['url', status.url],
    ['pid', `${status.pid} (up ${formatUptime(status.uptime_seconds)})`],
    ['version', status.version ?? 'unknown'],
    ['data dir', status.data_dir],
    ['store', store],
    ['log', status.log_file ?? 'stdout (started with --foreground)'],
    ['private webhooks', privateWebhooks],
    ['pending deliveries', status.pending_deliveries === null ? ADMIN_ONLY : String(status.pending_deliveries)],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const head = `running: ${status.url} (pid ${status.pid}, up ${formatUptime(status.uptime_seconds)})${status.healthy ? '' : ' — but /health does not answer'}`;
  return [head, ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`)].join('\n');
}

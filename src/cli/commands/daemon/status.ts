// `panelctl daemon status`: exit 0 with what an operator checks first when the daemon runs:
// URL, pid, uptime, version, data directory, store, log file, metrics URL, readiness, whether
// private webhook targets are allowed, the queue (pending deliveries, the oldest one's age) and
// the last minute's attempts and failures; exit 1 when it does not run. The static facts come
// from daemon.json (written by the daemon at start); readiness from GET /health/ready (no
// credential needed); the rest from GET /health, which adds it for an admin's credential
// (--token, PANELCTL_TOKEN, or the stored login for this daemon's URL). Without one it shows as
// unknown (null with --json). Both requests go out together, each bounded by STATUS_TIMEOUT_MS,
// and this module loads none of the daemon's code, so the answer comes in well under a second.
import { Command } from 'commander';
import { layout } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import { ApiRequestError } from '../../api-client.js';
import { sameUrl, type Context } from '../../context.js';
import { CliError, UsageError } from '../../errors.js';
import type { DaemonState } from '../../../daemon/state-file.js';

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
  /** Seconds since the oldest pending delivery was published (null: none pending, or unknown). */
  oldest_pending_age_seconds: number | null;
  /** This daemon's webhook attempts in the last 60 s, and how many failed (null: unknown). */
  attempts_last_minute: number | null;
  failures_last_minute: number | null;
  /** GET /health/ready: `ready` true, or false with the failing checks; null when it did not answer. */
  readiness: { ready: boolean; checks: Record<string, string> } | null;
  metrics_url: string | null;
}

interface HealthAnswer {
  status: string;
  version: string;
  detail?: {
    pending_deliveries: number;
    oldest_pending_age_seconds?: number | null;
    attempts_last_minute?: number;
    failures_last_minute?: number;
    private_webhooks: { allowed: boolean; flag: boolean; setting: boolean };
  };
}

/** Each request of the status command gives up after this long (the daemon answers both in milliseconds). */
export const STATUS_TIMEOUT_MS = 2000;

export interface DaemonStatusOptions {
  /** `--wait-ready SECONDS`: first wait (at most that long) for the daemon to run and answer ready. */
  waitReady?: string;
}

export function daemonStatusCommand(ctx: Context): Command {
  return new Command('status')
    .description('show whether the daemon runs: URL, pid, uptime, version, store, log file, readiness, queue depth and age, attempts and failures in the last minute')
    .option('--wait-ready <seconds>', 'first wait up to SECONDS for the daemon to run and answer ready (GET /health/ready); exit 1 if it does not (the systemd unit uses it)')
    .action(async (options: DaemonStatusOptions) => daemonStatusRun(ctx, options));
}

/** How often --wait-ready looks again. */
const WAIT_READY_POLL_MS = 200;

/** Waits until the data directory's daemon runs and answers ready; throws (exit 1) with the last finding after `seconds`. */
async function waitReady(ctx: Context, seconds: number): Promise<void> {
  const { readPid, isDaemon } = await import('../../../daemon/lock.js');
  const { readState } = await import('../../../daemon/state-file.js');
  const paths = layout(ctx.dataDir());
  const deadline = Date.now() + seconds * 1000;
  let last = 'the daemon is not running';
  for (;;) {
    const pid = await readPid(paths.pidFile);
    const state = await readState(paths);
    if (pid && isDaemon(pid) && state && state.pid === pid) {
      const readiness = await askReady(ctx, state, paths.cert);
      if (readiness?.ready) return;
      last = readiness ? formatReadiness(readiness) : 'GET /health/ready does not answer';
    } else last = 'the daemon is not running';
    if (Date.now() >= deadline) throw new CliError(`the daemon did not become ready within ${seconds} s: ${last}`, EXIT.ERROR);
    await new Promise((resolve) => setTimeout(resolve, WAIT_READY_POLL_MS));
  }
}

/** An explicit token, else the stored login's when it was made against this daemon's URL. */
function tokenFor(ctx: Context, url: string): string | undefined {
  const explicit = ctx.globals.token ?? ctx.env.PANELCTL_TOKEN;
  if (explicit) return explicit;
  // An unreadable config file only costs the admin detail (status also runs in the systemd unit).
  let stored;
  try {
    stored = ctx.storedLogin();
  } catch {
    return undefined;
  }
  return stored && sameUrl(stored.url, url) ? stored.token : undefined;
}

async function askHealth(ctx: Context, state: DaemonState, caFile: string): Promise<HealthAnswer | null> {
  const client = ctx.newClient({ baseUrl: state.url, caFile, token: tokenFor(ctx, state.url), timeoutMs: STATUS_TIMEOUT_MS });
  try {
    const { data } = await client.call<HealthAnswer>('GET', '/health');
    return data.status === 'ok' ? data : null;
  } catch {
    return null;
  } finally {
    await client.close();
  }
}

/** GET /health/ready: ready, or not ready with its checks (a 503's `data`); null when there is no answer. */
async function askReady(ctx: Context, state: DaemonState, caFile: string): Promise<DaemonStatus['readiness']> {
  const client = ctx.newClient({ baseUrl: state.url, caFile, timeoutMs: STATUS_TIMEOUT_MS });
  try {
    const { data } = await client.call<{ status: string; checks: Record<string, string> }>('GET', '/health/ready');
    return { ready: data.status === 'ready', checks: data.checks };
  } catch (error) {
    const envelope = (error as { envelope?: { data?: { checks?: Record<string, string> } } }).envelope;
    return error instanceof ApiRequestError && envelope?.data?.checks ? { ready: false, checks: envelope.data.checks } : null;
  } finally {
    await client.close();
  }
}

export async function daemonStatusRun(ctx: Context, options: DaemonStatusOptions = {}): Promise<void> {
  if (options.waitReady !== undefined) {
    const seconds = Number(options.waitReady);
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 3600) throw new UsageError(`--wait-ready must be a number of seconds from 1 to 3600, got "${options.waitReady}"`);
    await waitReady(ctx, seconds);
  }
  const { readPid, isDaemon } = await import('../../../daemon/lock.js');
  const { readState } = await import('../../../daemon/state-file.js');
  const paths = layout(ctx.dataDir());
  const pid = await readPid(paths.pidFile);
  const state = await readState(paths);
  if (!pid || !isDaemon(pid) || !state || state.pid !== pid) {
    throw new CliError(`the daemon is not running (${paths.root})`, EXIT.ERROR);
  }
  const [health, readiness] = await Promise.all([askHealth(ctx, state, paths.cert), askReady(ctx, state, paths.cert)]);
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
    oldest_pending_age_seconds: detail?.oldest_pending_age_seconds ?? null,
    attempts_last_minute: detail?.attempts_last_minute ?? null,
    failures_last_minute: detail?.failures_last_minute ?? null,
    readiness,
    metrics_url: state.metrics_url ?? null,
  };
  if (ctx.json) ctx.printJson(status);
  else ctx.out(formatStatus(status));
  if (!status.healthy) throw new CliError('the daemon process exists but its API does not answer', EXIT.ERROR);
}

const ADMIN_ONLY = 'unknown: log in as an admin (or pass --token) to see';

function formatReadiness(readiness: DaemonStatus['readiness']): string {
  if (!readiness) return 'unknown (/health/ready did not answer)';
  if (readiness.ready) return 'ready';
  const failing = Object.entries(readiness.checks).filter(([, finding]) => finding !== 'ok');
  return `NOT READY: ${failing.map(([name, finding]) => `${name}: ${finding}`).join('; ')}`;
}

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
    ['readiness', formatReadiness(status.readiness)],
    ['pending deliveries', status.pending_deliveries === null ? ADMIN_ONLY : String(status.pending_deliveries)],
    ['oldest pending', status.pending_deliveries === null ? ADMIN_ONLY : status.oldest_pending_age_seconds === null ? 'none pending' : `${formatUptime(status.oldest_pending_age_seconds)} old`],
    [
      'last minute',
      status.attempts_last_minute === null
        ? ADMIN_ONLY
        : `${status.attempts_last_minute} attempt${status.attempts_last_minute === 1 ? '' : 's'}, ${status.failures_last_minute ?? 0} failed (this daemon)`,
    ],
    ['metrics', status.metrics_url ?? 'off (daemon start --metrics-port P)'],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  const head = `running: ${status.url} (pid ${status.pid}, up ${formatUptime(status.uptime_seconds)})${status.healthy ? '' : ' — but /health does not answer'}`;
  return [head, ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`)].join('\n');
}

// `panelctl daemon start`: initialises the data directory when needed, then either serves in
// the foreground or starts a detached daemon and waits until its API answers.
import { openSync, closeSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, Option } from 'commander';
import { DEFAULT_HOST, DEFAULT_LOG_KEEP, DEFAULT_LOG_MAX_BYTES, DEFAULT_PORT, layout } from '../../../shared/paths.js';
import { EXIT } from '../../../shared/errors.js';
import type { Context } from '../../context.js';
import { CliError, UsageError } from '../../errors.js';
import { databaseUrlOf, reportInit } from '../init.js';
import { waitForHealth } from './health.js';

export interface DaemonStartOptions {
  foreground?: boolean;
  host: string;
  port: string;
  tls: boolean;
  tlsCert?: string;
  tlsKey?: string;
  allowPrivateWebhooks?: boolean;
  databaseUrl?: string;
  logLevel: string;
  logFile?: string;
  logMaxSize: string;
  logKeep: string;
  metricsPort?: string;
  metricsHost?: string;
}

export function daemonStartCommand(ctx: Context): Command {
  return new Command('start')
    .description('start the daemon (detached unless --foreground)')
    .option('--foreground', 'run in this process and log to stdout')
    .option('--host <host>', 'address to listen on', DEFAULT_HOST)
    .option('--port <port>', 'port to listen on (0: any free port)', String(DEFAULT_PORT))
    .option('--no-tls', 'serve plain HTTP (a warning is logged when the host is not loopback)')
    .option('--tls-cert <file>', 'PEM certificate to serve instead of the generated one')
    .option('--tls-key <file>', 'PEM private key of --tls-cert')
    .option('--allow-private-webhooks', 'allow webhook deliveries to loopback and private networks')
    .option('--database-url <url>', 'keep the store in this PostgreSQL database, shared with other daemons (also PANELCTL_DATABASE_URL)')
    .addOption(new Option('--log-level <level>', 'log level').choices(['fatal', 'error', 'warn', 'info', 'debug']).default('info'))
    .option('--log-file <file>', 'write the log to FILE as JSON lines, rotated by size (the detached daemon: DATA_DIR/daemon.log)')
    .option('--log-max-size <MB>', 'rotate the log file when it reaches this size', String(DEFAULT_LOG_MAX_BYTES / 1024 / 1024))
    .option('--log-keep <n>', 'rotated log files to keep (daemon.log.1 to daemon.log.N)', String(DEFAULT_LOG_KEEP))
    .addOption(new Option('--metrics-port <port>', 'serve Prometheus metrics at http://HOST:PORT/metrics (plain HTTP; off unless given)').env('PANELCTL_METRICS_PORT'))
    .option('--metrics-host <host>', 'address of the metrics listener (default 127.0.0.1)')
    .action(async (options: DaemonStartOptions) => daemonStartRun(ctx, options));
}

function parsePort(value: string, flag = '--port'): number {
  const port = Number(value);
  if (value.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65_535) throw new UsageError(`${flag} must be an integer from 0 to 65535, got "${value}"`);
  return port;
}

function parseLogRotation(options: DaemonStartOptions): { maxBytes: number; keep: number } {
  const megabytes = Number(options.logMaxSize);
  if (!Number.isFinite(megabytes) || megabytes <= 0) throw new UsageError(`--log-max-size must be a positive number of megabytes, got "${options.logMaxSize}"`);
  const keep = Number(options.logKeep);
  if (!Number.isInteger(keep) || keep < 0 || keep > 1000) throw new UsageError(`--log-keep must be an integer from 0 to 1000, got "${options.logKeep}"`);
  return { maxBytes: Math.round(megabytes * 1024 * 1024), keep };
}

export async function daemonStartRun(ctx: Context, options: DaemonStartOptions): Promise<void> {
  const port = parsePort(options.port);
  const metricsPort = options.metricsPort === undefined ? undefined : parsePort(options.metricsPort, '--metrics-port');
  if (options.metricsHost !== undefined && metricsPort === undefined) throw new UsageError('--metrics-host needs --metrics-port');
  const rotation = parseLogRotation(options);
  if (Boolean(options.tlsCert) !== Boolean(options.tlsKey)) throw new UsageError('--tls-cert and --tls-key go together');
  const dir = ctx.dataDir();
  const paths = layout(dir);
  // Every daemon and store module this command uses comes through the daemon's entry: the built
  // CLI loads it from the daemon's bundle (src/daemon/entry.ts).
  const daemonCode = await import('../../../daemon/entry.js');
  const { AlreadyInitialisedError, isInitialised, initDataDir, prepareDataDir, readPid, isDaemon } = daemonCode;
  const databaseUrl = databaseUrlOf(ctx, options.databaseUrl);

  const pid = await readPid(paths.pidFile);
  if (pid && isDaemon(pid)) throw new CliError(`the daemon is already running (pid ${pid}) for ${dir}: panelctl daemon stop stops it`, EXIT.ERROR);
  try {
    // A new data directory for a database that holds a panel already (another daemon's): only
    // the directory and its TLS certificate are made; the users are the database's.
    if (!(await isInitialised(dir, databaseUrl))) reportInit(ctx, await initDataDir(dir, { databaseUrl }));
    else if (databaseUrl) await prepareDataDir(dir);
  } catch (error) {
    if (!(error instanceof AlreadyInitialisedError)) throw new CliError(`cannot start the daemon: ${(error as Error).message}`, EXIT.ERROR);
    await prepareDataDir(dir);
  }

  if (options.foreground) {
    // One listener for the process's whole life. A stop requested while starting (daemon.json
    // may already name this pid) is held, then carried out once the daemon is up. Swapping
    // listeners instead would lose a signal: libuv drops one caught for a listener that is
    // removed before the event loop delivers it.
    let early: NodeJS.Signals | null = null;
    let onSignal: ((signal: NodeJS.Signals) => void) | null = null;
    const listener = (signal: NodeJS.Signals) => (onSignal ? onSignal(signal) : void (early ??= signal));
    process.on('SIGTERM', listener);
    process.on('SIGINT', listener);
    const { runDaemon, signalHandler } = daemonCode;
    let daemon;
    try {
      daemon = await runDaemon({
        dataDir: dir,
        host: options.host,
        port,
        tls: options.tls,
        tlsCert: options.tlsCert,
        tlsKey: options.tlsKey,
        allowPrivateWebhooks: options.allowPrivateWebhooks,
        databaseUrl,
        logLevel: options.logLevel,
        logFile: options.logFile ? resolve(options.logFile) : undefined,
        logMaxBytes: rotation.maxBytes,
        logKeep: rotation.keep,
        metricsPort,
        metricsHost: options.metricsHost,
        // On a terminal, lines for people; piped (systemd's journal, a file), JSON lines for tools.
        pretty: !options.logFile && (ctx.io.stdout as NodeJS.WriteStream).isTTY ? { colorize: ctx.colorAllowed } : undefined,
      });
    } catch (error) {
      throw new CliError(`cannot start the daemon: ${(error as Error).message}`, EXIT.ERROR);
    }
    onSignal = signalHandler(daemon);
    if (early) onSignal(early);
    // Keep running: the signal handler exits the process.
    await new Promise(() => undefined);
    return;
  }

  const args = [fileURLToPath(new URL('../../../../bin/panelctl.js', import.meta.url)), 'daemon', 'start', '--foreground'];
  args.push('--data-dir', dir, '--host', options.host, '--port', String(port), '--log-level', options.logLevel);
  // The daemon writes and rotates daemon.log itself; its stdout and stderr (only a crash's last
  // words) are appended to the file too.
  args.push('--log-file', options.logFile ? resolve(options.logFile) : paths.logFile, '--log-max-size', options.logMaxSize, '--log-keep', String(rotation.keep));
  if (!options.tls) args.push('--no-tls');
  if (options.tlsCert) args.push('--tls-cert', options.tlsCert, '--tls-key', options.tlsKey!);
  if (options.allowPrivateWebhooks) args.push('--allow-private-webhooks');
  if (metricsPort !== undefined) args.push('--metrics-port', String(metricsPort));
  if (options.metricsHost) args.push('--metrics-host', options.metricsHost);
  const log = openSync(paths.logFile, 'a', 0o600);
  // The database URL may hold a password: it goes to the child in its environment, not its argv.
  const env = databaseUrl ? { ...ctx.env, PANELCTL_DATABASE_URL: databaseUrl } : ctx.env;
  if (databaseUrl) {
    // The detached daemon logs this to daemon.log; whoever started it should read it too.
    const { unusedJsonStoreWarning, describeDatabaseUrl } = daemonCode;
    const unused = await unusedJsonStoreWarning(paths.store, describeDatabaseUrl(databaseUrl));
    if (unused) ctx.err(`warning: ${unused}`);
  }
  // Imported here: a foreground daemon never starts a process.
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', log, log], env });
  closeSync(log);
  let exited: number | null = null;
  child.on('exit', (code) => {
    exited = code ?? 1;
  });
  child.unref();
  const state = await waitForHealth(ctx, paths, () => exited, 30_000);
  if (ctx.json) ctx.printJson({ url: state.url, pid: state.pid, ...(state.metrics_url ? { metrics_url: state.metrics_url } : {}) });
  else ctx.out(`panelctl daemon running at ${state.url} (pid ${state.pid}); log: ${paths.logFile}${state.metrics_url ? `; metrics: ${state.metrics_url}` : ''}`);
}

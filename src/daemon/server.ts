// Runs the daemon: takes the data directory's lock, opens the store, serves HTTPS (or HTTP
// with --no-tls), records its URL in daemon.json, and shuts down cleanly on SIGTERM/SIGINT:
// stop accepting, let in-flight requests and deliveries finish (or leave them pending in the
// outbox), flush the store, release the lock, exit 0.
import { readFile, rm, writeFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { layout } from '../shared/paths.js';
import { VERSION } from '../shared/version.js';
import { describeDatabaseUrl, openStore } from '../store/factory.js';
import type { Store } from '../store/store.js';
import { LOG_REDACT, buildApp } from './app.js';
import { newJwtSecret } from './init.js';
import { capConnectionsPerIp, closeInactiveSockets, fastifyLimitOptions, limitsFromEnv, nodeServerOptions, type ServerLimits } from './limits.js';
import { acquireLock } from './lock.js';
import { RotatingFile } from './log/rotating-file.js';
import { RequestLines, serializeRequest } from './request-logger.js';
import { readJwtSecret, readTlsPair, unusedJsonStoreWarning } from './startup-checks.js';
import type { MetricsListener } from './metrics/server.js';
import { readState, type DaemonState } from './state-file.js';

// daemon.json's reader lives apart so `daemon status` can read it without loading the daemon.
export { readState, type DaemonState } from './state-file.js';

/** `--metrics-host`'s default: the metrics are for a scraper on this machine unless said otherwise. */
export const DEFAULT_METRICS_HOST = '127.0.0.1';

export interface ServeOptions {
  dataDir: string;
  host: string;
  port: number;
  tls: boolean;
  tlsCert?: string;
  tlsKey?: string;
  allowPrivateWebhooks?: boolean;
  /** `--database-url`: a PostgreSQL store shared with other daemons; else the JSON store in the data directory. */
  databaseUrl?: string;
  logLevel?: string;
  /** Timeouts and the per-IP connection cap; default DEFAULT_LIMITS with the environment's overrides. */
  limits?: ServerLimits;
  /**
   * Where the log goes: this file as JSON lines, rotated by size (the detached daemon's
   * daemon.log), else stdout: one readable line per event when `pretty` (a terminal), else JSON lines.
   */
  logFile?: string;
  logMaxBytes?: number;
  logKeep?: number;
  pretty?: { colorize: boolean };
  /** `--metrics-port`: serve Prometheus metrics on this port (0: any free one); absent, no metrics are kept. */
  metricsPort?: number;
  /** `--metrics-host` (default 127.0.0.1). */
  metricsHost?: string;
}


export interface RunningDaemon {
  app: FastifyInstance;
  store: Store;
  state: DaemonState;
  shutdown(reason?: string): Promise<void>;
}

export function displayHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

/** What to do about an error while starting, in one sentence naming the flag, file or command. */
export function startupMessage(error: unknown, context: { host: string; port: number; cert?: string; key?: string }): string {
  const err = error as NodeJS.ErrnoException & { path?: string };
  if (err.code === 'EADDRINUSE') {
    return `port ${context.port} is in use on ${context.host}: another daemon? try --port N or panelctl daemon stop`;
  }
  if (err.code === 'EACCES' && err.syscall === 'listen') {
    return `not allowed to listen on port ${context.port}: ports below 1024 need privileges; try --port N (e.g. 3443)`;
  }
  if (err.code === 'EADDRNOTAVAIL') return `cannot listen on ${context.host}: no such address on this machine; check --host`;
  return err.message;
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

export async function runDaemon(options: ServeOptions): Promise<RunningDaemon> {
  const paths = layout(options.dataDir);
  const limits = options.limits ?? limitsFromEnv();
  // Said once the logger exists: a lock taken over from another program, a TLS pair made anew.
  const notices: string[] = [];
  const releaseLock = await acquireLock(paths.pidFile, paths.root, process.pid, (message) => notices.push(message));
  let store: Store | undefined;
  let openLog: LogDestination | undefined;
  try {
    // Every daemon of a database signs with the secret kept there. The JSON store keeps none:
    // its daemon reads the data directory's file, checked (and a damaged one named) before the
    // store is opened.
    const warn = (message: string) => notices.push(message);
    let jwtSecret: Uint8Array;
    if (options.databaseUrl) {
      store = await openStore({ dataDir: paths.root, databaseUrl: options.databaseUrl, warn });
      const unused = await unusedJsonStoreWarning(paths.store, describeDatabaseUrl(options.databaseUrl));
      if (unused) warn(unused);
      jwtSecret = new TextEncoder().encode((await store.sharedSecret('jwt', newJwtSecret))!);
    } else jwtSecret = await readJwtSecret(paths.jwtSecret);
    const certFile = options.tlsCert ?? paths.cert;
    const keyFile = options.tlsKey ?? paths.key;
    const https = options.tls ? await readTlsPair({ cert: certFile, key: keyFile, own: !options.tlsCert && !options.tlsKey }, warn) : null;
    store ??= await openStore({ dataDir: paths.root, warn });
    const destination = await logDestination(options);
    openLog = destination;
    const extraCa = process.env.NODE_EXTRA_CA_CERTS;
    const level = options.logLevel ?? 'info';
    // Loaded only with --metrics-port: prom-client stays out of a daemon that keeps no metrics.
    const metrics = options.metricsPort === undefined ? undefined : new (await import('./metrics/prometheus.js')).PrometheusMetrics();
    if (metrics) {
      const opened = store;
      metrics.readQueueFrom({ stats: () => opened.outbox.stats(), endpoints: () => opened.webhooks.countByState(), now: Date.now });
    }
    // We hold the data directory's lock, so a daemon.json left here is of a daemon that ended without stopping.
    const predecessor = (await readState(paths))?.dispatcher_owner;
    const app = await buildApp(
      {
        store,
        paths,
        predecessor,
        jwtSecret,
        allowPrivateWebhooks: options.allowPrivateWebhooks ?? false,
        metrics,
        webhookCa: extraCa ? [await readFile(extraCa, 'utf8').catch(() => '')].filter(Boolean) : undefined,
      },
      {
        logger: {
          level,
          redact: { paths: LOG_REDACT, censor: '[redacted]' },
          serializers: { req: serializeRequest },
          ...(destination ? { stream: destination } : {}),
        },
        logController: new RequestLines(level, { oneLine: Boolean(options.pretty) }),
        ...fastifyLimitOptions(limits),
        // `ca: []`: the server asks no client for a certificate, so it verifies none, and its
        // context needs no store of Node's root certificates, which Node would otherwise parse at
        // every start (the webhook sender's connections load them when a delivery first needs them).
        ...(https ? { https: { ...https, ca: [], ...nodeServerOptions(limits) } } : { http: nodeServerOptions(limits) }),
      } as object,
    ).catch((error: NodeJS.ErrnoException) => {
      // The TLS context is made with the server: a file that is not a usable PEM fails here.
      if (https && (error.code?.startsWith('ERR_OSSL') || /PEM|key values mismatch|certificate/i.test(error.message))) {
        throw new Error(`the TLS certificate ${certFile} or key ${keyFile} cannot be used (${error.message}): pass a PEM pair with --tls-cert and --tls-key`);
      }
      throw error;
    });
    for (const notice of notices) app.log.warn(notice);
    closeInactiveSockets(app.server, limits.socketTimeoutMs);
    capConnectionsPerIp(app.server, limits.maxConnectionsPerIp, (ip, open) =>
      app.log.warn({ ip, open }, `client ${ip} holds ${open} connections, the most one address may (PANELCTL_MAX_CONNECTIONS_PER_IP); further ones are closed`),
    );
    if (!options.tls && !isLoopback(options.host)) {
      app.log.warn(`serving plain HTTP on ${options.host}: credentials cross the network unencrypted; use TLS`);
    }
    try {
      await app.listen({ host: options.host, port: options.port });
    } catch (error) {
      await app.close().catch(() => undefined);
      throw new Error(startupMessage(error, { host: options.host, port: options.port }));
    }
    let metricsListener: MetricsListener | undefined;
    if (metrics) {
      const metricsHost = options.metricsHost ?? DEFAULT_METRICS_HOST;
      try {
        metricsListener = await (await import('./metrics/server.js')).serveMetrics(metrics, metricsHost, options.metricsPort!);
      } catch (error) {
        await app.close().catch(() => undefined);
        throw new Error(startupMessage(error, { host: metricsHost, port: options.metricsPort! }).replace('--port N', '--metrics-port N').replace('check --host', 'check --metrics-host'));
      }
    }
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : options.port;
    const state: DaemonState = {
      pid: process.pid,
      url: `${options.tls ? 'https' : 'http'}://${displayHost(options.host)}:${port}`,
      host: options.host,
      port,
      tls: options.tls,
      started_at: new Date().toISOString(),
      version: VERSION,
      data_dir: paths.root,
      store: store.info,
      log_file: options.logFile ?? null,
      allow_private_webhooks: options.allowPrivateWebhooks ?? false,
      metrics_url: metricsListener?.url ?? null,
      dispatcher_owner: app.dispatcher.owner,
    };
    await writeFile(paths.stateFile, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
    app.log.info({ url: state.url, pid: state.pid, dataDir: paths.root, store: store.info, metrics: state.metrics_url }, 'panelctl daemon listening');

    let closing: Promise<void> | null = null;
    const opened = store;
    const shutdown = (reason = 'shutdown') => {
      closing ??= (async () => {
        app.log.info({ reason }, 'panelctl daemon stopping');
        await metricsListener?.close();
        await app.close();
        await opened.flush().catch((error: unknown) => app.log.error({ err: error }, 'store flush failed'));
        await opened.close();
        await rm(paths.stateFile, { force: true });
        await releaseLock();
        destination?.end?.();
      })();
      return closing;
    };
    return { app, store, state, shutdown };
  } catch (error) {
    await store?.close().catch(() => undefined);
    await releaseLock();
    openLog?.end?.();
    throw error;
  }
}

type LogDestination = { write(chunk: string): unknown; end?(): void };

/** The log's destination (see ServeOptions.logFile); undefined: pino's own stdout destination. */
async function logDestination(options: ServeOptions): Promise<LogDestination | undefined> {
  if (options.logFile) return new RotatingFile(options.logFile, { maxBytes: options.logMaxBytes, keep: options.logKeep });
  if (!options.pretty) return undefined;
  const [{ default: pretty }, { prettyOptions }] = await Promise.all([import('pino-pretty'), import('../shared/log-format.js')]);
  return pretty({ ...prettyOptions(options.pretty.colorize), sync: true });
}

/**
 * What a stop signal does once the daemon is up: the first one shuts down cleanly and exits 0,
 * a second one forces the exit. The caller installs it (see `daemon start --foreground`).
 */
export function signalHandler(daemon: RunningDaemon, exit: (code: number) => void = process.exit): (signal: NodeJS.Signals) => void {
  let stopping = false;
  return (signal) => {
    if (stopping) {
      exit(1);
      return;
    }
    stopping = true;
    daemon
      .shutdown(signal)
      .then(() => exit(0))
      .catch((error) => {
        daemon.app.log.error({ err: error }, 'shutdown failed');
        exit(1);
      });
  };
}

// Runs the daemon: takes the data directory's lock, opens the store, serves HTTPS (or HTTP
// with --no-tls), records its URL in daemon.json, and shuts down cleanly on SIGTERM/SIGINT:
// stop accepting, let in-flight requests and deliveries finish (or leave them pending in the
// outbox), flush the store, release the lock, exit 0.
import { readFile, rm, writeFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { layout, type DataLayout } from '../shared/paths.js';
import { openStore } from '../store/factory.js';
import type { Store } from '../store/store.js';
import { LOG_REDACT, buildApp } from './app.js';
import { newJwtSecret } from './init.js';
import { acquireLock } from './lock.js';
import { RequestLines } from './request-logger.js';

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
  /** pino destination: stdout in the foreground (the detached parent redirects it to daemon.log). */
  logLevel?: string;
}

export interface DaemonState {
  pid: number;
  url: string;
  host: string;
  port: number;
  tls: boolean;
  started_at: string;
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

export async function readState(paths: DataLayout): Promise<DaemonState | null> {
  try {
    return JSON.parse(await readFile(paths.stateFile, 'utf8')) as DaemonState;
  } catch {
    return null;
  }
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

export async function runDaemon(options: ServeOptions): Promise<RunningDaemon> {
  const paths = layout(options.dataDir);
  const releaseLock = await acquireLock(paths.pidFile, paths.root);
  let store: Store | undefined;
  try {
    store = await openStore({ dataDir: paths.root, databaseUrl: options.databaseUrl });
    // Every daemon of a database signs with the secret kept there; the JSON store keeps none,
    // its daemon reads the data directory's file.
    const secret = (await store.sharedSecret('jwt', newJwtSecret)) ?? (await readFile(paths.jwtSecret, 'utf8')).trim();
    const jwtSecret = new TextEncoder().encode(secret);
    const https = options.tls
      ? {
          cert: await readFile(options.tlsCert ?? paths.cert),
          key: await readFile(options.tlsKey ?? paths.key),
        }
      : null;
    const extraCa = process.env.NODE_EXTRA_CA_CERTS;
    const app = await buildApp(
      {
        store,
        paths,
        jwtSecret,
        allowPrivateWebhooks: options.allowPrivateWebhooks ?? false,
        webhookCa: extraCa ? [await readFile(extraCa, 'utf8').catch(() => '')].filter(Boolean) : undefined,
      },
      {
        logger: { level: options.logLevel ?? 'info', redact: { paths: LOG_REDACT, censor: '[redacted]' } },
        logController: new RequestLines(options.logLevel ?? 'info'),
        ...(https ? { https } : {}),
      } as object,
    );
    if (!options.tls && !isLoopback(options.host)) {
      app.log.warn(`serving plain HTTP on ${options.host}: credentials cross the network unencrypted; use TLS`);
    }
    await app.listen({ host: options.host, port: options.port });
    const address = app.server.address();
    const port = typeof address === 'object' && address ? address.port : options.port;
    const state: DaemonState = {
      pid: process.pid,
      url: `${options.tls ? 'https' : 'http'}://${displayHost(options.host)}:${port}`,
      host: options.host,
      port,
      tls: options.tls,
      started_at: new Date().toISOString(),
    };
    await writeFile(paths.stateFile, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
    app.log.info({ url: state.url, pid: state.pid, dataDir: paths.root, store: store.info }, 'panelctl daemon listening');

    let closing: Promise<void> | null = null;
    const opened = store;
    const shutdown = (reason = 'shutdown') => {
      closing ??= (async () => {
        app.log.info({ reason }, 'panelctl daemon stopping');
        await app.close();
        await opened.flush().catch((error: unknown) => app.log.error({ err: error }, 'store flush failed'));
        await opened.close();
        await rm(paths.stateFile, { force: true });
        await releaseLock();
      })();
      return closing;
    };
    return { app, store, state, shutdown };
  } catch (error) {
    await store?.close().catch(() => undefined);
    await releaseLock();
    throw error;
  }
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

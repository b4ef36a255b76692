// daemon.json: what a running daemon tells the CLI about itself (URL, pid, store, metrics).
// Kept apart from server.ts so that reading it (`panelctl daemon status`) does not load the
// daemon's modules (fastify and everything it brings take most of a second to load).
import { readFile } from 'node:fs/promises';
import type { DataLayout } from '../shared/paths.js';
import type { StoreInfo } from '../store/store.js';

export interface DaemonState {
  pid: number;
  url: string;
  host: string;
  port: number;
  tls: boolean;
  started_at: string;
  version: string;
  data_dir: string;
  /** The store it serves from (kind and location, without credentials). */
  store: StoreInfo;
  /** The log file the daemon writes (JSON lines, rotated), or null when it logs to stdout. */
  log_file: string | null;
  /** `--allow-private-webhooks` (the admin setting webhook_allow_private_networks can allow them too). */
  allow_private_webhooks: boolean;
  /** Where the Prometheus metrics are served (`http://host:port/metrics`), or null without --metrics-port. */
  metrics_url?: string | null;
  /** Whose leases this daemon's claims take (a daemon restarted after a crash gives them up). */
  dispatcher_owner?: string;
}

export async function readState(paths: DataLayout): Promise<DaemonState | null> {
  try {
    return JSON.parse(await readFile(paths.stateFile, 'utf8')) as DaemonState;
  } catch {
    return null;
  }
}

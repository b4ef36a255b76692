// The data directory layout (CONTRACT section 1), shared by the daemon and the CLI.
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';

/** --data-dir, else PANEL_DATA_DIR, else $XDG_DATA_HOME/panelctl (~/.local/share/panelctl). */
export function resolveDataDir(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return resolve(flag);
  if (env.PANEL_DATA_DIR) return resolve(env.PANEL_DATA_DIR);
  const xdg = env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  return join(xdg, 'panelctl');
}

export interface DataLayout {
  root: string;
  store: string;
  jwtSecret: string;
  tlsDir: string;
  cert: string;
  key: string;
  pidFile: string;
  stateFile: string;
  logFile: string;
  deliveriesDir: string;
  outbox: string;
  mailDir: string;
}

export function layout(root: string): DataLayout {
  return {
    root,
    store: join(root, 'store.json'),
    jwtSecret: join(root, 'jwt-secret'),
    tlsDir: join(root, 'tls'),
    cert: join(root, 'tls', 'cert.pem'),
    key: join(root, 'tls', 'key.pem'),
    pidFile: join(root, 'daemon.pid'),
    stateFile: join(root, 'daemon.json'),
    logFile: join(root, 'daemon.log'),
    deliveriesDir: join(root, 'deliveries'),
    outbox: join(root, 'outbox.jsonl'),
    mailDir: join(root, 'mail'),
  };
}

export const DEFAULT_PORT = 3443;
export const DEFAULT_HOST = '127.0.0.1';
/** The daemon log's rotation (`--log-max-size`, `--log-keep`): here, so the CLI builds its options without loading daemon code. */
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
export const DEFAULT_LOG_KEEP = 5;

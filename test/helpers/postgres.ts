// A throwaway PostgreSQL cluster for tests: initdb into a temp dir, pg_ctl start on a free
// loopback port (socket in the temp dir), one fresh database per test file, pg_ctl stop and
// remove the dir at the end. Run once per vitest run by postgres-global-setup.ts.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** Name under which the global setup provides the admin URL (also set as this env var). */
export const PG_ADMIN_URL_ENV = 'PANELCTL_TEST_PG_ADMIN_URL';
/** Why PostgreSQL tests skip, when they do. */
export const PG_SKIP_REASON_ENV = 'PANELCTL_TEST_PG_SKIP';

/** The directory holding initdb and pg_ctl: PATH, /usr/local/bin, then /usr/lib/postgresql/<newest>/bin. */
export function findPgBin(): string | null {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), '/usr/local/bin'];
  const versions = existsSync('/usr/lib/postgresql')
    ? readdirSync('/usr/lib/postgresql')
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  dirs.push(...versions.map((v) => `/usr/lib/postgresql/${v}/bin`));
  for (const dir of dirs) {
    if (existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface Cluster {
  /** Superuser URL of the `postgres` database. */
  adminUrl: string;
  stop(): Promise<void>;
  /** Stops the server as a crash would (`pg_ctl stop -m immediate`), keeping its files. */
  halt(): Promise<void>;
  /** Starts it again after `halt`, on the same port. */
  start(): Promise<void>;
}

/** Starts a cluster in a temp dir. As root, initdb and postgres run as the `postgres` user. */
export async function startCluster(bin: string, options: { durable?: boolean } = {}): Promise<Cluster> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-pg-'));
  const asRoot = process.getuid?.() === 0;
  const exec = async (tool: string, args: string[]) => {
    const command = asRoot ? 'runuser' : join(bin, tool);
    const argv = asRoot ? ['-u', 'postgres', '--', join(bin, tool), ...args] : args;
    return run(command, argv, { timeout: 60_000 });
  };
  try {
    if (asRoot) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      await chown(dir, Number(stdout.trim()), Number(gid.trim()));
    }
    const data = join(dir, 'data');
    await exec('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C']);
    const port = await freePort();
    // Tests: fsync off (a test cluster need not survive a power cut; commits still wait for the
    // WAL write). Benchmarks: `durable`, the server's defaults, so a commit is an fsync.
    const serverOptions = [
      `-p ${port}`,
      '-c listen_addresses=127.0.0.1',
      `-c unix_socket_directories=${dir}`,
      ...(options.durable ? [] : ['-c fsync=off', '-c full_page_writes=off']),
      '-c max_connections=300',
      // BENCH_PG_OPTIONS: further server options when measuring (e.g. '-c shared_preload_libraries=pg_stat_statements').
      ...(process.env.BENCH_PG_OPTIONS ? [process.env.BENCH_PG_OPTIONS] : []),
    ].join(' ');
    const start = () => exec('pg_ctl', ['start', '-w', '-t', '60', '-D', data, '-l', join(dir, 'postgres.log'), '-o', serverOptions]);
    await start();
    let stopped = false;
    return {
      adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres`,
      async halt() {
        await exec('pg_ctl', ['stop', '-m', 'immediate', '-w', '-D', data]);
      },
      async start() {
        await start();
      },
      async stop() {
        if (stopped) return;
        stopped = true;
        await exec('pg_ctl', ['stop', '-m', 'fast', '-w', '-D', data]).catch(() => undefined);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The same database through the server's Unix socket instead of TCP (a daemon on the database's
 * own host connects this way): `postgres:///DB?host=SOCKET_DIR&port=PORT&user=USER` (a URL with
 * credentials must name a host, so the user goes as a parameter too).
 */
export async function socketUrlOf(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ unix_socket_directories: string }>('SHOW unix_socket_directories');
    const dir = rows[0].unix_socket_directories.split(',')[0].trim();
    const parsed = new URL(url);
    const socket = new URL(`postgres://${parsed.pathname}`);
    socket.searchParams.set('host', dir);
    socket.searchParams.set('port', parsed.port || '5432');
    if (parsed.username) socket.searchParams.set('user', decodeURIComponent(parsed.username));
    if (parsed.password) socket.searchParams.set('password', decodeURIComponent(parsed.password));
    return socket.toString();
  } finally {
    await client.end();
  }
}

let databases = 0;

/**
 * Creates a database on the cluster and answers its URL: empty, or with `template` a copy of
 * that database (e.g. the run's migrated one, see test/helpers/templates.ts), which no
 * connection may hold open meanwhile.
 */
export async function createDatabase(adminUrl: string, prefix = 'panelctl_test', template?: string | null): Promise<string> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${++databases}`.toLowerCase();
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

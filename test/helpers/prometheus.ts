// A real Prometheus server for tests (Debian's `prometheus` package): scraping given targets
// every second, loopback only, its database in a temporary directory, queried through its HTTP
// API. Tests that need it skip with a message when it is not installed (.ci/run installs it).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import { vi } from 'vitest';
import { track } from './processes.js';

/** Why Prometheus cannot be used here, or null when `prometheus` and `promtool` are on the PATH. */
export function prometheusMissing(): string | null {
  for (const tool of ['prometheus', 'promtool']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).error) return `${tool} is not installed (apt-get install prometheus)`;
  }
  return null;
}

/** A port nothing listens on now: bound, then closed. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface PrometheusServer {
  url: string;
  proc: ChildProcess;
  /** An instant query: the result vector, each with its labels and value. */
  query(promql: string): Promise<Array<{ metric: Record<string, string>; value: number }>>;
  /** The single value of a query answering one series, or null when it answers none. */
  scalar(promql: string): Promise<number | null>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Starts Prometheus scraping `targets` (host:port, path /metrics) every second.
 * @example
 * const prom = await startPrometheus(['127.0.0.1:9464']);
 * await prom.scalar('up');
 */
export async function startPrometheus(targets: string[]): Promise<PrometheusServer> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 1s',
      '  evaluation_interval: 1s',
      'scrape_configs:',
      '  - job_name: panelctl',
      '    static_configs:',
      `      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = track(
    spawn(
      'prometheus',
      [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    ),
  );
  let output = '';
  proc.stdout!.on('data', (chunk) => (output += chunk));
  proc.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));

  const query = async (promql: string) => {
    const answer = await request(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
    const body = (await answer.body.json()) as { status: string; error?: string; data?: { result: Array<{ metric: Record<string, string>; value: [number, string] }> } };
    if (body.status !== 'success') throw new Error(`query ${promql} failed: ${body.error}`);
    return body.data!.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  };
  const server: PrometheusServer = {
    url,
    proc,
    query,
    async scalar(promql) {
      const result = await query(promql);
      if (result.length > 1) throw new Error(`query ${promql} answered ${result.length} series`);
      return result.length ? result[0].value : null;
    },
    output: () => output,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGTERM');
        await exited;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
  // Ready once its API answers (it reads its config and opens its database first).
  try {
    await vi.waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`prometheus exited with ${proc.exitCode}: ${output}`);
        const ready = await request(`${url}/-/ready`);
        await ready.body.text();
        if (ready.statusCode !== 200) throw new Error(`prometheus answered ${ready.statusCode}`);
      },
      { timeout: 30_000, interval: 100 },
    );
  } catch (error) {
    await server.stop();
    throw new Error(`prometheus did not become ready (${(error as Error).message}): ${output}`);
  }
  return server;
}

/** Runs `promtool check metrics` over an exposition: its exit code and what it printed. */
export function promtoolCheck(exposition: string): { code: number | null; output: string } {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: exposition, encoding: 'utf8' });
  return { code: run.status, output: `${run.stdout ?? ''}${run.stderr ?? ''}` };
}

/** The metrics URL a daemon wrote to its daemon.json (null without --metrics-port). */
export async function metricsUrlOf(dataDir: string): Promise<string | null> {
  const state = JSON.parse(await readFile(join(dataDir, 'daemon.json'), 'utf8')) as { metrics_url?: string | null };
  return state.metrics_url ?? null;
}

/** The value of one sample of the exposition, or undefined when absent. */
export function sample(exposition: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name)) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries([...(match[3] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(match[4]);
  }
  return undefined;
}

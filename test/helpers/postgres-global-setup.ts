// vitest globalSetup: one PostgreSQL cluster for the whole run, its admin URL provided to test
// files (inject('pgAdminUrl')), stopped at teardown. Skipped (with the reason provided) when no
// initdb is installed. Starting it costs a couple of seconds, so every run starts it.
// PANELCTL_TEST_PG_ADMIN_URL set beforehand uses that server instead of starting one.
import type { TestProject } from 'vitest/node';
import { findPgBin, PG_ADMIN_URL_ENV, PG_SKIP_REASON_ENV, startCluster, type Cluster } from './postgres.js';

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  const provide = (url: string | null, reason: string | null) => {
    project.provide('pgAdminUrl', url);
    project.provide('pgSkipReason', reason);
    if (url) process.env[PG_ADMIN_URL_ENV] = url;
    if (reason) process.env[PG_SKIP_REASON_ENV] = reason;
  };
  const given = process.env[PG_ADMIN_URL_ENV];
  if (given) {
    provide(given, null);
    return;
  }
  const bin = findPgBin();
  if (!bin) {
    provide(null, 'PostgreSQL is not installed (no initdb on PATH, in /usr/local/bin or /usr/lib/postgresql/*/bin)');
    return;
  }
  let cluster: Cluster;
  try {
    cluster = await startCluster(bin);
  } catch (error) {
    provide(null, `the test PostgreSQL cluster did not start: ${(error as Error).message.split('\n')[0]}`);
    return;
  }
  provide(cluster.adminUrl, null);
  return () => cluster.stop();
}

// The daemon's route table, read from the app itself (not a hand-kept list), so tests that
// must cover "every route" grow with the code.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp, type RouteSummary } from '../../src/daemon/app.js';
import { layout } from '../../src/shared/paths.js';
import { openStore } from '../../src/store/factory.js';

export async function listRoutes(): Promise<RouteSummary[]> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-routes-'));
  const store = await openStore({ dataDir: dir, create: true });
  const app = await buildApp({ store, paths: layout(dir), jwtSecret: new TextEncoder().encode('x'.repeat(32)) });
  try {
    await app.ready();
    return [...app.routeList];
  } finally {
    await app.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

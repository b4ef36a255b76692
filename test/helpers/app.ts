// The in-process app (fastify `app.inject`, no port, no TLS) on a real JSON store in a temporary
// directory, with users made straight in the store: the fixture of route tests that need no daemon.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/daemon/app.js';
import { layout } from '../../src/shared/paths.js';
import { openStore } from '../../src/store/factory.js';
import type { Store } from '../../src/store/store.js';
import type { Role } from '../../src/store/types.js';

export interface TestApp {
  dir: string;
  store: Store;
  app: FastifyInstance;
  /** A user of that role, with a JWT for it. */
  addUser(email: string, role: Role): Promise<{ id: number; token: string }>;
  close(): Promise<void>;
}

/**
 * @example
 * const t = await buildTestApp();
 * const admin = await t.addUser('admin@example.com', 'admin');
 * const res = await t.app.inject({ method: 'GET', url: '/api/v1/sites', headers: { authorization: `Bearer ${admin.token}` } });
 */
export async function buildTestApp(): Promise<TestApp> {
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-app-'));
  const store = await openStore({ dataDir: dir, create: true });
  const app = await buildApp({ store, paths: layout(dir), jwtSecret: new TextEncoder().encode('s'.repeat(64)) });
  return {
    dir,
    store,
    app,
    async addUser(email, role) {
      const now = new Date().toISOString();
      const user = await store.users.insert({
        email, name: email, role, password_hash: 'x', totp_secret: null, totp_pending_secret: null,
        two_factor_enabled: false, totp_last_step: null, created_at: now, updated_at: now,
      });
      return { id: user.id, token: await app.tokens.issue(user.id, role, 3600) };
    },
    async close() {
      await app.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

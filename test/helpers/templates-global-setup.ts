// vitest globalSetup (after postgres-global-setup.ts): what many tests would otherwise each make
// again, made once per run. An initialised data directory (`panelctl init` with the test admin's
// password), which test/helpers/daemon.ts copies for each daemon (with a JWT secret of its own);
// a migrated, empty database on the run's cluster, which createDatabase({ migrated: true })
// copies, and a copy of it holding the test admin (daemon.ts); and the receivers' certificate
// (receiver.ts). Making a TLS key, hashing the admin's password and running the migrations were
// most of the CPU a test daemon's set-up took.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newUserRecord } from '../../src/daemon/auth/password.js';
import { generateCertificate } from '../../src/daemon/tls.js';
import { PostgresStore } from '../../src/store/postgres/postgres-store.js';
import { quickPasswordHash } from './passwords.js';
import { runCli } from './cli.js';
import { createDatabase, PG_ADMIN_URL_ENV } from './postgres.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, TEMPLATES_ENV, type Templates } from './templates.js';

export default async function setup(): Promise<(() => Promise<void>) | void> {
  // vitest runs the global setup once per project and once more for the root: the first call
  // makes the templates for the whole run, the others would only repeat its work.
  if (process.env[TEMPLATES_ENV]) return;
  const dir = await mkdtemp(join(tmpdir(), 'panelctl-templates-'));
  const dataDir = join(dir, 'data');
  const init = await runCli(['init', '--data-dir', dataDir, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
  if (init.code !== 0) throw new Error(`the template data directory could not be made: ${init.stderr}`);
  // The admin's password hash at scrypt's N = 1024 instead of the daemon's 16,384 (verification
  // follows the stored parameters): every login of a test daemon verifies it, and none of them is
  // about the hash's cost. Tests of init itself make their own directories.
  const storeFile = join(dataDir, 'store.json');
  const store = JSON.parse(await readFile(storeFile, 'utf8')) as { users: Array<{ password_hash: string }> };
  store.users[0].password_hash = quickPasswordHash(ADMIN_PASSWORD);
  await writeFile(storeFile, JSON.stringify(store), { mode: 0o600 });
  let migratedDatabase: string | null = null;
  let databaseWithAdmin: string | null = null;
  const adminUrl = process.env[PG_ADMIN_URL_ENV];
  if (adminUrl) {
    const url = await createDatabase(adminUrl, 'panelctl_template');
    await (await PostgresStore.open(url)).close();
    migratedDatabase = new URL(url).pathname.slice(1);
    // The admin as init makes it (and as the data directory template holds it), without the
    // `panelctl init` process each test daemon's database took.
    const withAdmin = await createDatabase(adminUrl, 'panelctl_template_admin', migratedDatabase);
    const store = await PostgresStore.open(withAdmin);
    try {
      const record = await newUserRecord({ email: ADMIN_EMAIL, name: 'Administrator', role: 'admin', password: ADMIN_PASSWORD }, new Date().toISOString());
      await store.users.insert({ ...record, password_hash: quickPasswordHash(ADMIN_PASSWORD) });
    } finally {
      await store.close();
    }
    databaseWithAdmin = new URL(withAdmin).pathname.slice(1);
  }
  const receiver = await generateCertificate(2);
  const templates: Templates = { dataDir, migratedDatabase, databaseWithAdmin, receiver };
  process.env[TEMPLATES_ENV] = JSON.stringify(templates);
  return () => rm(dir, { recursive: true, force: true });
}

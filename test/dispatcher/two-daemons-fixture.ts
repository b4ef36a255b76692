// Two daemons on one PostgreSQL database (a copy of the run's migrated one), with a receiver
// they trust, for the two-daemon test files.
import { ADMIN_PASSWORD, createDatabaseWithAdmin, initDataDir, makeDataDir, startDaemon, type TestDaemon } from '../helpers/daemon.js';
import { pgAdminUrl } from '../helpers/postgres-db.js';
import { makeReceiverTls, startReceiver, type Receiver, type ReceiverTls } from '../helpers/receiver.js';

/**
 * Short leases, so a test sees a dead daemon's claims come back (the default is 60 s), but
 * longer than an attempt's 10 s time-out: a lease that can end while its attempt is still
 * running lets the other daemon make the delivery again, which "none twice" forbids.
 */
export const LEASE_MS = 12_000;

export interface TwoDaemons {
  tls: ReceiverTls;
  receiver: Receiver;
  one: TestDaemon;
  two: TestDaemon;
  /** The admin's token on each daemon. */
  tokens: [string, string];
  databaseUrl: string;
  /** Stops both daemons (removing their data directories) and the receiver. */
  dispose(): Promise<void>;
}

/** Starts both daemons (the second on a new data directory: it gets the database's users) with the request windows out of the way. */
export async function startTwoDaemons(prefix: string): Promise<TwoDaemons> {
  const tls = await makeReceiverTls();
  const receiver = await startReceiver(tls);
  const databaseUrl = await createDatabaseWithAdmin(pgAdminUrl().url!, prefix);
  const dirs = [await makeDataDir(), await makeDataDir()];
  await initDataDir(dirs[0], ADMIN_PASSWORD, databaseUrl);
  const env = { NODE_EXTRA_CA_CERTS: tls.caFile, PANELCTL_CLAIM_LEASE_MS: String(LEASE_MS) };
  const [one, two] = await Promise.all(dirs.map((dataDir) => startDaemon({ dataDir, databaseUrl, env, args: ['--allow-private-webhooks'] })));
  const tokens: [string, string] = [await one.login(), await two.login()];
  // Request windows are shared by the daemons too: raise the per-user limit out of the way.
  const settings = await one.request('PUT', '/admin/settings', { token: tokens[0], body: { rate_limit_user_per_minute: 1_000_000 } });
  if (settings.status !== 200) throw new Error(`settings: ${settings.status} ${settings.text}`);
  const dispose = async () => {
    await Promise.all([one.dispose(), two.dispose()]);
    await receiver.close();
    await tls.dispose();
  };
  return { tls, receiver, one, two, tokens, databaseUrl, dispose };
}

// Loaded into every test file (vitest `setupFiles`): children of a failed or timed-out test are
// ended right after it, and every child of the file once the file is done.
import { afterAll, afterEach, beforeEach } from 'vitest';
import { enterTest, killTracked, leaveTest } from './processes.js';

// The daemons and CLIs the tests start trust what each test gives them (the daemon's own
// certificate, a receivers' CA passed as NODE_EXTRA_CA_CERTS in their env), not a CA bundle the
// machine's environment names: nothing here talks to a public host, and a whole system bundle
// there would cost every daemon and CLI start its parsing.
delete process.env.NODE_EXTRA_CA_CERTS;

beforeEach((context) => enterTest(context.task.id));
afterEach(async (context) => {
  leaveTest(context.task.id);
  if (context.task.result?.state === 'fail') await killTracked({ test: context.task.id });
});
afterAll(async () => {
  await killTracked('all');
});

import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The test files that run again on PostgreSQL (their daemons, or the in-process app, on a fresh
 * database each): identity and the dispatcher. The sources tests run on the JSON store only:
 * what they rely on of a store (default marks, unique and foreign domains, concurrent inserts,
 * an event per change) is the store contract, which test/store/contract-postgres.test.ts runs on
 * PostgreSQL; the cross-customer domain race between two handles is in test/store/postgres.test.ts
 * and cached reads across daemons in test/sources/reads-across-daemons.test.ts.
 */
const ON_POSTGRES = ['test/identity/**/*.test.ts', 'test/dispatcher/**/*.test.ts'];

/**
 * Files about two daemons of one PostgreSQL database (each makes its own database, whatever the
 * project): they run once, in the postgres project, whose two workers would otherwise be done
 * long before the json project's four. The two-daemon rate test spends a minute waiting.
 */
const POSTGRES_ONLY = ['test/dispatcher/two-daemons-rate.test.ts', 'test/sources/reads-across-daemons.test.ts'];

/**
 * Files that spend a minute or so waiting (a rate over a minute, leases running out, crashes and
 * restarts), longest first. They start before the rest, so a run never ends waiting for one that
 * started last: vitest orders files by the durations of the last run, and on a fresh clone,
 * which has none, by size, where these small files would come late.
 */
const LONG_WAITS = ['two-daemons-rate', 'postgres-faults', 'reads-across-daemons', 'two-daemons', 'write-fence', 'crash-events', 'crash-loop'];

class LongWaitsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const index = LONG_WAITS.findIndex((name) => file.moduleId.endsWith(`/${name}.test.ts`));
      return index < 0 ? LONG_WAITS.length : index;
    };
    const sorted = await super.sort(files);
    return sorted.map((file, order) => ({ file, order })).sort((a, b) => rank(a.file) - rank(b.file) || a.order - b.order).map(({ file }) => file);
  }
}

// Tests drive the built daemon and CLI as child processes, so `npm test` builds first.
export default defineConfig({
  test: {
    exclude: ['test/bench/**', 'test/soak/**', 'node_modules/**'],
    // Generous bounds: each test waits for the thing itself (a request, a log line, a file), so
    // a busy machine only makes it slower; these catch a test that would wait forever.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most tests wait on daemons, receivers and timers rather than the CPU: six files at a time
    // keep a 2-core machine busy, four in forks (the JSON store) and two in threads (PostgreSQL,
    // see the projects); the timing tests wait for the thing itself, so a busy machine only makes
    // them slower (`npm run test:busy` checks that). `--maxWorkers` sets the forks.
    maxWorkers: 4,
    poolOptions: { threads: { maxThreads: 2, minThreads: 2 } },
    // One worker process runs many files, one after another (`isolate: false`): each file's
    // imports (fastify, the store, ink) are loaded once per worker instead of once per file,
    // which was a third of the suite's CPU. The files share no state that matters: every helper
    // makes its own directories, databases and ports, and ends its own processes. As many
    // workers from the start as at most: with fewer, vitest's pool ends a spare worker at the end
    // of the run in a way that reports "Terminating worker thread" (vitest#8564).
    isolate: false,
    minWorkers: 4,
    reporters: ['default'],
    sequence: { sequencer: LongWaitsFirst },
    // The JSON store refuses a write through its own methods inside a transaction (which would
    // otherwise wait for itself): a check that costs every request, so only tests turn it on.
    env: { PANELCTL_STORE_CHECKS: '1' },
    // Every child a test starts is ended with its test or file (setup.ts); the leak check fails the
    // run if one outlived the suite anyway. It comes first: teardowns run in reverse order, so it
    // checks after the PostgreSQL cluster (started with the run's mark) was stopped. The
    // templates (an initialised data directory, a migrated database, the receivers' certificate)
    // come after the cluster, and are made once for the run (test/helpers/templates.ts).
    setupFiles: ['test/helpers/setup.ts'],
    globalSetup: ['test/helpers/global-teardown.ts', 'test/helpers/postgres-global-setup.ts', 'test/helpers/templates-global-setup.ts'],
    // Two projects, one run: everything on the embedded JSON store, and the identity and
    // dispatcher tests with their daemons and apps on PostgreSQL (PANELCTL_TEST_STORE, see
    // test/helpers/daemon.ts and test/helpers/app.ts). The PostgreSQL project runs in worker
    // threads: vitest runs the projects of one pool one after the other (its workers recycled
    // in between, every import made again), and those of different pools side by side, so the
    // PostgreSQL files share the machine with the JSON ones from the start instead of queueing
    // behind the last of them.
    projects: [
      { extends: true, test: { name: 'json', include: ['test/**/*.test.ts', 'test/**/*.test.tsx'], exclude: ['test/bench/**', 'test/soak/**', 'node_modules/**', ...POSTGRES_ONLY] } },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: [...ON_POSTGRES, ...POSTGRES_ONLY],
          pool: 'threads',
          // The other two-daemon tests are PostgreSQL's own too; they run once, in the json project.
          exclude: ['test/bench/**', 'test/soak/**', 'node_modules/**', 'test/dispatcher/two-daemons.test.ts'],
          // Leases a little over an attempt's 10 s: a daemon restarted in a test makes what the
          // killed one held without waiting the default minute.
          env: { PANELCTL_STORE_CHECKS: '1', PANELCTL_TEST_STORE: 'postgres', PANELCTL_CLAIM_LEASE_MS: '12000' },
        },
      },
    ],
  },
});

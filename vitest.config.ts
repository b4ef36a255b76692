import { defineConfig } from 'vitest/config';

// Tests drive the built daemon and CLI as child processes, so `npm test` builds first.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    exclude: ['test/bench/**', 'test/soak/**', 'node_modules/**'],
    // Generous bounds: each test waits for the thing itself (a request, a log line, a file), so
    // a busy machine only makes it slower; these catch a test that would wait forever.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Most tests wait on daemons, receivers and timers rather than the CPU: three files at a
    // time keep a 2-core machine busy without starving the timing tests.
    maxWorkers: 3,
    minWorkers: 1,
    reporters: ['default'],
    // Every child a test starts is ended with its test or file (setup.ts); the leak check fails the
    // run if one outlived the suite anyway. It comes first: teardowns run in reverse order, so it
    // checks after the PostgreSQL cluster (started with the run's mark) was stopped.
    setupFiles: ['test/helpers/setup.ts'],
    globalSetup: ['test/helpers/global-teardown.ts', 'test/helpers/postgres-global-setup.ts'],
  },
});

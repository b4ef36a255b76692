import { defineConfig } from 'vitest/config';

// Tests drive the built daemon and CLI as child processes, so `npm test` builds first.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    exclude: ['test/bench/**', 'test/soak/**', 'node_modules/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Most tests wait on daemons, receivers and timers rather than the CPU: three files at a
    // time keep a 2-core machine busy without starving the timing tests.
    maxWorkers: 3,
    minWorkers: 1,
    reporters: ['default'],
    // One throwaway PostgreSQL cluster for the run (when the run may include PostgreSQL tests).
    globalSetup: ['test/helpers/postgres-global-setup.ts'],
  },
});

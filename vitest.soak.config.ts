import { defineConfig } from 'vitest/config';

// `npm run soak`: the long runs, not part of `npm test`: the 10-minute soak, the crash loop
// and the crash loop with events at their full 20 rounds, and the route fuzzer at 300 cases per
// route.
export default defineConfig({
  test: {
    include: ['test/soak/**/*.test.ts', 'test/reliability/crash-loop.test.ts', 'test/reliability/crash-events.test.ts', 'test/reliability/fuzz.test.ts'],
    env: { CRASH_ROUNDS: '20', CRASH_EVENT_ROUNDS: '20', FUZZ_RUNS: '300' },
    testTimeout: 900_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: false,
    setupFiles: ['test/helpers/setup.ts'],
    globalSetup: ['test/helpers/global-teardown.ts'],
  },
});

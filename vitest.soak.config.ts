import { defineConfig } from 'vitest/config';

// `npm run soak`: the long-running soak test, not part of `npm test`.
export default defineConfig({
  test: {
    include: ['test/soak/**/*.test.ts'],
    testTimeout: 900_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});

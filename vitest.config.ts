import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup/prefetch-control-planes.ts'],
    testTimeout: 90_000,
    hookTimeout: 90_000,
    // Twin tests start HTTP servers and timers; forks keep each file's twin in its own process.
    pool: 'forks',
    maxWorkers: 2,
  },
});

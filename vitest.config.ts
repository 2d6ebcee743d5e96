import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Each file isolates itself (schema, data dir, Redis prefix), so files run in parallel.
    fileParallelism: true,
    reporters: ['default', './test/support/summary-reporter.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
});

import { availableParallelism } from 'node:os';
import { defaultServerConditions } from 'vite';
import { defineConfig } from 'vitest/config';

/**
 * One specification, two stores: every test runs against the project's Elasticsearch; the engine's
 * specification, the store contract, the tree races and the function tests run against its
 * OpenSearch too (the same files, with `searchProduct` set to opensearch). What is Elasticsearch's
 * own (its client's module copies, its failover messages) or not about the store (the kit, the
 * infrastructure, the client package) runs once.
 */
export default defineConfig({
  // The client package from its source (packages/client/package.json's exports): tests never run a stale dist/.
  // The rest as vitest's own default: vite's server conditions without `module` (ESM builds that only bundlers can load).
  ssr: { resolve: { conditions: ['@es-lease-locks/source', ...defaultServerConditions.filter((condition) => condition !== 'module')] } },
  test: {
    // The default report, then the ten slowest files (where the suite's minutes go).
    reporters: ['default', './test/support/slowest-files.ts'],
    testTimeout: 60_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // Most files wait on a node, a child process or a timer, not on this CPU: one worker more than the
    // cores (vitest's default is one fewer, a single worker on 2 cores) took the suite from 968 s to 597 s here.
    maxWorkers: availableParallelism() + 1,
    minWorkers: 1,
    projects: [
      {
        extends: true,
        test: {
          name: 'elasticsearch',
          include: ['test/**/*.test.ts'],
          // The AWS emulator starts only when a test file asks for it (test/support/aws.ts); this stops it after the run.
          globalSetup: ['test/support/global-setup.ts', 'test/support/global-setup-aws.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'opensearch',
          include: [
            'test/engine/**/*.test.ts',
            'test/store/**/*.test.ts',
            'test/functions/**/*.test.ts',
            'test/examples/**/*.test.ts',
            'test/ops/cluster.test.ts',
            'test/ops/operator-operations.test.ts',
          ],
          // The wake-up notifier talks to an AWS emulator, never to the store.
          exclude: [
            'test/store/client-module-copies.test.ts',
            'test/store/memory-store.test.ts',
            'test/functions/wake-notifier.test.ts',
            // The simulation and the exhaustive exploration touch no store: once is enough.
            'test/engine/interleavings.test.ts',
            'test/engine/permits-interleavings.test.ts',
            'test/engine/queue-exhaustive.test.ts',
            'test/engine/work-exhaustive.test.ts',
            'test/engine/revoke-exhaustive.test.ts',
            'test/engine/incarnation-exhaustive.test.ts',
            'test/engine/permits-exhaustive.test.ts',
            // The README's handler with the client's testing entry: no store at all.
            'test/examples/invoicer.test.ts',
          ],
          globalSetup: ['test/support/global-setup-opensearch.ts'],
        },
      },
    ],
  },
});

/**
 * `@es-lease-locks/client/testing`: the lock service in memory for your unit tests (no cluster, no
 * functions): the engine the service runs, a clock you move, faults on demand, and an in-memory
 * Elasticsearch index for the fenced-write helpers. See the package's README, "Testing your handler".
 */
export { type MemoryDocument, MemorySearchIndex } from './memory-search-index.js';
export { TestClock } from './test-clock.js';
export { LOCKER_OPERATIONS, type LockerOperation, TestFaults } from './test-faults.js';
export { TestLocks, type TestLocksOptions, testLocks } from './test-locks.js';

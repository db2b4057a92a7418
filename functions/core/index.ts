export { LockEngine } from './engine.js';
export * from './errors.js';
export { compareFencingTokens } from './fencing.js';
export { ancestorsOf, describeTarget } from './granularity/index.js';
export { lockDocId, planKeys } from './keys.js';
export * from './model.js';
export { DEFAULT_SETTINGS, type LockSettings, resolveSettings, type SettingsOverrides } from './settings.js';
export type { LockStore, StoredLock, WriteOp, WriteOutcome } from './store.js';
export {
  acquireSchema,
  parseAcquireRequest,
  parseTarget,
  parseWith,
  releaseSchema,
  renewSchema,
  targetSchema,
  toAcquireRequest,
  toFieldIssues,
  toTarget,
} from './validation.js';

export * from './errors.js';
export * from './model.js';
export { LockEngine } from './engine.js';
export { DEFAULT_SETTINGS, resolveSettings, type LockSettings, type SettingsOverrides } from './settings.js';
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
export { planKeys, lockDocId } from './keys.js';
export { ancestorsOf, describeTarget } from './granularity/index.js';
export { compareFencingTokens } from './fencing.js';
export type { LockStore, StoredLock, WriteOp, WriteOutcome } from './store.js';

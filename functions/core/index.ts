export * from './errors.js';
export * from './model.js';
export { LockEngine } from './engine.js';
export { DEFAULT_SETTINGS, resolveSettings, type LockSettings, type SettingsOverrides } from './settings.js';
export { acquireSchema, renewSchema, releaseSchema, toFieldIssues, toAcquireRequest, parseWith } from './validation.js';
export { planKeys, lockDocId, ancestorsOf } from './keys.js';
export type { LockStore, StoredLock, WriteOp, WriteOutcome } from './store.js';

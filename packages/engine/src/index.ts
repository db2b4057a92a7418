export { LockEngine } from './engine.js';
export * from './errors.js';
export { compareFencingTokens } from './fencing.js';
export { parseWith, toFieldIssues } from './field-issues.js';
export { ancestorsOf, describeTarget, targetBody } from './granularity/index.js';
export { lockDocId, planKeys } from './keys.js';
export * from './model.js';
export {
  type AdminRequest,
  type InspectRequest,
  type ListRequest,
  type LockRequests,
  lockRequests,
  NAMESPACE_PATTERN,
  parseRequest,
  queryInput,
  type ReleaseRequest,
  type RenewRequest,
  type RequestKind,
  type SweepRequest,
  UNNAMED_OPERATOR,
} from './requests.js';
export { type AcquireInput, type AdminInput, LockService } from './service.js';
export {
  allSharedSettings,
  DEFAULT_SETTINGS,
  type LockSettings,
  resolveSettings,
  type SettingsOverrides,
  SHARED_SETTINGS,
  type SharedSettingName,
  type SharedSettings,
  sharedSettingsOf,
} from './settings.js';
export type { ListQuery, LockIndexFacts, LockStore, StoredLock, WriteOp, WriteOutcome } from './store.js';
export type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from './wake.js';

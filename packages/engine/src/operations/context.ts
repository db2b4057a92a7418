/** What every operation works with: the store and the engine's settings. */
import type { LockSettings } from '../settings.js';
import type { LockStore } from '../store.js';
import type { LoopContext } from '../write-loop.js';

export interface EngineContext {
  store: LockStore;
  settings: Readonly<LockSettings>;
  /** Wakes the waiters a write reserved, tells those it dropped (the engine sets it: operations/wake-waiters.ts). */
  tellWaiters?: LoopContext['tellWaiters'];
}

/** Giving a lease up, rolling one back or keeping one alive matters more than taking one: three times the budget. */
export const keepingBudget = (settings: Readonly<LockSettings>): number => 3 * settings.contentionBudgetMs;

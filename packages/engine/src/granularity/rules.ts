/**
 * What differs between the granularities, in one shape: how a request names the target, how it is
 * checked, which lock documents it takes in which modes, what is above and below it, and how a lease
 * token and the logs name it. Everything else in the engine is the same for all of them: a new
 * granularity is one module that gives these rules, and one line in the registry (index.ts).
 */

import type { z } from 'zod';
import type { TargetField, TargetFieldsBody } from '../../../client/src/wire.js';
import type { Granularity, HolderMode, RequestedMode } from '../model.js';
import type { EngineContext } from '../operations/context.js';
import type { LockSettings } from '../settings.js';
import type { StoredLock } from '../store.js';

export type { TargetField } from '../../../client/src/wire.js';

/** What every target has; each granularity's module adds the fields of its own (its `target`). */
export interface TargetBase {
  namespace: string;
  granularity: string;
}

/** The target fields of a raw request, as the schema has typed them. */
export type RawTargetFields = { [F in TargetField]?: TargetFieldsBody[F] | undefined };

export interface HeldTarget<T extends TargetBase> {
  target: T;
  mode: RequestedMode;
  ttlMs: number;
  leaseId: string;
  /** The planned documents, in plan order, each holding our lease. */
  locks: StoredLock[];
  /** Until when the acquire may wait (its `waitMs`). */
  deadline: number;
  /** The `guards` as the primary had them right after our last write (read in the same request), when that answer arrived. */
  guardsRead?: Map<string, StoredLock | null>;
}

/** A document above a target, by granularity and key. */
export interface Above {
  granularity: Granularity;
  key: string;
}

/** Where the locks below a key are: documents of these granularities, whose keys start with the prefix (any key when none). */
export interface BelowScope {
  granularities: readonly string[];
  keyPrefix?: string;
}

export type RefineContext = z.core.$RefinementCtx<unknown>;

export interface GranularityRules<T extends TargetBase> {
  readonly name: T['granularity'];
  /**
   * The letter that tags its lock documents' ids (`<namespace>|<tag>|<key>`, doc-id.ts): stored in
   * the lock index, so it never changes, and no two granularities (nor work and audit documents) share one.
   */
  readonly tag: string;
  /** The request field that names the target inside the namespace (none: the namespace alone names it); the other fields are refused. */
  readonly field?: TargetField;
  /** Checks the target fields of a raw request, reporting each problem with its field and rule. */
  check(input: RawTargetFields, ctx: RefineContext, limits: LockSettings['limits']): void;
  /** The target of a request that passed `check`, in its canonical form. */
  target(namespace: string, input: RawTargetFields): T;
  /** The lock documents the target takes, by key, and the mode each gets. */
  plan(target: T, mode: RequestedMode): Array<{ key: string; mode: HolderMode }>;
  /**
   * Documents outside the plan whose holders can block the target (the namespace's root for document
   * and tree locks, and a tree path's ancestors): read from the primary in the same request as the
   * plan's writes, shown by inspect, and watched by a waiter refused by one of them.
   */
  guards?(target: T): Above[];
  /**
   * Where the locks below one of its keys are, which a lock on that key searches for once it is marked
   * `lockedBelow` (scope.ts); `registered` is every granularity the engine knows. Undefined: nothing is below its keys.
   */
  below(key: string, registered: readonly string[]): BelowScope | undefined;
  /** Why a semaphore (`permits`) is refused on it; undefined when it may be one. */
  readonly refusesPermits?: string;
  /**
   * Runs once every planned key holds the lease, before the grant: checks what the plan does not
   * write (what is above it, and locks below it). Returns the planned documents as they then stand
   * (re-written when the grant needs a newer fencing token); throws LockHeldError on a conflict.
   */
  confirm?(context: EngineContext, held: HeldTarget<T>): Promise<StoredLock[]>;
  /** The target's fields as a request carries them. */
  toFields(target: T): RawTargetFields;
  /** What two requests must share to be the same target (document ids in any order). */
  identity(target: T): string;
  /** For messages. */
  describe(target: T): string;
  /** The `key` of log lines and metrics, from a request's fields (checked or not), kept short. */
  logKey(fields: RawTargetFields): string;
}

/**
 * What differs between the three granularities, in one shape: how a request names the target, how
 * it is checked, which lock documents it takes in which modes, and how a lease token and the logs
 * name it. Everything else in the engine is the same for all three.
 */
import type { z } from 'zod';
import type { Granularity, HolderMode, LockTarget, RequestedMode } from '../model.js';
import type { EngineContext } from '../operations/context.js';
import type { LockSettings } from '../settings.js';
import type { StoredLock } from '../store.js';

export type TargetOf<G extends Granularity> = Extract<LockTarget, { granularity: G }>;

/** The target fields of a raw request, as the schema has typed them. */
export interface RawTargetFields {
  ids?: string[] | undefined;
  path?: string | undefined;
}

export type TargetField = keyof RawTargetFields;

export interface HeldTarget<G extends Granularity> {
  target: TargetOf<G>;
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

export type RefineContext = z.core.$RefinementCtx<unknown>;

export interface GranularityRules<G extends Granularity> {
  readonly name: G;
  /** The request fields that name the target (the others are refused). */
  readonly fields: readonly TargetField[];
  /** Checks the target fields of a raw request, reporting each problem with its field and rule. */
  check(input: RawTargetFields, ctx: RefineContext, limits: LockSettings['limits']): void;
  /** The target of a request that passed `check`, in its canonical form. */
  target(namespace: string, input: RawTargetFields): TargetOf<G>;
  /** The lock documents the target takes, by key, and the mode each gets. */
  plan(target: TargetOf<G>, mode: RequestedMode): Array<{ key: string; mode: HolderMode }>;
  /**
   * Documents outside the plan whose holders can block the target (the namespace's root for document
   * and tree locks, and a tree path's ancestors): read from the primary in the same request as the
   * plan's writes, and shown by inspect.
   */
  guards?(target: TargetOf<G>): Above[];
  /**
   * Runs once every planned key holds the lease, before the grant: checks what the plan does not
   * write (what is above it, and locks below it). Returns the planned documents as they then stand
   * (re-written when the grant needs a newer fencing token); throws LockHeldError on a conflict.
   */
  confirm?(context: EngineContext, held: HeldTarget<G>): Promise<StoredLock[]>;
  /** The target's fields as a request carries them. */
  toFields(target: TargetOf<G>): RawTargetFields;
  /** What two requests must share to be the same target (document ids in any order). */
  identity(target: TargetOf<G>): string;
  /** For messages. */
  describe(target: TargetOf<G>): string;
  /** The `key` of log lines and metrics, from a request's fields (checked or not), kept short. */
  logKey(fields: RawTargetFields): string;
}

/**
 * What the fault runner's clients record, one entry per event, in the style of Jepsen/Knossos
 * histories: an `invoke` when a call starts, then `ok`, `fail` (it surely did not happen) or `info`
 * (unknown: a timeout, a lost answer; it may have happened). Times are the client's own clock.
 */
export type HolderMode = 'IS' | 'IX' | 'S' | 'X';

export interface HeldKey {
  /** A lock document's key, e.g. `d|o-1` or `t|/a/b`, as the runner names it. */
  key: string;
  mode: HolderMode;
}

export type Operation = 'acquire' | 'renew' | 'release';
export type EventType = 'invoke' | 'ok' | 'fail' | 'info';

export interface HistoryEvent {
  /** The client (a process in Jepsen's terms); one call at a time per client. */
  client: string;
  type: EventType;
  op: Operation;
  time: number;
  /** Which lease the call is about: set on every event of renew and release, and on an acquire's ok. */
  leaseId?: string;
  /** acquire: the keys it asked for (invoke) or got (ok). */
  keys?: HeldKey[];
  /** acquire ok, renew ok: the grant's fencing token and the lease's end. */
  fencingToken?: string;
  expiresAt?: number;
  /** release ok: the engine's outcome (`released`, `expired`, `not_held`, `partially_held`). */
  outcome?: string;
  /** renew/release made with a token whose secret the client does not have (a thief): must never succeed. */
  forged?: boolean;
  /** fail/info: the error's name. */
  error?: string;
}

export interface CheckerOptions {
  /** Clients' clocks may differ by this much: an overlap up to it is not a violation. */
  maxClockSkewMs: number;
}

export type ViolationKind = 'overlap' | 'lost-grant' | 'fencing-order' | 'non-holder-succeeded';

export interface Violation {
  kind: ViolationKind;
  message: string;
}

/**
 * What the fault runner's clients record, one entry per event, in the style of Jepsen/Knossos
 * histories: an `invoke` when a call starts, then `ok`, `fail` (it surely did not happen) or `info`
 * (unknown: a timeout, a lost answer; it may have happened). Times are the runner's clock: every
 * client runs in the runner's process, and a client whose clock the run skews (clock-skew) records
 * the real time, with its lease's end converted to it (see `expiresAt`).
 */
export type HolderMode = 'IS' | 'IX' | 'S' | 'X';

export interface HeldKey {
  /**
   * A lock's key as the runner names it: `d|k1` (a document id), `g|*` (global), `t|/d0/f1` (a tree
   * path). The mode is the one asked for on that key (S or X); for a tree path the checker derives
   * the intentions on its ancestors itself (`t|/d0` in IX for an X on `/d0/f1`), so a history needs
   * not list them (older histories that do list IX/IS ancestors are judged the same).
   */
  key: string;
  mode: HolderMode;
  /** A semaphore's holder (docs/permits.md): X to everyone else, sharing its key with the other permit holders while their counts fit in the limit. */
  permits?: { count: number; limit: number };
}

/** `revoke`: an operator's break-glass revoke of a target (its `keys`), taking its holders off it. */
export type Operation = 'acquire' | 'renew' | 'release' | 'revoke';
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
  /**
   * acquire ok, renew ok: when the lease ends, on the runner's clock: the holder stops at its own
   * clock's `expiresAt`, so a client whose clock runs `clockOffsetMs` ahead stops that much earlier.
   */
  expiresAt?: number;
  /** acquire ok: how far this client's clock (the engine's `now`) is off the runner's, when the run skews clocks. */
  clockOffsetMs?: number;
  /** release ok: the engine's outcome (`released`, `expired`, `not_held`, `partially_held`). */
  outcome?: string;
  /** renew/release made with a token whose secret the client does not have (a thief): must never succeed. */
  forged?: boolean;
  /** fail/info: the error's name. */
  error?: string;
  /**
   * Work that runs once (faults/work-once.ts): the message's idempotency key, on every event of an
   * acquire with it and on the invoke of its lease's release. One key names one piece of work.
   */
  work?: string;
  /**
   * acquire ok that answered a recorded result instead of a grant (nothing held): the lease that
   * recorded it (the workload's result names it), and the record's times on that lease's clock.
   */
  answered?: { lease: string; recordedAt: number; expiresAt: number };
  /** release invoke: the outcome the holder asks to record, and how long the record is to stand. */
  record?: { status: 'completed' | 'failed'; ttlMs: number };
  /** release ok: the outcome the engine says it recorded. */
  recorded?: 'completed' | 'failed';
  /**
   * release ok or info: the fencing token of the record's own write on the work document, as the
   * store answered it (the client's store shows it). Every document of the namespace lives on one
   * shard, so it orders the record against a revoke's write on the lock exactly.
   */
  recordToken?: string;
  /** revoke ok: the leases it took off the target. With `fencingToken`: its write's token on the target's key (none when nothing was held). */
  revoked?: string[];
}

export interface CheckerOptions {
  /** Clients' clocks may differ by this much: an overlap up to it is not a violation. */
  maxClockSkewMs: number;
}

export type ViolationKind =
  | 'overlap'
  | 'lost-grant'
  | 'fencing-order'
  | 'non-holder-succeeded'
  | 'over-limit'
  // Work that runs once and revoke (faults/work-checker.ts).
  | 'completed-twice'
  | 'record-not-answered'
  | 'revoked-recorded'
  | 'revoked-confirmed'
  | 'refused-record-applied'
  | 'late-work-grant';

/** One side of a violation: which hold, on which key, in which mode, with which token. */
export interface ViolatingHold {
  client: string;
  leaseId: string;
  key: string;
  mode: HolderMode;
  fencingToken: string;
  grantedAt: number;
  endsAt: number;
}

export interface Violation {
  kind: ViolationKind;
  message: string;
  /** The lock-space node where the two holds met (`t|/d0` for `/d0` against `/d0/f1`); absent for non-holder-succeeded. */
  at?: string;
  /** The earlier and the later grant. */
  holds?: [ViolatingHold, ViolatingHold];
}

/** A grant as the checker rebuilds it from a history: who held which keys, under which token, and when. */
export interface Hold {
  client: string;
  leaseId: string;
  keys: HeldKey[];
  fencingToken: string;
  /** When its acquire was called (its grant's write came after). */
  invokedAt: number;
  grantedAt: number;
  /** The earlier of its release's invoke, its lease's end (after renewals) and the invoke of a revoke that took it. */
  endsAt: number;
  /** Its client's clock offset, when the run skews clocks (times the engine answers are on that clock). */
  clockOffsetMs?: number;
}

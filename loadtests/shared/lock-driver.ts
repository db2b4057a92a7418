/**
 * What one iteration of the workload (iteration.ts) needs from the side that runs it, and nothing
 * more. Two sides implement it:
 *
 *   k6      (k6/lock-api.ts, k6/k6-driver.ts): the lock service's HTTP API, k6's clock, sleep and
 *           custom metrics, hold lines on k6's console;
 *   engine  (runner/engine/): a LockEngine called in the Node process, its errors read as the HTTP
 *           answer would be, a tally of the probe instead of metrics.
 *
 * Plain TypeScript with type imports only: k6 and Node load it alike.
 */
import type { AcquireBody } from '../../packages/client/src/wire/requests.ts';
import type { HoldRecord, OpKind } from './workload.ts';

/** The body of an acquire request (the service's POST /acquire), with what the kit always sends. */
export type AcquireRequest = AcquireBody & Required<Pick<AcquireBody, 'mode' | 'ttlMs' | 'requestId'>>;

/** A grant, as the iteration keeps it. */
export interface Grant {
  leaseToken: string;
  /** A decimal string (compare as integers). */
  fencingToken: string;
  /** Epoch ms. */
  expiresAt: number;
}

/**
 * What an acquire answered, as a client reads it: granted; busy (409, or a 503 LockContentionError:
 * retry, give up at the budget); unavailable (any other 503: retry, an error at the budget); or an
 * error. `durationMs` is the request alone (k6's `http_req_duration` of it).
 */
export type AcquireAnswer = { durationMs: number } & (
  | { kind: 'granted'; grant: Grant }
  | { kind: 'conflict'; retryAfterMs?: number }
  | { kind: 'unavailable'; retryAfterMs?: number }
  | { kind: 'error'; status: number; detail: string }
);

/** What a release answered: its outcome ('released', 'expired', ...), or the status (0: no answer) and what came with it. */
export type ReleaseAnswer = { ok: true; outcome: string } | { ok: false; status: number; detail: string };

/** Metric tags of one operation: the stage (`steady`, `r<level>`) and the kind of operation (a type, so k6 takes it as tags). */
export type OpTags = { stage: string; op: OpKind };

/** The lock service as the iteration calls it. */
export interface LockDriver {
  acquire(request: AcquireRequest, tags: OpTags): Promise<AcquireAnswer>;
  release(leaseToken: string, tags: OpTags): Promise<ReleaseAnswer>;
}

/**
 * How an operation ended: what the metrics count. Durations in ms; `acquireMs` from the first attempt
 * until granted (backoff included, `backoffMs` of it), `releaseMs` the release with its retries,
 * `files` the files the operation touches (a rename: every file under its directory).
 */
export type IterationEnd =
  /** Acquired, held, released (`release` is what release answered: 'released', 'expired', ...). */
  | { outcome: 'done'; release: string; durationMs: number; acquireMs: number; backoffMs: number; releaseMs: number; files: number }
  /** Acquired and held, but no release attempt got an outcome. */
  | { outcome: 'release-failed'; durationMs: number }
  /** Busy until the retry budget ran out: contention, not an error. */
  | { outcome: 'gave-up'; durationMs: number }
  /** An error answer (`status`), or the store unavailable until the budget ran out (status 503). */
  | { outcome: 'error'; status: number; durationMs: number }
  /** The run stopped counting while it was under way (only the engine driver stops iterations itself). */
  | { outcome: 'interrupted' };

/** What the iteration reports, in the order it happens. */
export interface IterationMetrics {
  /** An operation was drawn and starts. */
  offered(tags: OpTags): void;
  /** Each acquire request's answer (retries included). */
  answered(answer: AcquireAnswer, tags: OpTags): void;
  /** A retry after `delayMs` of backoff. */
  retried(delayMs: number, tags: OpTags): void;
  /** Granted `latencyMs` after the first attempt (retries and backoff included). */
  acquired(latencyMs: number, tags: OpTags): void;
  /** One critical section, for the safety checker. */
  held(record: HoldRecord): void;
  ended(end: IterationEnd, tags: OpTags): void;
  /** A failed request in words (the counts are in `ended`). */
  problem(what: string, detail: string): void;
}

/** Everything the iteration uses from its side. */
export interface IterationDriver {
  locks: LockDriver;
  metrics: IterationMetrics;
  /** Epoch ms, as precise as the side has it (k6: whole ms). */
  now(): number;
  sleep(ms: number): Promise<void>;
  /** In [0, 1): the workload's draws and the backoff's jitter. */
  random(): number;
  /** The run has stopped counting: the iteration gives up where it stands (k6 interrupts iterations itself, and says never). */
  stopped(): boolean;
}

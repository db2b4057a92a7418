/**
 * What every command asks of the lock service, whichever way it is reached: straight against the
 * cluster (a LockService on the lock index) or a deployed stage (its HTTP API, SigV4-signed, and the
 * sweeper function invoked directly). Answers are the HTTP API's JSON in both, so `--json` prints
 * the same whatever the backend.
 */
import type { InspectQuery, ListQuery, LockStateBody, SweepReportBody } from '../packages/client/src/wire.js';
import type { AdminInput, Drained, LockIndexStatus, Revocation } from './admin-types.js';

/** A lock as the commands show it: the API's lock state, with its queue length when the backend can tell. */
export interface LockView extends LockStateBody {
  /** Waiters queued for the lock; absent when the backend cannot see the queue. */
  waiters?: number;
}

export interface SweepOptions {
  batchSize?: number;
  maxBatches?: number;
}

export interface OpsBackend {
  list(query: ListQuery): Promise<LockView[]>;
  inspect(query: InspectQuery): Promise<LockView[]>;
  revoke(input: AdminInput): Promise<Revocation>;
  drain(input: AdminInput): Promise<Drained>;
  status(): Promise<LockIndexStatus>;
  sweep(options: SweepOptions): Promise<SweepReportBody>;
  close(): Promise<void>;
}

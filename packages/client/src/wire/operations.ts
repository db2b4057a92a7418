/** Each operation's request and answer, over HTTP and by direct invocation alike: what a transport is typed by. */
import type { CompletedBody, GrantBody, LockStatesBody, ReleaseResultBody, RenewalBody } from './answers.js';
import type { AcquireBody, InspectQuery, ListQuery, ReleaseBody, RenewBody } from './requests.js';

export interface Operations {
  /** A CompletedBody only for a request with an idempotencyKey whose work was completed. */
  acquire: { request: AcquireBody; answer: GrantBody | CompletedBody };
  renew: { request: RenewBody; answer: RenewalBody };
  release: { request: ReleaseBody; answer: ReleaseResultBody };
  inspect: { request: InspectQuery; answer: LockStatesBody };
  list: { request: ListQuery; answer: LockStatesBody };
}

export type OperationName = keyof Operations;

/** The operator operations' input and answers (revoke, drain, status): the service's own types; the HTTP API answers the same JSON. */
export type { Drained, LockIndexStatus, Revocation } from '../functions/core/model.js';

/** What revoke and drain take: the target's flat fields (as the acquire takes them), why, and who. */
export interface AdminInput {
  namespace: string;
  granularity: string;
  ids?: string[];
  path?: string;
  reason: string;
  by?: string;
}

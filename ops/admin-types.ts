/** The operator operations' answers as the HTTP API gives them (the service's own types fit them as they are). */
export type { DrainedBody as Drained, LockIndexStatusBody as LockIndexStatus, RevocationBody as Revocation } from '../packages/client/src/wire.js';

/** What revoke and drain take: the target's flat fields (as the acquire takes them), why, and who. */
export interface AdminInput {
  namespace: string;
  granularity: string;
  ids?: string[];
  path?: string;
  reason: string;
  by?: string;
}

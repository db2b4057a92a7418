/**
 * What a call must pass before the engine runs, and before any request to the lock store: the
 * namespace policy (authorization.ts), then, for acquire, the quotas on held locks (quota.ts). Each
 * operation declares what its call touches (`access` in handler.ts); the principal goes on every log
 * line of the call.
 */
import type { Logger } from '@aws-lambda-powertools/logger';
import { type Authorize, principalOf } from './authorization.js';
import type { Invocation } from './events.js';
import { describePrincipal } from './lock-policy.js';
import type { QuotaCheck } from './quota.js';

export type Access =
  /** Needs acquire in the namespace, then room under the quotas for `keys` more lock documents. */
  | { action: 'acquire'; namespace: string; owner: string; keys: number }
  /** Needs acquire in the lease's namespace (the token's, decoded once at the request boundary): a revoked caller cannot keep a lock alive. */
  | { action: 'renew'; namespace: string }
  | { action: 'inspect'; namespace: string }
  /** Break glass: an operator's revoke or drain (`operation`), granted only by a statement naming revoke. */
  | { action: 'revoke'; namespace: string; operation: 'revoke' | 'drain' }
  /** Without a namespace: only a caller that may list every namespace. */
  | { action: 'list'; namespace?: string | undefined }
  /** Release needs only the lease token's secret (giving a lock up is never refused); the sweeper deletes only what expired. */
  | { action: 'release' | 'sweep' };

export type Admit = (invocation: Invocation, access: Access) => Promise<void>;

export function createAdmission(options: { authorize: Authorize; quota?: QuotaCheck | undefined; logger?: Logger }): Admit {
  const { authorize, quota, logger } = options;
  return async (invocation, access) => {
    const principal = principalOf(invocation);
    const name = describePrincipal(principal);
    if (name) logger?.appendKeys({ principal: name });
    switch (access.action) {
      case 'acquire':
        await authorize(principal, 'acquire', access.namespace);
        await quota?.(access);
        return;
      case 'renew':
        await authorize(principal, 'acquire', access.namespace, 'renew');
        return;
      case 'revoke':
        await authorize(principal, 'revoke', access.namespace, access.operation);
        return;
      case 'inspect':
      case 'list':
        await authorize(principal, access.action, access.namespace);
        return;
      default:
        return;
    }
  };
}

/**
 * Who may lock what: the caller's principal, read from the invocation, checked against the namespace
 * policy (lock-policy.ts) before any request to the lock store.
 *
 * The principal of an HTTP call is the one API Gateway authenticated from the request's SigV4
 * signature on an AWS_IAM route (`requestContext.authorizer.iam.userArn`); a route without IAM
 * authorization carries none (`anonymous`). Locally, serverless-offline sets `requestContext.authorizer`
 * from its `sls-offline-authorizer-override` header; deployed, that header is a header like any other.
 * Direct invocations and EventBridge events carry no caller identity: IAM's lambda:InvokeFunction (or
 * the rule's permission) is their gate, and the policy names them `direct` and `eventbridge`.
 *
 * The policy comes from LOCK_POLICY (parsed at cold start: config.ts) or from an SSM parameter or
 * secret (LOCK_POLICY_PARAMETER), read through Powertools Parameters and cached for
 * POLICY_MAX_AGE_SECONDS, so that it changes without a deploy. A parameter that cannot be read, or
 * whose text does not parse, refuses every call that needs the policy (fail closed) until it is fixed.
 */
import { AccessDeniedError } from '../../packages/engine/src/errors.js';
import { ConfigError, type FunctionConfig } from './config.js';
import type { Invocation } from './events.js';
import { type Decision, decide, describePrincipal, type LockPolicy, type PolicyAction, type Principal, parseLockPolicy, principalName } from './lock-policy.js';

/** How long a policy read from SSM / Secrets Manager is used before it is read again. */
export const POLICY_MAX_AGE_SECONDS = 300;

/** The caller as the policy sees it. */
export function principalOf(invocation: Invocation): Principal {
  if (invocation.kind === 'direct') return { kind: 'direct' };
  if (invocation.kind === 'eventbridge') return { kind: 'eventbridge' };
  const authorizer = (invocation.event.requestContext as { authorizer?: { iam?: { userArn?: unknown } | null } | null } | undefined)?.authorizer;
  const arn = authorizer?.iam?.userArn;
  return typeof arn === 'string' && arn.startsWith('arn:') ? { kind: 'iam', arn, name: principalName(arn) } : { kind: 'anonymous' };
}

/** Throws AccessDeniedError unless the policy lets `principal` do `action` in `namespace`; `operation` names the call in the message. */
export type Authorize = (principal: Principal, action: PolicyAction, namespace: string | undefined, operation?: string) => Promise<void>;

export interface AuthorizationOptions {
  readSecret: (reference: string, maxAgeSeconds?: number) => Promise<string>;
}

export function createAuthorization(
  config: Pick<FunctionConfig, 'policy' | 'policyParameter'> & Partial<Pick<FunctionConfig, 'policyAllowAll'>>,
  options: AuthorizationOptions,
): Authorize & { policy(): Promise<LockPolicy> } {
  const reference = config.policyParameter;
  let last: { text: string; policy: LockPolicy | ConfigError } | undefined;
  const policy = async (): Promise<LockPolicy> => {
    if (!reference) return config.policy;
    const text = await options.readSecret(reference, POLICY_MAX_AGE_SECONDS);
    if (last?.text !== text) {
      const parsed = parseLockPolicy(text, reference);
      last = { text, policy: Array.isArray(parsed) ? new ConfigError(parsed) : parsed };
    }
    if (last.policy instanceof ConfigError) throw last.policy;
    // An empty parameter is a mistake, not "no policy": refused like one that does not parse.
    if (last.policy.kind === 'none') throw new ConfigError([`${reference}: is empty; write the namespace policy there (JSON: {"allow": [...]})`]);
    // The package-time guard on allow-all cannot see a parameter's text: the same rule, here.
    if (last.policy.kind === 'allow-all' && !config.policyAllowAll) {
      throw new ConfigError([
        `${reference}: allow-all is refused in this stage (no authorization: any caller may lock, inspect and list anything); write the policy (JSON: {"allow": [...]}), or package the stage with --param="i-accept-unsafe-defaults=true" (refused in prod and production)`,
      ]);
    }
    return last.policy;
  };
  const authorize: Authorize = async (principal, action, namespace, operation = action) => {
    const decision = decide(await policy(), principal, action, namespace);
    if (decision.allowed) return;
    const who = describePrincipal(principal);
    throw new AccessDeniedError(
      {
        action: operation,
        reason: decision.reason,
        ...(namespace !== undefined ? { namespace } : {}),
        ...(who !== undefined ? { principal: who } : {}),
      },
      refusal(decision, principal, action, operation, namespace),
    );
  };
  return Object.assign(authorize, { policy });
}

function refusal(
  decision: Decision & { allowed: false },
  principal: Principal,
  action: PolicyAction,
  operation: string,
  namespace: string | undefined,
): string {
  const who =
    principal.kind === 'iam'
      ? `${principal.name}${principal.arn !== principal.name ? ` (${principal.arn})` : ''}`
      : principal.kind === 'direct'
        ? 'A direct invocation (principal "direct")'
        : 'An EventBridge event (principal "eventbridge")';
  const needs = operation === action ? '' : action === 'revoke' ? ` (${operation} needs revoke)` : ` (${operation} needs ${action} in the lease's namespace)`;
  switch (decision.reason) {
    case 'no_policy':
      return `No namespace policy is configured (LOCK_POLICY or LOCK_POLICY_PARAMETER; the lockPolicy / lockPolicyParameter params), so every ${operation} is refused: see docs/authorization.md`;
    case 'anonymous':
      return 'The request carries no IAM principal: API Gateway sets one (requestContext.authorizer.iam) only on routes with AWS_IAM authorization (the httpAuthorizationType param), and the namespace policy admits identified callers only';
    case 'unknown_principal':
      return `${who} is not named in the namespace policy`;
    case 'explicit_only':
      return `${operation} is break glass: the allow-all policy does not grant it; name the caller in a statement with the action "revoke" (docs/authorization.md)`;
    case 'namespace_required':
      return `${who} may list in ${(decision.listable ?? []).join(', ')} only: name one (namespace); a list without a namespace needs list on every namespace ("*")`;
    default:
      return `${who} may not ${operation} ${namespace !== undefined ? `in namespace ${namespace}` : 'in any namespace'}${needs}${action === 'revoke' ? ' (revoke is granted only by a statement that names it, never by "*")' : ''}`;
  }
}

/**
 * The namespace policy: which callers may acquire (and so renew), inspect or list locks in which
 * namespaces. Allow statements only; whatever no statement allows is refused.
 *
 *   { "allow": [
 *       { "principals": ["arn:aws:iam::123456789012:role/orders-pipeline"], "actions": ["acquire", "inspect"], "namespaces": ["orders", "orders-*"] },
 *       { "principals": ["arn:aws:iam::123456789012:role/oncall"], "actions": ["revoke", "inspect", "list"], "namespaces": ["*"] },
 *       { "principals": ["direct"], "actions": ["acquire"], "namespaces": ["jobs"] } ] }
 *
 * Principals: an IAM ARN (`*` matches any run of characters), `direct` (a direct invocation: Step
 * Functions, the SDK's Invoke, which carry no caller identity: IAM's lambda:InvokeFunction on the
 * function is their gate), `eventbridge` (an EventBridge event), or `*` (any of these: whoever IAM let
 * through). Role sessions are matched by their role: API Gateway names an assumed role's caller
 * `arn:aws:sts::<account>:assumed-role/<role>/<session>`, which becomes
 * `arn:aws:iam::<account>:role/<role>`; a role ARN in the policy is matched by its name (role
 * names are unique per account, and the session ARN carries no path).
 *
 * `revoke` (an operator's revoke and drain) is granted only by a statement that names it: not by `*`
 * in actions, and not by `allow-all`.
 *
 * The text may also be `allow-all`: no authorization at all (the local stack's default), except revoke.
 * Parsing returns every problem at once; the callers fail closed on any (config.ts at cold start,
 * authorization.ts for a policy read from SSM).
 */
import { z } from 'zod';
import type { AccessDeniedReason } from '../../packages/engine/src/errors.js';

/** What `*` in a statement grants. */
export const POLICY_ACTIONS = ['acquire', 'inspect', 'list'] as const;
/** Break glass (an operator's revoke and drain): granted only by a statement that names it, never by `*` or `allow-all`. */
export const EXPLICIT_ACTIONS = ['revoke'] as const;
export type PolicyAction = (typeof POLICY_ACTIONS)[number] | (typeof EXPLICIT_ACTIONS)[number];

/** Who called, as the policy sees it. */
export type Principal =
  /** An HTTP call on an AWS_IAM route: `arn` as API Gateway gave it, `name` as the policy matches it. */
  | { kind: 'iam'; arn: string; name: string }
  | { kind: 'direct' }
  | { kind: 'eventbridge' }
  /** An HTTP call without an IAM principal. */
  | { kind: 'anonymous' };

interface Statement {
  principals: RegExp[] | '*';
  direct: boolean;
  eventbridge: boolean;
  actions: ReadonlySet<PolicyAction>;
  /** The namespace patterns as written (for messages) and compiled. */
  namespaces: Array<{ pattern: string; regex: RegExp }>;
}

export type LockPolicy =
  /** Nothing configured: every namespace-scoped call is refused. */
  { kind: 'none' } | { kind: 'allow-all' } | { kind: 'statements'; statements: Statement[] };

export const ALLOW_ALL = 'allow-all';

const NAMESPACE_PATTERN = /^[A-Za-z0-9._:*-]+$/;

const statementSchema = z
  .object({
    /** A name for people reading the policy; not used. */
    sid: z.string().max(128).optional(),
    principals: z.array(z.string().min(1).max(2048)).min(1),
    actions: z
      .array(
        z.enum([...POLICY_ACTIONS, ...EXPLICIT_ACTIONS, '*'], {
          error: (issue) =>
            issue.input === 'renew' || issue.input === 'release'
              ? `${String(issue.input)} is not an action of its own: renew needs acquire in the lease's namespace, and release needs only the lease token`
              : `must be one of ${[...POLICY_ACTIONS, ...EXPLICIT_ACTIONS].join(', ')} or * (which grants ${POLICY_ACTIONS.join(', ')}; revoke only by name)`,
        }),
      )
      .min(1),
    namespaces: z
      .array(
        z.string().min(1).max(128).regex(NAMESPACE_PATTERN, { error: 'must be a namespace, or a pattern with * (letters, digits, ".", "_", ":", "-", "*")' }),
      )
      .min(1),
  })
  .strict();

const policySchema = z.object({ allow: z.array(statementSchema) }).strict();

/** `*` matches any run of characters; everything else is literal. */
export function globRegex(pattern: string): RegExp {
  return new RegExp(`^${pattern.split('*').map(escapeRegex).join('.*')}$`);
}

const escapeRegex = (text: string): string => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&');

const ASSUMED_ROLE = /^arn:([^:]+):sts::([^:]+):assumed-role\/([^/]+)\/.+$/;
const ROLE = /^arn:([^:]+):iam::([^:]+):role\/(.*\/)?([^/]+)$/;

/**
 * The name the policy matches a caller's ARN by: a role session (assumed-role ARN) as its role's ARN,
 * a role ARN without its path; anything else (an IAM user, the root user, a federated user) as it is.
 */
export function principalName(arn: string): string {
  const assumed = ASSUMED_ROLE.exec(arn);
  if (assumed) return `arn:${assumed[1]}:iam::${assumed[2]}:role/${assumed[3]}`;
  const role = ROLE.exec(arn);
  if (role) return `arn:${role[1]}:iam::${role[2]}:role/${role[4]}`;
  return arn;
}

/** A principal of the policy as a pattern over principalName()s, or the problem with it. */
function principalPattern(entry: string): RegExp | string {
  if (!entry.startsWith('arn:') || entry.split(':').length < 6) return 'must be an IAM ARN, "direct", "eventbridge" or "*"';
  if (ASSUMED_ROLE.test(entry) || /:assumed-role\//.test(entry)) {
    return 'is a role session (assumed-role) ARN: name the role instead (arn:aws:iam::<account>:role/<name>); sessions are not told apart';
  }
  const role = ROLE.exec(entry);
  if (role?.[3] && role[4]!.includes('*')) {
    return "has a role path and a wildcard in the role's name: a caller's assumed-role ARN carries no path, so match role names only (role/<name pattern>)";
  }
  return globRegex(principalName(entry));
}

/**
 * The policy in `text` (JSON, `allow-all`, or blank for none), or the list of its problems, each
 * prefixed with `source` (the variable or parameter it came from).
 */
export function parseLockPolicy(text: string | undefined, source: string): LockPolicy | string[] {
  const trimmed = text?.trim() ?? '';
  if (trimmed === '') return { kind: 'none' };
  if (trimmed === ALLOW_ALL) return { kind: 'allow-all' };
  let json: unknown;
  try {
    json = JSON.parse(trimmed);
  } catch (error) {
    return [`${source}: must be JSON ({"allow": [...]}) or ${ALLOW_ALL} (${(error as Error).message})`];
  }
  const parsed = policySchema.safeParse(json);
  if (!parsed.success) return parsed.error.issues.map((issue) => `${source}: ${issue.path.join('.') || '(policy)'}: ${issue.message}`);
  const problems: string[] = [];
  const statements = parsed.data.allow.map((statement, index): Statement => {
    const arns: RegExp[] = [];
    let any = false;
    let direct = false;
    let eventbridge = false;
    statement.principals.forEach((entry, at) => {
      if (entry === '*') any = true;
      else if (entry === 'direct') direct = true;
      else if (entry === 'eventbridge') eventbridge = true;
      else {
        const pattern = principalPattern(entry);
        if (typeof pattern === 'string') problems.push(`${source}: allow.${index}.principals.${at}: ${entry} ${pattern}`);
        else arns.push(pattern);
      }
    });
    const actions = statement.actions.includes('*') ? POLICY_ACTIONS : (statement.actions as PolicyAction[]);
    return {
      principals: any ? '*' : arns,
      direct: any || direct,
      eventbridge: any || eventbridge,
      actions: new Set(actions),
      namespaces: statement.namespaces.map((pattern) => ({ pattern, regex: globRegex(pattern) })),
    };
  });
  return problems.length > 0 ? problems : { kind: 'statements', statements };
}

function names(statement: Statement, principal: Principal): boolean {
  switch (principal.kind) {
    case 'iam':
      return statement.principals === '*' || statement.principals.some((pattern) => pattern.test(principal.name));
    case 'direct':
      return statement.direct;
    case 'eventbridge':
      return statement.eventbridge;
    default:
      return false;
  }
}

export type Decision = { allowed: true } | { allowed: false; reason: AccessDeniedReason; listable?: string[] };

/**
 * Whether `principal` may do `action` in `namespace`. A list without a namespace is allowed only to a
 * caller that may list every namespace (a statement with the pattern `*`); one that may list some
 * learns which patterns (namespace_required), one that may list none is not_allowed.
 */
export function decide(policy: LockPolicy, principal: Principal, action: PolicyAction, namespace: string | undefined): Decision {
  if (policy.kind === 'allow-all')
    return (EXPLICIT_ACTIONS as readonly string[]).includes(action) ? { allowed: false, reason: 'explicit_only' } : { allowed: true };
  if (policy.kind === 'none') return { allowed: false, reason: 'no_policy' };
  if (principal.kind === 'anonymous') return { allowed: false, reason: 'anonymous' };
  const own = policy.statements.filter((statement) => names(statement, principal));
  if (own.length === 0) return { allowed: false, reason: 'unknown_principal' };
  const granting = own.filter((statement) => statement.actions.has(action));
  if (namespace === undefined) {
    if (granting.length === 0) return { allowed: false, reason: 'not_allowed' };
    if (granting.some((statement) => statement.namespaces.some(({ pattern }) => pattern === '*'))) return { allowed: true };
    return {
      allowed: false,
      reason: 'namespace_required',
      listable: [...new Set(granting.flatMap((statement) => statement.namespaces.map(({ pattern }) => pattern)))],
    };
  }
  if (granting.some((statement) => statement.namespaces.some(({ regex }) => regex.test(namespace)))) return { allowed: true };
  return { allowed: false, reason: 'not_allowed' };
}

/** How messages and logs name a caller. */
export function describePrincipal(principal: Principal): string | undefined {
  switch (principal.kind) {
    case 'iam':
      return principal.name;
    case 'direct':
      return 'direct';
    case 'eventbridge':
      return 'eventbridge';
    default:
      return undefined;
  }
}

/**
 * The namespace policy, the authorization around it and the quota check, without a lock store:
 * parsing (every problem named, never a silent allow), principal normalisation, decisions, the
 * policy read from SSM (cached, fail closed), and what admission asks of each (nothing, for release,
 * the sweeper, or an acquire without quotas).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createAdmission } from '../../functions/runtime/admission.js';
import { createAuthorization, POLICY_MAX_AGE_SECONDS, principalOf } from '../../functions/runtime/authorization.js';
import { ConfigError, readConfig } from '../../functions/runtime/config.js';
import type { Invocation } from '../../functions/runtime/events.js';
import { decide, type LockPolicy, type Principal, parseLockPolicy, principalName } from '../../functions/runtime/lock-policy.js';
import { createQuotaCheck } from '../../functions/runtime/quota.js';
import { createRuntime } from '../../functions/runtime/runtime.js';
import { AccessDeniedError, QuotaExceededError } from '../../packages/engine/src/errors.js';
import { httpEvent, iamCaller } from '../support/lambda-events.js';

const ACCOUNT = '123456789012';
const ORDERS_ROLE = `arn:aws:iam::${ACCOUNT}:role/orders-pipeline`;
const POLICY = {
  allow: [
    { sid: 'orders', principals: [ORDERS_ROLE], actions: ['acquire', 'inspect'], namespaces: ['orders', 'orders-*'] },
    { principals: [ORDERS_ROLE], actions: ['list'], namespaces: ['orders'] },
    { principals: [`arn:aws:iam::${ACCOUNT}:role/ops/lock-admin`], actions: ['*'], namespaces: ['*'] },
    { principals: ['direct'], actions: ['acquire'], namespaces: ['jobs'] },
  ],
};

function policyOf(text: string): LockPolicy {
  const parsed = parseLockPolicy(text, 'LOCK_POLICY');
  if (Array.isArray(parsed)) throw new Error(parsed.join('\n'));
  return parsed;
}
const iam = (arn: string): Principal => ({ kind: 'iam', arn, name: principalName(arn) });
const session = (role: string, name = 'session-1') => `arn:aws:sts::${ACCOUNT}:assumed-role/${role}/${name}`;

describe('principalName: what the policy matches a caller by', () => {
  it('a role session (assumed-role ARN, as API Gateway names it) as its role, without the path a role ARN may have', () => {
    expect(principalName(session('orders-pipeline', 'i-0abc'))).toBe(ORDERS_ROLE);
    expect(principalName(`arn:aws-cn:sts::${ACCOUNT}:assumed-role/orders-pipeline/x`)).toBe(`arn:aws-cn:iam::${ACCOUNT}:role/orders-pipeline`);
    expect(principalName(`arn:aws:iam::${ACCOUNT}:role/service-role/pipelines/orders-pipeline`)).toBe(ORDERS_ROLE);
  });

  it('users, the root user and federated users as they are', () => {
    for (const arn of [`arn:aws:iam::${ACCOUNT}:user/ci/deployer`, `arn:aws:iam::${ACCOUNT}:root`, `arn:aws:sts::${ACCOUNT}:federated-user/bob`]) {
      expect(principalName(arn)).toBe(arn);
    }
  });

  it('principalOf reads requestContext.authorizer.iam of an HTTP call; no principal there is anonymous; direct and EventBridge invocations are named so', () => {
    const http = (event: unknown): Invocation => ({ kind: 'http', event: event as never });
    expect(principalOf(http(httpEvent('POST', '/acquire', { iam: iamCaller(session('orders-pipeline')) })))).toEqual({
      kind: 'iam',
      arn: session('orders-pipeline'),
      name: ORDERS_ROLE,
    });
    expect(principalOf(http(httpEvent('POST', '/acquire')))).toEqual({ kind: 'anonymous' });
    // serverless-offline's own shape when no authorizer is configured, and a JWT authorizer's: no IAM principal.
    expect(principalOf(http({ ...httpEvent('POST', '/acquire'), requestContext: { authorizer: { jwt: { claims: {} } } } }))).toEqual({ kind: 'anonymous' });
    expect(principalOf({ kind: 'direct', event: {} })).toEqual({ kind: 'direct' });
    expect(principalOf({ kind: 'eventbridge', event: { id: 'e', detail: {} } })).toEqual({ kind: 'eventbridge' });
  });
});

describe('parseLockPolicy', () => {
  it('blank is no policy, allow-all is no authorization, JSON is statements', () => {
    expect(parseLockPolicy(undefined, 'LOCK_POLICY')).toEqual({ kind: 'none' });
    expect(parseLockPolicy('  ', 'LOCK_POLICY')).toEqual({ kind: 'none' });
    expect(parseLockPolicy('allow-all', 'LOCK_POLICY')).toEqual({ kind: 'allow-all' });
    expect(policyOf(JSON.stringify(POLICY))).toMatchObject({ kind: 'statements', statements: expect.any(Array) });
  });

  it('names every problem, with the field and the rule, and never yields a policy from a broken text', () => {
    const problems = (policy: unknown) => parseLockPolicy(typeof policy === 'string' ? policy : JSON.stringify(policy), 'LOCK_POLICY');
    expect(problems('{"allow": [')).toEqual([expect.stringMatching(/^LOCK_POLICY: must be JSON/)]);
    expect(problems('allow all')).toEqual([expect.stringMatching(/^LOCK_POLICY: must be JSON/)]);
    expect(problems({ allow: [{ principals: [ORDERS_ROLE], actions: ['renew', 'write'], namespaces: ['orders!'], when: 'always' }] })).toEqual([
      expect.stringMatching(/^LOCK_POLICY: allow\.0\.actions\.0: renew is not an action of its own: renew needs acquire/),
      expect.stringMatching(/^LOCK_POLICY: allow\.0\.actions\.1: must be one of acquire, inspect, list, revoke or \*/),
      expect.stringMatching(/^LOCK_POLICY: allow\.0\.namespaces\.0: must be a namespace, or a pattern/),
      expect.stringMatching(/^LOCK_POLICY: allow\.0: Unrecognized key: "when"/),
    ]);
    expect(problems({ statements: [] })).toEqual([
      expect.stringMatching(/^LOCK_POLICY: allow: /),
      expect.stringMatching(/^LOCK_POLICY: \(policy\): Unrecognized key: "statements"/),
    ]);
    expect(problems({ allow: [{ principals: [], actions: [], namespaces: [] }] })).toHaveLength(3);
  });

  it('refuses principals it could not match as written: not an ARN, a role session, a role path with a wildcard name', () => {
    const problems = parseLockPolicy(
      JSON.stringify({
        allow: [
          {
            principals: ['orders-pipeline', session('orders-pipeline'), `arn:aws:iam::${ACCOUNT}:role/pipelines/*`, `arn:aws:iam::${ACCOUNT}:role/orders-*`],
            actions: ['acquire'],
            namespaces: ['orders'],
          },
        ],
      }),
      '/es-lease-locks/prod/lock-policy',
    );
    expect(problems).toEqual([
      expect.stringMatching(
        /^\/es-lease-locks\/prod\/lock-policy: allow\.0\.principals\.0: orders-pipeline must be an IAM ARN, "direct", "eventbridge" or "\*"/,
      ),
      expect.stringMatching(/allow\.0\.principals\.1: .* is a role session \(assumed-role\) ARN: name the role instead/),
      expect.stringMatching(/allow\.0\.principals\.2: .* has a role path and a wildcard in the role's name/),
    ]);
  });

  it('readConfig fails the cold start on a policy that does not parse, or on LOCK_POLICY and LOCK_POLICY_PARAMETER both set', () => {
    const env = { ES_URL: 'http://127.0.0.1:9' };
    expect(() => readConfig({ ...env, LOCK_POLICY: '{"allow": [{"principals": ["*"]}]}' })).toThrow(ConfigError);
    expect(() => readConfig({ ...env, LOCK_POLICY: '{"allow": [{"principals": ["*"]}]}' })).toThrow(/LOCK_POLICY: allow\.0\.actions: /);
    expect(() => readConfig({ ...env, LOCK_POLICY: 'allow-all', LOCK_POLICY_PARAMETER: '/es-lease-locks/dev/lock-policy' })).toThrow(
      /LOCK_POLICY and LOCK_POLICY_PARAMETER are both set/,
    );
    expect(readConfig(env).policy).toEqual({ kind: 'none' });
    expect(readConfig({ ...env, LOCK_POLICY: JSON.stringify(POLICY) }).policy.kind).toBe('statements');
  });

  it('readConfig reads the limits: ids per request (only lower than 500), quotas (none by default)', () => {
    const env = { ES_URL: 'http://127.0.0.1:9' };
    expect(readConfig(env)).toMatchObject({ maxIdsPerRequest: 500, quota: {} });
    expect(readConfig({ ...env, LOCK_MAX_IDS_PER_REQUEST: '20', LOCK_MAX_LOCKS_PER_OWNER: '50', LOCK_MAX_LOCKS_PER_NAMESPACE: '' })).toMatchObject({
      maxIdsPerRequest: 20,
      quota: { perOwner: 50 },
    });
    expect(() => readConfig({ ...env, LOCK_MAX_IDS_PER_REQUEST: '501' })).toThrow(/LOCK_MAX_IDS_PER_REQUEST/);
    expect(() => readConfig({ ...env, LOCK_MAX_LOCKS_PER_NAMESPACE: '0' })).toThrow(/LOCK_MAX_LOCKS_PER_NAMESPACE/);
  });
});

describe('decide', () => {
  const policy = policyOf(JSON.stringify(POLICY));
  const orders = iam(session('orders-pipeline'));

  it('allows what a statement naming the caller allows, in the namespaces its patterns match', () => {
    expect(decide(policy, orders, 'acquire', 'orders')).toEqual({ allowed: true });
    expect(decide(policy, orders, 'acquire', 'orders-eu')).toEqual({ allowed: true });
    expect(decide(policy, orders, 'inspect', 'orders-eu')).toEqual({ allowed: true });
    expect(decide(policy, orders, 'list', 'orders')).toEqual({ allowed: true });
  });

  it('refuses the rest: another namespace, another action, a pattern that only looks alike', () => {
    expect(decide(policy, orders, 'acquire', 'payments')).toEqual({ allowed: false, reason: 'not_allowed' });
    expect(decide(policy, orders, 'acquire', 'ordersx')).toEqual({ allowed: false, reason: 'not_allowed' });
    expect(decide(policy, orders, 'list', 'orders-eu')).toEqual({ allowed: false, reason: 'not_allowed' });
  });

  it('a caller no statement names is unknown; a call without a principal is anonymous; no policy refuses everyone', () => {
    expect(decide(policy, iam(session('payments-pipeline')), 'acquire', 'orders')).toEqual({ allowed: false, reason: 'unknown_principal' });
    expect(decide(policy, iam(`arn:aws:iam::999999999999:role/orders-pipeline`), 'acquire', 'orders')).toEqual({
      allowed: false,
      reason: 'unknown_principal',
    });
    expect(decide(policy, { kind: 'eventbridge' }, 'acquire', 'jobs')).toEqual({ allowed: false, reason: 'unknown_principal' });
    expect(decide(policy, { kind: 'anonymous' }, 'acquire', 'orders')).toEqual({ allowed: false, reason: 'anonymous' });
    expect(decide({ kind: 'none' }, orders, 'acquire', 'orders')).toEqual({ allowed: false, reason: 'no_policy' });
  });

  it('matches a role in the policy written with its path, and any session of it', () => {
    const admin = iam(session('lock-admin', 'alice@example.com'));
    expect(decide(policy, admin, 'acquire', 'anything')).toEqual({ allowed: true });
    expect(decide(policy, iam(`arn:aws:iam::${ACCOUNT}:user/lock-admin`), 'acquire', 'anything')).toEqual({ allowed: false, reason: 'unknown_principal' });
  });

  it('direct invocations are the principal "direct"; "*" is every identified caller, never an anonymous one', () => {
    expect(decide(policy, { kind: 'direct' }, 'acquire', 'jobs')).toEqual({ allowed: true });
    expect(decide(policy, { kind: 'direct' }, 'acquire', 'orders')).toEqual({ allowed: false, reason: 'not_allowed' });
    const everyone = policyOf(JSON.stringify({ allow: [{ principals: ['*'], actions: ['acquire'], namespaces: ['shared-*'] }] }));
    for (const principal of [orders, { kind: 'direct' } as const, { kind: 'eventbridge' } as const]) {
      expect(decide(everyone, principal, 'acquire', 'shared-a')).toEqual({ allowed: true });
    }
    expect(decide(everyone, { kind: 'anonymous' }, 'acquire', 'shared-a')).toEqual({ allowed: false, reason: 'anonymous' });
    expect(decide({ kind: 'allow-all' }, { kind: 'anonymous' }, 'list', undefined)).toEqual({ allowed: true });
  });

  it('revoke is granted only by a statement that names it: never by "*" in actions, nor by allow-all', () => {
    const oncall = { allow: [{ principals: ['arn:aws:iam::123456789012:role/oncall'], actions: ['revoke'], namespaces: ['orders-*'] }, ...POLICY.allow] };
    const withOncall = policyOf(JSON.stringify(oncall));
    expect(decide(withOncall, iam(session('oncall')), 'revoke', 'orders-eu')).toEqual({ allowed: true });
    expect(decide(withOncall, iam(session('oncall')), 'revoke', 'payments')).toEqual({ allowed: false, reason: 'not_allowed' });
    expect(decide(withOncall, iam(session('lock-admin')), 'revoke', 'orders-eu')).toEqual({ allowed: false, reason: 'not_allowed' });
    expect(decide({ kind: 'allow-all' }, iam(session('lock-admin')), 'revoke', 'orders')).toEqual({ allowed: false, reason: 'explicit_only' });
    expect(decide({ kind: 'allow-all' }, { kind: 'direct' }, 'revoke', 'orders')).toEqual({ allowed: false, reason: 'explicit_only' });
  });

  it('a list without a namespace needs list on "*"; anyone else learns which namespaces it may list', () => {
    expect(decide(policy, orders, 'list', undefined)).toEqual({ allowed: false, reason: 'namespace_required', listable: ['orders'] });
    expect(decide(policy, { kind: 'direct' }, 'list', undefined)).toEqual({ allowed: false, reason: 'not_allowed' });
    expect(decide(policy, iam(session('lock-admin')), 'list', undefined)).toEqual({ allowed: true });
  });
});

describe('createAuthorization', () => {
  it('throws AccessDeniedError naming the caller, the call and the namespace; renew is judged as acquire', async () => {
    const authorize = createAuthorization({ policy: policyOf(JSON.stringify(POLICY)) }, { readSecret: vi.fn() });
    const caller = iam(session('orders-pipeline', 'run-7'));
    await expect(authorize(caller, 'acquire', 'orders')).resolves.toBeUndefined();
    const refused = await authorize(caller, 'acquire', 'payments', 'renew').catch((error: unknown) => error as AccessDeniedError);
    expect(refused).toBeInstanceOf(AccessDeniedError);
    expect(refused!.context).toEqual({ action: 'renew', reason: 'not_allowed', namespace: 'payments', principal: ORDERS_ROLE });
    expect(refused!.message).toBe(
      `${ORDERS_ROLE} (${session('orders-pipeline', 'run-7')}) may not renew in namespace payments (renew needs acquire in the lease's namespace)`,
    );
    await expect(authorize(caller, 'list', undefined)).rejects.toThrow(/may list in orders only: name one \(namespace\)/);
    await expect(authorize({ kind: 'anonymous' }, 'inspect', 'orders')).rejects.toThrow(/carries no IAM principal/);
    await expect(createAuthorization({ policy: { kind: 'none' } }, { readSecret: vi.fn() })(caller, 'inspect', 'orders')).rejects.toThrow(
      /No namespace policy is configured/,
    );
  });

  it('reads a policy kept in SSM through the parameters utility with a short max age, and uses a new text as soon as it is read', async () => {
    let text = JSON.stringify(POLICY);
    const readSecret = vi.fn(async () => text);
    const authorize = createAuthorization({ policy: { kind: 'none' }, policyParameter: '/es-lease-locks/dev/lock-policy' }, { readSecret });
    const caller = iam(session('orders-pipeline'));
    await expect(authorize(caller, 'acquire', 'orders')).resolves.toBeUndefined();
    expect(readSecret).toHaveBeenCalledWith('/es-lease-locks/dev/lock-policy', POLICY_MAX_AGE_SECONDS);
    text = JSON.stringify({ allow: [{ principals: [ORDERS_ROLE], actions: ['acquire'], namespaces: ['orders-eu'] }] });
    await expect(authorize(caller, 'acquire', 'orders')).rejects.toBeInstanceOf(AccessDeniedError);
    await expect(authorize(caller, 'acquire', 'orders-eu')).resolves.toBeUndefined();
  });

  it('fails closed on a policy parameter that does not parse, is empty or cannot be read: every call refused, none allowed', async () => {
    for (const [text, problem] of [
      ['{"allow": [{"principals": ["*"], "actions": ["acquire"], "namespaces": ["*"]}', /lock-policy: must be JSON/],
      ['{"allow": [{"principals": ["*"], "actions": ["own"], "namespaces": ["*"]}]}', /lock-policy: allow\.0\.actions\.0: must be one of/],
      ['', /lock-policy: is empty/],
    ] as const) {
      const authorize = createAuthorization({ policy: { kind: 'none' }, policyParameter: '/es-lease-locks/dev/lock-policy' }, { readSecret: async () => text });
      for (let attempt = 0; attempt < 2; attempt++) {
        const error = await authorize({ kind: 'direct' }, 'acquire', 'orders').catch((thrown: unknown) => thrown);
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as Error).message).toMatch(problem);
      }
    }
    const unreadable = createAuthorization(
      { policy: { kind: 'none' }, policyParameter: '/es-lease-locks/dev/lock-policy' },
      {
        readSecret: async () => {
          throw new Error('ParameterNotFound');
        },
      },
    );
    await expect(unreadable({ kind: 'direct' }, 'acquire', 'orders')).rejects.toThrow('ParameterNotFound');
  });
});

describe('allow-all from the policy parameter', () => {
  const reference = '/es-lease-locks/staging/lock-policy';
  it('is refused (fail closed) unless the stage could package allow-all inline (LOCK_POLICY_ALLOW_ALL=true)', async () => {
    const refusing = createAuthorization({ policy: { kind: 'none' }, policyParameter: reference }, { readSecret: async () => 'allow-all' });
    const error = await refusing({ kind: 'direct' }, 'acquire', 'orders').catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/lock-policy: allow-all is refused in this stage .*i-accept-unsafe-defaults=true/);
    const accepting = createAuthorization(
      { policy: { kind: 'none' }, policyParameter: reference, policyAllowAll: true },
      { readSecret: async () => 'allow-all' },
    );
    await expect(accepting({ kind: 'direct' }, 'acquire', 'orders')).resolves.toBeUndefined();
  });
});

describe('the runtime', () => {
  const env = { ES_URL: 'http://127.0.0.1:9', POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true', POWERTOOLS_TRACE_ENABLED: 'false' };
  const direct: Invocation = { kind: 'direct', event: {} };
  const acquire = { action: 'acquire', namespace: 'jobs', owner: 'sfn', keys: 1 } as const;
  // The runtime's Logger reads its level from the process environment.
  beforeEach(() => vi.stubEnv('POWERTOOLS_LOG_LEVEL', 'SILENT'));
  afterEach(() => vi.unstubAllEnvs());

  it('reads the policy parameter at init through its secret reader, and admits by it', async () => {
    const readSecret = vi.fn(async () => JSON.stringify(POLICY));
    const rt = createRuntime({ env: { ...env, LOCK_POLICY_PARAMETER: '/es-lease-locks/dev/lock-policy' }, readSecret });
    expect(readSecret).toHaveBeenCalledWith('/es-lease-locks/dev/lock-policy', POLICY_MAX_AGE_SECONDS);
    await expect(rt.admit(direct, acquire)).resolves.toBeUndefined();
    await expect(rt.admit(direct, { ...acquire, namespace: 'orders' })).rejects.toBeInstanceOf(AccessDeniedError);
  });

  it('fails closed on a policy parameter that does not parse, and refuses nothing that needs no policy', async () => {
    const rt = createRuntime({ env: { ...env, LOCK_POLICY_PARAMETER: '/es-lease-locks/dev/lock-policy' }, readSecret: async () => '{"allow": "everyone"}' });
    await expect(rt.admit(direct, acquire)).rejects.toBeInstanceOf(ConfigError);
    await expect(rt.admit(direct, { action: 'release' })).resolves.toBeUndefined();
  });

  it('refuses every lock call of a stage without a policy, and cannot start with one that does not parse', async () => {
    await expect(createRuntime({ env }).admit(direct, acquire)).rejects.toMatchObject({ name: 'AccessDeniedError', context: { reason: 'no_policy' } });
    expect(() =>
      createRuntime({ env: { ...env, LOCK_POLICY: '{"allow": [{"principals": ["direct"], "actions": ["acquire"], "namespaces": ["a b"]}]}' } }),
    ).toThrow(/LOCK_POLICY: allow\.0\.namespaces\.0: must be a namespace/);
  });
});

describe('createQuotaCheck', () => {
  it('is nothing at all without a limit: no count, no request', () => {
    const count = vi.fn();
    expect(createQuotaCheck({}, count)).toBeUndefined();
    expect(count).not.toHaveBeenCalled();
  });

  it('counts what is live now for the configured limits only, and refuses when held + requested would pass one', async () => {
    const count = vi.fn(async () => ({ owner: 4, namespace: 9 }));
    const check = createQuotaCheck({ perOwner: 5, perNamespace: 10 }, count, () => 1_000)!;
    await expect(check({ namespace: 'orders', owner: 'w-1', keys: 1 })).resolves.toBeUndefined();
    expect(count).toHaveBeenLastCalledWith({ namespace: 'orders', owner: 'w-1', liveAfter: 1_000 });
    const owner = await check({ namespace: 'orders', owner: 'w-1', keys: 2 }).catch((error: unknown) => error as QuotaExceededError);
    expect(owner).toBeInstanceOf(QuotaExceededError);
    expect(owner!.context).toEqual({ per: 'owner', subject: 'w-1', limit: 5, held: 4, requested: 2 });
    expect(owner!.retryable).toBe(true);
    count.mockResolvedValueOnce({ owner: 0, namespace: 10 });
    await expect(check({ namespace: 'orders', owner: 'w-2', keys: 1 })).rejects.toMatchObject({
      name: 'QuotaExceededError',
      context: { per: 'namespace', subject: 'orders', limit: 10, held: 10, requested: 1 },
    });
    const perNamespace = vi.fn(async () => ({ namespace: 0 }));
    await createQuotaCheck({ perNamespace: 3 }, perNamespace)!({ namespace: 'jobs', owner: 'x', keys: 3 });
    expect(perNamespace).toHaveBeenCalledWith({ namespace: 'jobs', liveAfter: expect.any(Number) });
  });
});

describe('createAdmission', () => {
  const orders = { kind: 'http', event: httpEvent('POST', '/acquire', { iam: iamCaller(session('orders-pipeline')) }) } as Invocation;

  it('release and the sweeper ask nothing (the lease token, the schedule); acquire asks the policy, then the quotas', async () => {
    const authorize = vi.fn(async () => {});
    const quota = vi.fn(async () => {});
    const admit = createAdmission({ authorize, quota });
    await admit(orders, { action: 'release' });
    await admit({ kind: 'direct', event: {} }, { action: 'sweep' });
    expect(authorize).not.toHaveBeenCalled();
    expect(quota).not.toHaveBeenCalled();
    await admit(orders, { action: 'acquire', namespace: 'orders', owner: 'w', keys: 2 });
    expect(authorize).toHaveBeenCalledWith({ kind: 'iam', arn: session('orders-pipeline'), name: ORDERS_ROLE }, 'acquire', 'orders');
    expect(quota).toHaveBeenCalledWith({ action: 'acquire', namespace: 'orders', owner: 'w', keys: 2 });
  });

  it('a refused acquire never reaches the quota count', async () => {
    const quota = vi.fn(async () => {});
    const admit = createAdmission({ authorize: createAuthorization({ policy: { kind: 'none' } }, { readSecret: vi.fn() }), quota });
    await expect(admit(orders, { action: 'acquire', namespace: 'orders', owner: 'w', keys: 1 })).rejects.toBeInstanceOf(AccessDeniedError);
    expect(quota).not.toHaveBeenCalled();
  });

  it('renew is judged as acquire in the namespace of the lease (decoded once, at the request boundary)', async () => {
    const authorize = vi.fn(async () => {});
    const admit = createAdmission({ authorize });
    await admit(orders, { action: 'renew', namespace: 'payments' });
    expect(authorize).toHaveBeenCalledWith(expect.objectContaining({ name: ORDERS_ROLE }), 'acquire', 'payments', 'renew');
    expect(authorize).toHaveBeenCalledTimes(1);
  });
});

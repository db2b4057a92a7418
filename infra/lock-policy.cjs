/**
 * LOCK_POLICY for the functions (who may lock what: functions/runtime/lock-policy.ts), from the stage
 * params `lockPolicy` (JSON text, a YAML map in the params block, `allow-all`, or empty) and
 * `lockPolicyParameter` (an SSM parameter or Secrets Manager secret holding the JSON instead).
 * Checked here, at package time, as far as a deploy can be stopped before anything changes: the JSON
 * parses and has an `allow` list; `allow-all` (no authorization, the local stack's default) is refused
 * in every stage but `local` unless the param i-accept-unsafe-defaults=true asks for it (refused itself
 * in prod and production: infra/unsafe.cjs); the two params are not both set; the policy fits in Lambda's 4 KB of environment; the
 * parameter is one the functions' role may read. The functions check every statement at cold start
 * and refuse to start on a policy that does not parse (they never fall back to allowing).
 * Empty (the default in every deployed stage): no policy, and every acquire, renew, inspect and list
 * is refused until one is configured.
 * infra/lock-policy-allow-all.cjs carries the allow-all rule to run time (LOCK_POLICY_ALLOW_ALL).
 */
const { unsafeAllowed, refusal } = require('./unsafe.cjs');

const MAX_LENGTH = 3000;

module.exports = async ({ resolveVariable }) => {
  const stage = await resolveVariable('sls:stage');
  const raw = await resolveVariable("param:lockPolicy, ''");
  const text = raw !== null && typeof raw === 'object' ? JSON.stringify(raw) : String(raw ?? '').trim();
  const parameter = String((await resolveVariable("param:lockPolicyParameter, ''")) ?? '').trim();
  if (text !== '' && parameter !== '') {
    throw new Error('params lockPolicy and lockPolicyParameter: both are set; keep one (the policy inline, or the name of the SSM parameter that holds it)');
  }
  if (parameter !== '' && !new RegExp(`(^|[/:])es-lease-locks/${stage}/`).test(parameter)) {
    throw new Error(
      `param lockPolicyParameter: ${parameter} is outside /es-lease-locks/${stage}/, the only parameters and secrets the functions' role may read (custom.iamStatements); name it e.g. /es-lease-locks/${stage}/lock-policy`,
    );
  }
  if (text === '' || text === 'allow-all') {
    if (text === 'allow-all' && !(await unsafeAllowed(resolveVariable))) {
      throw refusal(
        stage,
        'param lockPolicy: allow-all',
        'no authorization: any caller may lock, inspect and list anything',
        'write the policy (JSON: {"allow": [...]})',
      );
    }
    return text;
  }
  let policy;
  try {
    policy = JSON.parse(text);
  } catch (error) {
    throw new Error(
      `param lockPolicy: must be JSON ({"allow": [{"principals": [...], "actions": [...], "namespaces": [...]}]}), a map, or allow-all (${error.message})`,
    );
  }
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy) || !Array.isArray(policy.allow)) {
    throw new Error(
      'param lockPolicy: must be an object with an "allow" list of statements ({"allow": [{"principals": [...], "actions": [...], "namespaces": [...]}]})',
    );
  }
  const compact = JSON.stringify(policy);
  if (compact.length > MAX_LENGTH) {
    throw new Error(
      `param lockPolicy: ${compact.length} characters, more than ${MAX_LENGTH} (Lambda's environment holds 4 KB in all); keep it in an SSM parameter and set lockPolicyParameter`,
    );
  }
  return compact;
};

/**
 * LOCK_POLICY_ALLOW_ALL for the functions: whether `allow-all` read at run time from the policy
 * parameter (lockPolicyParameter, which no package-time check can see) is accepted. The rule of
 * infra/unsafe.cjs, as for an inline lockPolicy: `true` in `local`, or with i-accept-unsafe-defaults=true
 * (itself refused in prod and production); `false` anywhere else, and the functions then refuse
 * every call that needs the policy until it names its callers (functions/runtime/authorization.ts).
 */
const { unsafeAllowed } = require('./unsafe.cjs');

module.exports = async ({ resolveVariable }) => String(await unsafeAllowed(resolveVariable));

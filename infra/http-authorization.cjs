/**
 * The AuthorizationType of every HTTP API route, from the stage param `httpAuthorizationType`:
 * AWS_IAM (the default in every stage but `local`: callers sign their requests with SigV4 and need
 * execute-api:Invoke on the route) or NONE. Checked at package time: only `local` packages NONE,
 * since without IAM the namespace policy has no caller to judge (every call is anonymous) and anything
 * that reaches the API could lock, inspect and list; another stage only with the param
 * i-accept-unsafe-defaults=true, itself refused in prod and production (infra/unsafe.cjs).
 */
const { unsafeAllowed, refusal } = require('./unsafe.cjs');

const TYPES = ['AWS_IAM', 'NONE'];

module.exports = async ({ resolveVariable }) => {
  const type = String((await resolveVariable("param:httpAuthorizationType, 'AWS_IAM'")) ?? '').trim() || 'AWS_IAM';
  if (!TYPES.includes(type)) throw new Error(`param httpAuthorizationType: must be AWS_IAM or NONE (got ${type})`);
  // Always asked, so that the param is refused in prod and production whatever else is set.
  const allowed = await unsafeAllowed(resolveVariable);
  if (type !== 'AWS_IAM' && !allowed) {
    throw refusal(
      await resolveVariable('sls:stage'),
      `param httpAuthorizationType: ${type}`,
      'API Gateway names no caller, so the namespace policy refuses every HTTP call or, with lockPolicy allow-all, lets anyone who reaches the API lock anything',
      'set AWS_IAM',
    );
  }
  return type;
};

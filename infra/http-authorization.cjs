/**
 * The AuthorizationType of every HTTP API route, from the stage param `httpAuthorizationType`:
 * AWS_IAM (the default in every stage but `local`: callers sign their requests with SigV4 and need
 * execute-api:Invoke on the route) or NONE. Checked at package time: prod packages only with AWS_IAM,
 * since without it the namespace policy has no caller to judge (every call is anonymous) and anything
 * that reaches the API could lock, inspect and list.
 */
const TYPES = ['AWS_IAM', 'NONE'];

module.exports = async ({ resolveVariable }) => {
  const type = String((await resolveVariable("param:httpAuthorizationType, 'AWS_IAM'")) ?? '').trim() || 'AWS_IAM';
  if (!TYPES.includes(type)) throw new Error(`param httpAuthorizationType: must be AWS_IAM or NONE (got ${type})`);
  const stage = await resolveVariable('sls:stage');
  if (stage === 'prod' && type !== 'AWS_IAM') {
    throw new Error(
      `param httpAuthorizationType: must be AWS_IAM in the prod stage (got ${type}): without it API Gateway names no caller, so the namespace policy refuses every HTTP call, or, with lockPolicy allow-all, lets anyone who reaches the API lock anything`,
    );
  }
  return type;
};

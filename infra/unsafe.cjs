/**
 * The rule every package-time guard on an unsafe setting shares (infra/http-authorization.cjs,
 * infra/lock-policy.cjs, infra/opensearch-auth.cjs): an unsafe setting (routes without IAM
 * authorization, lockPolicy allow-all, OpenSearch without SigV4) packages in the `local` stage
 * (serverless-offline: `npm run dev`, the tests) and nowhere else, unless the loudly named param
 * `i-accept-unsafe-defaults=true` says the operator wants it; that param is itself refused in a
 * production stage (`prod` or `production`, in any letter case), where nothing unsafe packages at all.
 * A stage's name is the one thing a deploy cannot get wrong by omission: a new stage (`staging`,
 * `eu-prod`, a developer's own) starts from the safe defaults, not from the local stack's.
 */
const PARAM = 'i-accept-unsafe-defaults';
const PRODUCTION_STAGES = ['prod', 'production'];

const isProduction = (stage) => PRODUCTION_STAGES.includes(String(stage).toLowerCase());

/**
 * Whether this stage may package an unsafe setting: true in `local`, or with the param set to true.
 * Throws when the param is not true/false, or when it is true in a production stage.
 */
const unsafeAllowed = async (resolveVariable) => {
  const stage = String(await resolveVariable('sls:stage'));
  const raw = String((await resolveVariable(`param:${PARAM}, 'false'`)) ?? '')
    .trim()
    .toLowerCase();
  if (!['', 'true', 'false'].includes(raw)) throw new Error(`param ${PARAM}: must be true or false (got ${raw})`);
  const accepted = raw === 'true';
  if (accepted && isProduction(stage)) {
    throw new Error(
      `param ${PARAM}: refused in the ${stage} stage; nothing unsafe packages there, so drop the param and fix the setting it was meant to allow`,
    );
  }
  return stage === 'local' || accepted;
};

/** The one-line refusal of an unsafe setting `what` in `stage`, naming the param that would allow it. */
const refusal = (stage, what, why, fix) =>
  new Error(
    isProduction(stage)
      ? `${what} is refused in the ${stage} stage (${why}); ${fix}`
      : `${what} is refused in the ${stage} stage (${why}); ${fix}, or pass --param="${PARAM}=true" to accept it (refused in prod and production)`,
  );

module.exports = { PARAM, PRODUCTION_STAGES, isProduction, unsafeAllowed, refusal };

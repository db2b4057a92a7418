/**
 * OPENSEARCH_AUTH for the functions, from the stage params `lockStore` and `openSearchAuth`
 * (`sigv4`, `none`, or empty: the functions then decide from the URL, functions/runtime/store-config.ts).
 * Checked here, at package time, so that deployed stages fail safe: with the lock store on OpenSearch,
 * every stage but `local` only packages when every request is SigV4-signed with the function's role
 * (another stage only with the param i-accept-unsafe-defaults=true, itself refused in prod and
 * production: infra/unsafe.cjs). An unsigned lock store is
 * one that anything with network access to it can take, release or forge locks in. The check lives
 * here rather than in the function configuration because only the package step knows the stage, and
 * because it stops the deploy before anything changes, instead of every cold start after it.
 */
const { unsafeAllowed, refusal } = require('./unsafe.cjs');

const STORES = ['elasticsearch', 'opensearch'];
const AUTHS = ['sigv4', 'none'];

const text = async (resolveVariable, name, fallback) => String((await resolveVariable(`param:${name}, '${fallback}'`)) ?? '').trim();

module.exports = async ({ resolveVariable }) => {
  const lockStore = (await text(resolveVariable, 'lockStore', 'elasticsearch')) || 'elasticsearch';
  if (!STORES.includes(lockStore)) throw new Error(`param lockStore: must be elasticsearch or opensearch (got ${lockStore})`);
  const auth = await text(resolveVariable, 'openSearchAuth', '');
  if (auth !== '' && !AUTHS.includes(auth)) throw new Error(`param openSearchAuth: must be sigv4 or none (got ${auth})`);
  const allowed = await unsafeAllowed(resolveVariable);
  // The Elasticsearch functions read no OPENSEARCH_* variable: pass nothing rather than a value that looks used.
  if (lockStore !== 'opensearch') return '';
  if (auth !== 'sigv4' && !allowed) {
    throw refusal(
      await resolveVariable('sls:stage'),
      `param openSearchAuth: ${auth || 'nothing'} (not sigv4) with lockStore opensearch`,
      'unsigned requests would let anything that reaches the cluster take, release or forge locks',
      'set sigv4',
    );
  }
  return auth;
};

/**
 * `provider.iam.role.statements` for serverless.yml: the service's own statements
 * (`custom.iamStatements`) and, when the stage param `openSearchDomainArn` is set, HTTP access to that
 * Amazon OpenSearch Service domain, which the functions reach with SigV4-signed requests as their
 * role (OPENSEARCH_AUTH=sigv4). Empty: no OpenSearch statement at all, as infra/vpc.cjs gives no VPC.
 * A value that is not a domain ARN, or a domain for a stage whose lock store is Elasticsearch, stops
 * `serverless package` with the param's name rather than deploying a policy nobody uses.
 */
const DOMAIN_ARN = /^arn:aws(-[a-z]+)*:es:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:domain\/[a-z][a-z0-9-]{2,27}$/;
/** What the lock store sends: GET (reads, search), PUT/POST (writes, bulk), DELETE, HEAD (exists). */
const ACTIONS = ['es:ESHttpGet', 'es:ESHttpPut', 'es:ESHttpPost', 'es:ESHttpDelete', 'es:ESHttpHead'];

const text = async (resolveVariable, name, fallback) => String((await resolveVariable(`param:${name}, '${fallback}'`)) ?? '').trim();

module.exports = async ({ resolveVariable }) => {
  const statements = await resolveVariable('self:custom.iamStatements');
  const domainArn = await text(resolveVariable, 'openSearchDomainArn', '');
  if (domainArn === '') return statements;
  if (!DOMAIN_ARN.test(domainArn)) {
    throw new Error(`param openSearchDomainArn: ${domainArn} is not a domain ARN (arn:aws:es:<region>:<account id>:domain/<domain name>)`);
  }
  const lockStore = (await text(resolveVariable, 'lockStore', 'elasticsearch')) || 'elasticsearch';
  if (lockStore !== 'opensearch') {
    throw new Error(`param openSearchDomainArn: set, but lockStore is ${lockStore}; set lockStore to opensearch, or leave openSearchDomainArn empty`);
  }
  // The domain itself (requests to its root, such as GET /) and every path below it (indices, documents, _bulk, _cluster/health).
  return [...statements, { Effect: 'Allow', Action: ACTIONS, Resource: [domainArn, `${domainArn}/*`] }];
};

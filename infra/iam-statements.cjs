/**
 * `provider.iam.role.statements` for serverless.yml: the service's own statements with, when the
 * OpenSearch params ask for it, its domain's (infra/opensearch-iam.cjs), then the wake-up channels'
 * (infra/wake-iam.cjs). Each file checks its own params.
 */
const openSearchStatements = require('./opensearch-iam.cjs');
const wakeStatements = require('./wake-iam.cjs');

module.exports = async (context) => [...(await openSearchStatements(context)), ...(await wakeStatements(context))];

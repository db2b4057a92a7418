/** npm run cluster:start | cluster:stop | cluster:status [-- --nodes N], and opensearch-cluster:* (--product opensearch) */
import { numberFlag, parseFlags, printHelp, UsageError } from '../../tools/cli/flags.js';
import { runCli } from '../../tools/cli/run-cli.js';
import { clusterNodes, nodePid, startCluster, stopCluster } from './cluster.js';
import { DISTRIBUTIONS, distributionNamed } from './distribution.js';

const USAGE = `usage: npm run cluster:start | cluster:stop | cluster:status [-- --nodes N]
       npm run opensearch-cluster:start | opensearch-cluster:stop | opensearch-cluster:status [-- --nodes N]

The project's local multi-node cluster (what npm run faults uses): Elasticsearch on 127.0.0.1:9301 and up
(ES_CLUSTER_PORT), or OpenSearch on 127.0.0.1:9351 and up (OPENSEARCH_CLUSTER_PORT); transport ports 100 above.
  --nodes N    how many nodes, 1 to 9 (default 3)
  --product P  ${DISTRIBUTIONS.map((d) => d.name).join(' or ')} (default elasticsearch)
  --verbose    print stack traces on errors (also DEBUG=1)
Exit codes: 0 done (status: all running), 1 failed (status: some not running), 2 a usage mistake.`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { nodes: { type: 'string' }, product: { type: 'string' } }, { positionals: true });
  if (printHelp(values, USAGE)) return 0;
  const distribution = distributionNamed(values.product as string | undefined);
  const [command, extra] = positionals;
  if (command === undefined) throw new UsageError('a command is needed: start, stop or status');
  if (extra !== undefined) throw new UsageError(`${extra}: unexpected argument`);
  const count = numberFlag('--nodes', values.nodes as string | undefined, { integer: true, min: 1, max: 9 }, 3);
  switch (command) {
    case 'start':
      await startCluster(count, undefined, distribution);
      return 0;
    case 'stop':
      console.log(`stopped ${await stopCluster(Math.max(count, 9), distribution)} node(s)`);
      return 0;
    case 'status': {
      const nodes = clusterNodes(count, undefined, distribution);
      for (const node of nodes) console.log(`${node.name}  ${node.url}  ${nodePid(node) ? `pid ${nodePid(node)}` : 'not running'}  logs ${node.logFile}`);
      return nodes.every((node) => nodePid(node)) ? 0 : 1;
    }
    default:
      throw new UsageError(`${command}: unknown command; expected start, stop or status`);
  }
}

runCli(main);

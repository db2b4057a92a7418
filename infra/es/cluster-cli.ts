/** npm run cluster:start | cluster:stop | cluster:status [-- --nodes N] */
import { clusterNodes, nodePid, startCluster, stopCluster } from './cluster.js';
import { LocalEsError } from './node.js';

function nodesFlag(argv: string[]): number {
  const at = argv.indexOf('--nodes');
  const value = at === -1 ? 3 : Number(argv[at + 1]);
  if (!Number.isInteger(value) || value < 1 || value > 9) throw new LocalEsError(`--nodes must be an integer from 1 to 9 (got ${argv[at + 1]})`);
  return value;
}

async function main(command: string | undefined, argv: string[]): Promise<number> {
  const count = nodesFlag(argv);
  switch (command) {
    case 'start':
      await startCluster(count);
      return 0;
    case 'stop':
      console.log(`stopped ${await stopCluster(Math.max(count, 9))} node(s)`);
      return 0;
    case 'status': {
      const nodes = clusterNodes(count);
      for (const node of nodes) console.log(`${node.name}  ${node.url}  ${nodePid(node) ? `pid ${nodePid(node)}` : 'not running'}  logs ${node.logFile}`);
      return nodes.every((node) => nodePid(node)) ? 0 : 1;
    }
    default:
      console.error('usage: tsx infra/es/cluster-cli.ts start|stop|status [--nodes N]');
      return 2;
  }
}

main(process.argv[2], process.argv.slice(3)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof LocalEsError ? `error: ${error.message}` : error);
    process.exit(1);
  },
);

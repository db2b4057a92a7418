/** npm run es:start | es:stop | es:status, and opensearch:start | opensearch:stop | opensearch:status (--product opensearch) */
import { parseFlags, printHelp, UsageError } from '../../tools/cli/flags.js';
import { runCli } from '../../tools/cli/run-cli.js';
import { DISTRIBUTIONS, distributionNamed } from './distribution.js';
import { startLocal, stopLocal } from './local.js';
import { localNode } from './node.js';
import { isRunning } from './probe.js';

const USAGE = `usage: npm run es:start | es:stop | es:status   (tsx infra/es/cli.ts start|stop|status)
       npm run opensearch:start | opensearch:stop | opensearch:status   (... --product opensearch)

The project's own node: Elasticsearch on 127.0.0.1:9200 (ES_LOCAL_PORT), or OpenSearch on 127.0.0.1:9250 (OPENSEARCH_LOCAL_PORT).
  --product P  ${DISTRIBUTIONS.map((d) => d.name).join(' or ')} (default elasticsearch)
  --verbose    print stack traces on errors (also DEBUG=1)
Exit codes: 0 done (status: running), 1 failed (status: not running), 2 a usage mistake.`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, { product: { type: 'string' } }, { positionals: true });
  if (printHelp(values, USAGE)) return 0;
  const distribution = distributionNamed(values.product as string | undefined);
  const { product } = distribution;
  const [command, extra] = positionals;
  if (command === undefined) throw new UsageError('a command is needed: start, stop or status');
  if (extra !== undefined) throw new UsageError(`${extra}: unexpected argument`);
  const node = localNode(undefined, distribution);
  switch (command) {
    case 'start': {
      const { started } = await startLocal({ distribution });
      console.log(started ? `${product} started at ${node.url}` : `${product} already running at ${node.url}`);
      console.log(`logs: ${node.logFile}`);
      return 0;
    }
    case 'stop': {
      const stopped = await stopLocal({ distribution });
      console.log(stopped ? `${product} stopped` : `${product} was not running (no live pid file)`);
      return 0;
    }
    case 'status': {
      const running = await isRunning(node);
      console.log(running ? `running at ${node.url}\nlogs: ${node.logFile}` : `not running (would listen on ${node.url})`);
      return running ? 0 : 1;
    }
    default:
      throw new UsageError(`${command}: unknown command; expected start, stop or status`);
  }
}

runCli(main);

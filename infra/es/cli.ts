/** npm run es:start | es:stop | es:status */
import { parseFlags, printHelp, runCli, UsageError } from '../lib/cli.js';
import { startLocal, stopLocal } from './local.js';
import { localNode } from './node.js';
import { isRunning } from './probe.js';

const USAGE = `usage: npm run es:start | es:stop | es:status   (tsx infra/es/cli.ts start|stop|status)

The project's own Elasticsearch node on 127.0.0.1:9200 (ES_LOCAL_PORT). --verbose prints stack traces.
Exit codes: 0 done (status: running), 1 failed (status: not running), 2 a usage mistake.`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {}, { positionals: true });
  if (printHelp(values, USAGE)) return 0;
  const [command, extra] = positionals;
  if (command === undefined) throw new UsageError('a command is needed: start, stop or status');
  if (extra !== undefined) throw new UsageError(`${extra}: unexpected argument`);
  const node = localNode();
  switch (command) {
    case 'start': {
      const { started } = await startLocal();
      console.log(started ? `Elasticsearch started at ${node.url}` : `Elasticsearch already running at ${node.url}`);
      console.log(`logs: ${node.logFile}`);
      return 0;
    }
    case 'stop': {
      const stopped = await stopLocal();
      console.log(stopped ? 'Elasticsearch stopped' : 'Elasticsearch was not running (no live pid file)');
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

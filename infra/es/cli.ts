/** npm run es:start | es:stop | es:status */
import { startLocal, stopLocal } from './local.js';
import { LocalEsError, localNode } from './node.js';
import { isRunning } from './probe.js';

async function main(command: string | undefined): Promise<number> {
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
      console.error('usage: tsx infra/es/cli.ts start|stop|status');
      return 2;
  }
}

main(process.argv[2]).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof LocalEsError ? `error: ${error.message}` : error);
    process.exit(1);
  },
);

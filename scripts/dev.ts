/**
 * `npm run dev`: the lock store (Elasticsearch, or OpenSearch with --store opensearch) + the lock
 * functions behind serverless-offline on this machine.
 * HTTP API on http://localhost:3000 (PORT), Lambda invoke API on http://localhost:3002 (LAMBDA_PORT).
 * Function logs are printed; Ctrl-C stops everything this started.
 */
import type { SearchProduct } from '../functions/store/search-client.js';
import { chooseStore, STORE_FLAG, STORE_RULE } from '../infra/lib/store-target.js';
import { numberFlag, parseFlags, printHelp } from '../tools/cli/flags.js';
import { describeFailure, isVerbose, runCli } from '../tools/cli/run-cli.js';
import { startStack } from './stack.js';

const USAGE = `usage: npm run dev [-- --store S] [--quiet]

The lock store (ES_URL, OPENSEARCH_URL, or the project's own node of that product) + the lock index +
the functions behind serverless-offline, told which store to use (LOCK_STORE and its URL): HTTP API
on PORT (default 3000), Lambda invoke API on LAMBDA_PORT (default 3002).
  --store S    ${STORE_RULE}
  --quiet      do not print the functions' logs
  --verbose    print stack traces on errors (also DEBUG=1)
Exit codes: 0 stopped with Ctrl-C, 1 could not start (e.g. the store unreachable), 2 a usage mistake.`;

runCli(async (argv) => {
  const { values } = parseFlags(argv, { ...STORE_FLAG, quiet: { type: 'boolean' } });
  if (printHelp(values, USAGE)) return 0;
  const store = chooseStore(values.store);
  const port = numberFlag('PORT', process.env.PORT, { integer: true, min: 1, max: 65535 }, 3000);
  const lambdaPort = numberFlag('LAMBDA_PORT', process.env.LAMBDA_PORT, { integer: true, min: 1, max: 65535 }, 3002);
  await serve(store, port, lambdaPort, values.quiet === true);
  return undefined;
});

async function serve(store: SearchProduct, port: number, lambdaPort: number, quiet: boolean): Promise<void> {
  const env: Record<string, string> = { POWERTOOLS_LOG_LEVEL: process.env.POWERTOOLS_LOG_LEVEL ?? 'INFO' };
  for (const name of ['LOCK_INDEX', 'LOCK_TOKEN_SIGNING_KEY', 'SWEEP_RATE', 'POWERTOOLS_METRICS_DISABLED']) {
    if (process.env[name]) env[name] = process.env[name]!;
  }

  console.log(`starting the lock store (${store}) and serverless-offline; the first run bundles the functions...`);
  const stack = await startStack({
    store,
    port,
    lambdaPort,
    portNames: { port: 'PORT', lambdaPort: 'LAMBDA_PORT' },
    env,
    watch: true,
    log: (line) => {
      if (!quiet && line.trim() !== '') console.log(`  | ${line}`);
    },
  });

  const base = `http://localhost:${port}`;
  console.log(`
Lock service ready.
  HTTP API          ${base}   (POST /acquire /renew /release, GET /inspect /locks /health)
  Lambda invoke API http://localhost:${lambdaPort}   (functions ${stack.functionName('<name>')}: acquire, renew, release, inspect, list, health, sweeper)
  ${stack.store.name.padEnd(17)} ${stack.store.url}   index ${stack.lockIndex}

Try:
  curl -s ${base}/health
  curl -s -X POST ${base}/acquire -H 'content-type: application/json' \\
       -d '{"namespace":"orders","granularity":"document","ids":["o-1"],"owner":"me","ttlMs":30000}'
  curl -s -X POST ${base}/renew   -H 'content-type: application/json' -d '{"leaseToken":"<leaseToken>","ttlMs":30000}'
  curl -s -X POST ${base}/release -H 'content-type: application/json' -d '{"leaseToken":"<leaseToken>"}'
  curl -s '${base}/inspect?namespace=orders&granularity=document&id=o-1'
  curl -s '${base}/locks?namespace=orders'
  curl -s -X POST http://localhost:${lambdaPort}/2015-03-31/functions/${stack.functionName('sweeper')}/invocations -d '{}'

Ctrl-C to stop.`);

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping...`);
    try {
      await stack.stop();
      console.log('stopped.');
      process.exit(0);
    } catch (error) {
      console.error(describeFailure(error, isVerbose()).text);
      process.exit(1);
    }
  };
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}

/**
 * npm run k6:install: makes sure the pinned k6 is there (on PATH at that version, or built once into
 * the user cache) and prints its path. The orchestrator does the same on its own (k6-binary.ts).
 */
import { parseFlags, printHelp } from '../../../tools/cli/flags.js';
import { runCli } from '../../../tools/cli/run-cli.js';
import { ensureK6, K6_VERSION, toolsCacheDir } from '../k6-binary.js';

const USAGE = `usage: npm run k6:install

Makes sure k6 ${K6_VERSION} is available (the one on PATH if it is that version, else a build with
\`go install\` cached in ${toolsCacheDir()}, K6_CACHE overrides) and prints its path.
  --verbose    print stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (e.g. no Go toolchain), 2 a usage mistake.`;

runCli(async (argv) => {
  const { values } = parseFlags(argv, {});
  if (printHelp(values, USAGE)) return 0;
  console.log(await ensureK6());
  return undefined;
});

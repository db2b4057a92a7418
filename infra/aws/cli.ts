/** npm run aws:start | aws:stop | aws:status */
import { parseFlags, printHelp, UsageError } from '../../tools/cli/flags.js';
import { runCli } from '../../tools/cli/run-cli.js';
import { EMULATOR_PYTHON_ENV, EMULATOR_URL_ENV, localEmulator, MOTO_VERSION } from './emulator.js';
import { startEmulator, stopEmulator } from './local.js';
import { emulatorPid, isRunning } from './probe.js';

const USAGE = `usage: npm run aws:start | aws:stop | aws:status   (tsx infra/aws/cli.ts start|stop|status)

The project's AWS API emulator: moto ${MOTO_VERSION} in server mode (Step Functions, SQS, EventBridge) on
127.0.0.1:5005 (AWS_EMULATOR_PORT), installed once into a virtualenv in the user cache from
python3 (${EMULATOR_PYTHON_ENV}). Tests use ${EMULATOR_URL_ENV} instead when it is set; this command ignores it.
  --verbose    print stack traces on errors (also DEBUG=1)
Exit codes: 0 done (status: running), 1 failed (status: not running), 2 a usage mistake.`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, {}, { positionals: true });
  if (printHelp(values, USAGE)) return 0;
  const [command, extra] = positionals;
  if (command === undefined) throw new UsageError('a command is needed: start, stop or status');
  if (extra !== undefined) throw new UsageError(`${extra}: unexpected argument`);
  const emulator = localEmulator();
  switch (command) {
    case 'start': {
      const { started } = await startEmulator();
      console.log(started ? `moto started at ${emulator.url}` : `moto already running at ${emulator.url}`);
      console.log(`logs: ${emulator.logFile}`);
      return 0;
    }
    case 'stop': {
      const stopped = await stopEmulator();
      console.log(stopped ? 'moto stopped' : 'moto was not running (no live pid file)');
      return 0;
    }
    case 'status': {
      const running = await isRunning(emulator);
      console.log(
        running ? `running at ${emulator.url} (pid ${emulatorPid(emulator)})\nlogs: ${emulator.logFile}` : `not running (would listen on ${emulator.url})`,
      );
      return running ? 0 : 1;
    }
    default:
      throw new UsageError(`${command}: unknown command; expected start, stop or status`);
  }
}

runCli(main);

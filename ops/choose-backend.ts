/**
 * Which backend the flags choose: a stage over HTTP with --url (or LOCKS_URL), else straight against
 * the cluster (ES_URL / OPENSEARCH_URL, else the project's own node). `sweep` with --stage or
 * --sweeper-function invokes the sweeper function directly (the third way), with or without --url.
 */

import { sharedSettingsFromEnv } from '../functions/runtime/config.js';
import { chooseStore } from '../infra/lib/store-target.js';
import { regionOfHost } from '../packages/client/src/sigv4.js';
import type { SharedSettings } from '../packages/engine/src/settings.js';
import { UsageError } from '../tools/cli/flags.js';
import { type Flags, stringFlag } from './args.js';
import type { OpsBackend } from './backend.js';
import { clusterBackend, clusterEndpoint } from './cluster-backend.js';
import { httpBackend, stageUrl } from './http-backend.js';
import { type SweeperTarget, sweeperBackend, sweeperOfStage } from './sweeper-invoke.js';

type Env = Record<string, string | undefined>;

const INDEX_NAME = /^[a-z0-9][a-z0-9._-]*$/;
const STAGE_NAME = /^[A-Za-z0-9-]+$/;

/** The stage's URL: --url, else LOCKS_URL; undefined for the cluster. */
function stageUrlOf(flags: Flags, env: Env): { url: string; source: string } | undefined {
  const flag = stringFlag(flags, 'url');
  if (flag !== undefined) return { url: flag, source: '--url' };
  const fromEnv = env.LOCKS_URL?.trim();
  return fromEnv ? { url: fromEnv, source: 'LOCKS_URL' } : undefined;
}

/** The sweeper function to invoke, when --stage or --sweeper-function names one. */
function sweeperOf(flags: Flags, region: string | undefined): SweeperTarget | undefined {
  const named = stringFlag(flags, 'sweeper-function');
  const stage = stringFlag(flags, 'stage');
  const endpoint = stringFlag(flags, 'lambda-endpoint');
  if (named !== undefined && stage !== undefined) throw new UsageError('--stage and --sweeper-function: give one (the stage names its sweeper)');
  if (stage !== undefined && !STAGE_NAME.test(stage)) throw new UsageError(`--stage: must be letters, digits and "-" (got "${stage}")`);
  if (named === undefined && stage === undefined) {
    if (endpoint !== undefined) throw new UsageError('--lambda-endpoint: only with --stage or --sweeper-function');
    return undefined;
  }
  if (endpoint !== undefined) stageUrl(endpoint, '--lambda-endpoint');
  return {
    functionName: named ?? sweeperOfStage(stage!),
    ...(region ? { region } : {}),
    ...(endpoint !== undefined ? { endpoint } : {}),
  };
}

/**
 * The shared settings this process is given (MAX_CLOCK_SKEW_MS, read as the functions read it). Unset,
 * the engine takes the lock index's; set to another value than the lock index records, it refuses.
 */
function sharedSettingsFrom(env: Env): SharedSettings {
  const given = sharedSettingsFromEnv(env);
  if ('problems' in given) throw new UsageError(given.problems[0]!);
  return given;
}

/** Checks the flags for the backend without reaching anything; the returned function makes it. */
export function chooseBackend(command: string, flags: Flags, env: Env = process.env): () => OpsBackend {
  const stage = stageUrlOf(flags, env);
  const region = stringFlag(flags, 'region') ?? (stage ? regionOfHost(stageUrl(stage.url, stage.source).hostname) : undefined);
  const sweeper = sweeperOf(flags, region);
  if (sweeper && command !== 'sweep') {
    throw new UsageError(`--${flags.stage !== undefined ? 'stage' : 'sweeper-function'}: only for sweep (the other commands go through --url)`);
  }
  if (flags.unsigned && !stage) throw new UsageError("--unsigned: only with --url (it is about the stage's HTTP API)");
  if (sweeper) return () => sweeperBackend(sweeper);
  if (stage && command === 'sweep') {
    throw new UsageError('--stage or --sweeper-function: sweep on a stage invokes its sweeper function (the HTTP API has no sweep route)');
  }
  if (stage) {
    for (const flag of ['store', 'index'])
      if (flags[flag] !== undefined) throw new UsageError(`--${flag}: not with ${stage.source} (that is for the cluster backend)`);
    stageUrl(stage.url, stage.source);
    return () => httpBackend({ url: stage.url, ...(region ? { region } : {}), unsigned: flags.unsigned === true });
  }
  if (flags.region !== undefined) throw new UsageError('--region: only with --url, --stage or --sweeper-function');
  const product = chooseStore(flags.store, env);
  const index = stringFlag(flags, 'index') ?? env.LOCK_INDEX ?? 'locks';
  if (!INDEX_NAME.test(index)) {
    throw new UsageError(
      `${flags.index !== undefined ? '--index' : 'LOCK_INDEX'}: must be an index name: lowercase letters, digits, ".", "_", "-" (got "${index}")`,
    );
  }
  const endpoint = clusterEndpoint(product);
  const shared = sharedSettingsFrom(env);
  return () => clusterBackend(endpoint, index, shared);
}

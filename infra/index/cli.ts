/**
 * npm run index:create [-- --index name] [--shards N] [--first | --epoch N | --adopt INDEX | --recreate [--force]]:
 * creates the lock index if it does not exist, as a new incarnation whose fencing epoch continues above
 * every earlier one's; or makes the next incarnation in place of the current one; or makes an index
 * restored from a snapshot the lock index (a new incarnation too).
 */

import { sharedSettingsFromEnv } from '../../functions/runtime/config.js';
import {
  adoptLockIndex,
  ensureLockIndex,
  epochOfIncarnation,
  IncarnationEpochError,
  LiveTicketsError,
  lockIndexIncarnation,
  lockIndexShards,
  MAX_LOCK_INDEX_SHARDS,
  REGISTRY_INDEX,
  readSharedSettings,
  recordSharedSettings,
  recreateLockIndex,
} from '../../functions/store/index.js';
import { MAX_EPOCH } from '../../packages/engine/src/fencing.js';
import { allSharedSettings, SHARED_SETTINGS, type SharedSettingName, type SharedSettings } from '../../packages/engine/src/settings.js';
import { numberFlag, parseFlags, printHelp, UsageError } from '../../tools/cli/flags.js';
import { runCli } from '../../tools/cli/run-cli.js';
import { chooseStore, resolveStore, STORE_FLAG, STORE_RULE } from '../lib/store-target.js';

const USAGE = `usage: npm run index:create [-- --store S] [--index NAME] [--shards N] [--first | --epoch N | --adopt INDEX [--epoch N] | --recreate [--force] | --record-settings]

Creates the lock index (an alias over one concrete index, its incarnation) if it does not exist, on
ES_URL (with ES_API_KEY), OPENSEARCH_URL (--store opensearch; SigV4 for *.amazonaws.com, or
OPENSEARCH_AUTH) or the project's own node of that product (started if needed). Each incarnation gets
a fencing epoch one above every earlier incarnation's (recorded in the hidden index ${REGISTRY_INDEX}),
so that its fencing tokens start above every token an earlier one issued (docs/lock-index.md).
  --store S       ${STORE_RULE}
  --index NAME    the alias (default LOCK_INDEX, else locks)
  --shards N      primary shards of a new lock index (1..${MAX_LOCK_INDEX_SHARDS}, default 1): each namespace lives on one
                  shard (requests are routed by namespace), so its fencing tokens stay monotonic, and namespaces
                  spread over the shards. An existing lock index keeps its shard count
  --first         a brand-new lock index: start at epoch 1 when nothing records an earlier incarnation
  --epoch N       the new incarnation's epoch (1..${MAX_EPOCH}) when the registry was lost: above the epoch of
                  every fencing token your systems have seen (a token's epoch: its value / 10^16, rounded down)
  --adopt INDEX   make INDEX (a lock index restored from a snapshot under that name) the lock index: copy it
                  into a new incarnation with the next epoch, close the incarnation the alias leaves (a write
                  block) and copy its unexpired completion records over, point the alias at the copy, delete INDEX
  --recreate      make the next incarnation now (with the next epoch, and --shards N if given): close the
                  current one, copy its unexpired completion records over (outcomes only), move the alias,
                  delete the current one (its leases and queued waiters with it). Refused while the current
                  one holds live tickets (queued waiters): nothing would tell those waiters
  --force         with --recreate: go ahead although live tickets would be dropped untold
  --record-settings
                  record the shared settings in a lock index made before they were recorded
The shared settings (the clock-skew allowance: MAX_CLOCK_SKEW_MS, default ${allSharedSettings().maxClockSkewMs}) are recorded with
each new incarnation, and every process on the lock index takes them from there; a process given
another value refuses to work on it. Unset here: a new incarnation keeps the one it replaces records.
  --verbose       print stack traces on errors (also DEBUG=1)
Exit codes: 0 done, 1 failed (e.g. the server unreachable), 2 a usage mistake.`;

const INDEX_NAME = /^[a-z0-9][a-z0-9._-]*$/;

/** The refusals that the flags answer, as what to run instead. */
function asUsage(error: IncarnationEpochError, index: string): UsageError | IncarnationEpochError {
  const { largest, epoch } = error.context;
  switch (error.reason) {
    case 'unknown':
      return new UsageError(
        `--first or --epoch N: ${error.message}. A brand-new lock index: run again with --first. One that existed before (the registry was deleted with it, or the cluster was replaced): --epoch N, with N above the epoch of every fencing token your systems have seen (a token's value / 10^16, rounded down; tokens below 10^16 are from before epochs, and then --epoch 1 is enough).`,
      );
    case 'too-low':
      return new UsageError(`--epoch: must be above ${largest}, the largest epoch known for lock index "${index}" (got ${epoch})`);
    case 'taken':
      return new UsageError(`--epoch: ${error.message}; run again without --epoch, or with one above it`);
    default:
      return error;
  }
}

function report(index: string, target: { name: string; url: string }, made: Awaited<ReturnType<typeof recreateLockIndex>>): void {
  console.log(`lock index ${index} (incarnation ${made.index}, epoch ${made.epoch}) at ${target.name} ${target.url}: created`);
  if (made.previous) {
    console.log(
      `  deleted ${made.previous}${made.dropped > 0 ? `, dropping ${made.dropped} live tickets untold (--force)` : ''}; ${made.carried} completion record${made.carried === 1 ? '' : 's'} copied over`,
    );
  }
  console.log(`  shared settings: ${describeShared(made.sharedSettings)}`);
}

/** The shared settings as their variables name them: `MAX_CLOCK_SKEW_MS=500`. */
const describeShared = (settings: SharedSettings): string =>
  (Object.entries(SHARED_SETTINGS) as [SharedSettingName, string][]).map(([name, variable]) => `${variable}=${settings[name] ?? '?'}`).join(', ');

/** The shared settings the environment gives (MAX_CLOCK_SKEW_MS, read as the functions read it). */
function givenSharedSettings(): SharedSettings {
  const given = sharedSettingsFromEnv(process.env);
  if ('problems' in given) throw new UsageError(given.problems[0]!);
  return given;
}

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, {
    ...STORE_FLAG,
    index: { type: 'string' },
    first: { type: 'boolean' },
    epoch: { type: 'string' },
    adopt: { type: 'string' },
    shards: { type: 'string' },
    recreate: { type: 'boolean' },
    force: { type: 'boolean' },
    'record-settings': { type: 'boolean' },
  });
  if (printHelp(values, USAGE)) return 0;
  const product = chooseStore(values.store);
  const index = (values.index as string | undefined) ?? process.env.LOCK_INDEX ?? 'locks';
  const from = values.index !== undefined ? '--index' : 'LOCK_INDEX';
  if (!INDEX_NAME.test(index)) throw new UsageError(`${from}: must be an index name: lowercase letters, digits, ".", "_", "-" (got "${index}")`);
  const epoch = values.epoch !== undefined ? numberFlag('--epoch', values.epoch as string, { integer: true, min: 1, max: MAX_EPOCH }, 0) : undefined;
  const adopt = values.adopt as string | undefined;
  const shards =
    values.shards !== undefined ? numberFlag('--shards', values.shards as string, { integer: true, min: 1, max: MAX_LOCK_INDEX_SHARDS }, 0) : undefined;
  if (values.first && epoch !== undefined) throw new UsageError('--first and --epoch: give one (--epoch says which epoch, --first lets it be 1)');
  if (adopt !== undefined) {
    if (values.first) throw new UsageError('--first: not with --adopt (a restored lock index is not a new one; give --epoch N if the registry was lost)');
    if (!INDEX_NAME.test(adopt)) throw new UsageError(`--adopt: must be an index name: lowercase letters, digits, ".", "_", "-" (got "${adopt}")`);
    if (adopt === index) throw new UsageError(`--adopt: "${adopt}" is the lock index's alias itself; name the restored concrete index`);
    if (shards !== undefined) throw new UsageError('--shards: not with --adopt (the copy keeps the shard count of the index it adopts)');
    if (values.recreate) throw new UsageError('--recreate: not with --adopt (adopting makes a new incarnation already)');
  }
  if (values.force && !values.recreate) throw new UsageError('--force: only with --recreate');
  if (values['record-settings'] && (values.recreate || adopt !== undefined)) {
    throw new UsageError('--record-settings: not with --recreate or --adopt (a new incarnation records them itself)');
  }
  const sharedSettings = givenSharedSettings();

  const target = await resolveStore(product);
  const client = target.client();
  try {
    if (adopt !== undefined) {
      if (!(await client.indices.exists({ index: adopt })) || (await client.indices.existsAlias({ name: adopt }))) {
        throw new UsageError(`--adopt: there is no concrete index "${adopt}" at ${target.url} (restore the snapshot under that name first)`);
      }
      const adopted = await adoptLockIndex(client, index, adopt, { ...(epoch !== undefined ? { epoch } : {}), sharedSettings });
      console.log(
        `lock index ${index} at ${target.name} ${target.url}: now incarnation ${adopted.index} (epoch ${adopted.epoch}), a copy of ${adopt} (deleted)`,
      );
      if (adopted.detached.length > 0) {
        console.log(
          `  no longer behind ${index}, closed to writes: ${adopted.detached.join(', ')} (${adopted.carried} completion record${adopted.carried === 1 ? '' : 's'} copied over; delete them when you no longer need to look at them)`,
        );
      }
      console.log(`  shared settings: ${describeShared(adopted.sharedSettings)}`);
      return 0;
    }
    const options = {
      sharedSettings,
      unknownHistory: values.first ? ('first' as const) : ('refuse' as const),
      ...(epoch !== undefined ? { epoch } : {}),
      ...(shards !== undefined ? { shards } : {}),
    };
    if (values.recreate) {
      report(index, target, await recreateLockIndex(client, index, { ...options, force: values.force === true }));
      return 0;
    }
    const result = await ensureLockIndex(client, index, options);
    const incarnation = await lockIndexIncarnation(client, index);
    const recorded = incarnation ? await readSharedSettings(client, incarnation) : undefined;
    if (values['record-settings'] && incarnation && !recorded) await recordSharedSettings(client, incarnation, allSharedSettings(sharedSettings));
    const count = await lockIndexShards(client, index);
    console.log(
      `lock index ${index} (incarnation ${incarnation}, epoch ${incarnation ? epochOfIncarnation(incarnation) : '?'}) at ${target.name} ${target.url}: ${result}`,
    );
    if (count !== undefined && count > 1) console.log(`  ${count} primary shards: each namespace lives on one (requests are routed by namespace)`);
    if (result === 'exists' && (epoch !== undefined || values.first))
      console.log(`  it existed already: ${epoch !== undefined ? '--epoch' : '--first'} was not used`);
    if (recorded) {
      for (const [name, variable] of Object.entries(SHARED_SETTINGS) as [SharedSettingName, string][]) {
        const given = sharedSettings[name];
        if (given !== undefined && given !== recorded[name]) {
          throw new Error(
            `${variable} is ${given} here but the lock index ${index} records ${recorded[name]}: every process on it works with ${recorded[name]}, and one given ${given} refuses to; unset it, or make a new incarnation that records ${given} (--recreate)`,
          );
        }
      }
    }
    if (result === 'exists' && shards !== undefined && shards !== count)
      console.log(`  it existed already with ${count} shard${count === 1 ? '' : 's'}: --shards ${shards} was not used (only a new incarnation takes it)`);
    const now = incarnation ? await readSharedSettings(client, incarnation) : undefined;
    console.log(
      now
        ? `  shared settings: ${describeShared(now)}`
        : '  records no shared settings (made before they were): every process uses its own; run again with --record-settings',
    );
  } catch (error) {
    if (error instanceof IncarnationEpochError) throw asUsage(error, index);
    if (error instanceof LiveTicketsError) throw new Error(`--recreate: ${error.message} (--force)`);
    throw error;
  } finally {
    await client.close();
  }
  return 0;
}

runCli(main);

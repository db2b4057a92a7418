/**
 * npm run bench:hand-over — how soon a queued waiter is served once the lock frees, measured on the
 * real Elasticsearch: after a release (the hand-over is in the release's write), and after a holder
 * dies (its lease runs out unreleased: a waiter in the call serves the queue itself at its next look
 * past the lease's end plus the clock-skew allowance). Prints p50 / p95 / max per case, side by side.
 */
import { randomBytes } from 'node:crypto';
import { deleteLockIndex, ElasticsearchLockStore, ensureLockIndex } from '../functions/store/index.js';
import { chooseStore, resolveStore, STORE_FLAG, STORE_RULE } from '../infra/lib/store-target.js';
import { LockService } from '../packages/engine/src/service.js';
import { numberFlag, parseFlags, printHelp } from '../tools/cli/flags.js';
import { runCli } from '../tools/cli/run-cli.js';

const USAGE = `usage: npm run bench:hand-over [-- --store S]

Delay from a lock becoming free to its queued waiter's grant, after a release and after a holder
died (measured from its lease's end plus maxClockSkewMs), over BENCH_ROUNDS rounds (default 20).
  --store S   ${STORE_RULE}
Exit codes: 0 done, 1 failed, 2 a usage mistake.`;

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

async function main(argv: string[]): Promise<number> {
  const { values } = parseFlags(argv, { ...STORE_FLAG });
  if (printHelp(values, USAGE)) return 0;
  const rounds = numberFlag('BENCH_ROUNDS', process.env.BENCH_ROUNDS, { integer: true, min: 1 }, 20);
  const target = await resolveStore(chooseStore(values.store), (line) => console.log(line));
  const client = target.client({ requestTimeoutMs: 30_000 });
  const index = `bench-hand-over-${randomBytes(3).toString('hex')}`;
  await ensureLockIndex(client, index);
  const engine = new LockService(new ElasticsearchLockStore(client, index));
  const skew = engine.settings.maxClockSkewMs;
  const afterRelease: number[] = [];
  const afterDeath: number[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      process.stdout.write(`\rround ${round + 1}/${rounds}`);
      const target = { namespace: 'bench', granularity: 'document', ids: [`k${round}`] };
      // Released: from the release's answer to the waiter's grant.
      const holder = await engine.acquire({ ...target, owner: 'holder', ttlMs: 10_000 });
      const waiter = engine.acquire({ ...target, owner: 'waiter', ttlMs: 10_000, waitMs: 20_000 }).then((grant) => ({ grant, at: Date.now() }));
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 100));
      await engine.release({ leaseToken: holder.leaseToken });
      const released = Date.now();
      const served = await waiter;
      afterRelease.push(served.at - released);
      await engine.release({ leaseToken: served.grant.leaseToken });
      // Died: the holder never releases; from its lease's end plus the skew allowance to the waiter's grant.
      const dead = await engine.acquire({ ...target, owner: 'dies', ttlMs: 1_000 });
      const next = await engine.acquire({ ...target, owner: 'waiter', ttlMs: 10_000, waitMs: 20_000 });
      afterDeath.push(Date.now() - (dead.expiresAt + skew));
      await engine.release({ leaseToken: next.leaseToken });
    }
    process.stdout.write('\n');
    const row = (name: string, delays: number[]) =>
      `${name.padEnd(36)} ${String(percentile(delays, 50)).padStart(6)} ${String(percentile(delays, 95)).padStart(6)} ${String(Math.max(...delays)).padStart(6)}`;
    console.log(`${'waiter served (ms)'.padEnd(36)} ${'p50'.padStart(6)} ${'p95'.padStart(6)} ${'max'.padStart(6)}`);
    console.log(row('after a release', afterRelease));
    console.log(row(`after a holder died (from end + ${skew} ms)`, afterDeath));
  } finally {
    await deleteLockIndex(client, index).catch(() => undefined);
    await client.close();
  }
  return 0;
}

runCli(main);

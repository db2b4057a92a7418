/**
 * A directory lock's acquire when nothing contends, beside a document lock's and a file lock's: one
 * caller, one lock at a time, kinds interleaved cycle by cycle. A directory that file locks have
 * used pays the forced refresh and the search below; one never used below does not. Before each
 * such cycle a file lock below is taken and released (untimed), as in a tree that is being written.
 */
import type { AcquireInput, LockService } from '../packages/engine/src/service.js';

interface Kind {
  name: string;
  request: (cycle: number) => AcquireInput;
  /** Untimed, before the timed acquire. */
  before?: (cycle: number) => AcquireInput;
}

const owner = 'bench-uncontended';
const KINDS: Kind[] = [
  { name: 'document lock', request: (cycle) => ({ namespace: 'bench', granularity: 'document', ids: [`u${cycle}`], owner }) },
  { name: 'file lock (depth 3)', request: (cycle) => ({ namespace: 'bench', granularity: 'tree', path: `/u/d/f${cycle}`, owner }) },
  { name: 'directory lock, nothing ever locked below', request: (cycle) => ({ namespace: 'bench', granularity: 'tree', path: `/empty/d${cycle}`, owner }) },
  {
    name: 'directory lock, a file below locked just before',
    request: () => ({ namespace: 'bench', granularity: 'tree', path: '/used/d', owner }),
    before: (cycle) => ({ namespace: 'bench', granularity: 'tree', path: `/used/d/f${cycle}`, owner }),
  },
];

const percentile = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;

/** Acquire p50 and p95 of each kind over `cycles` cycles each, and p50 against the document lock's; one line per kind. */
export async function uncontendedAcquire(engine: LockService, cycles: number, log: (line: string) => void): Promise<void> {
  const samples = KINDS.map(() => [] as number[]);
  const cycle = async (kind: Kind, index: number): Promise<number> => {
    if (kind.before) await engine.release({ leaseToken: (await engine.acquire(kind.before(index))).leaseToken });
    const started = performance.now();
    const grant = await engine.acquire(kind.request(index));
    const ms = performance.now() - started;
    await engine.release({ leaseToken: grant.leaseToken });
    return ms;
  };
  for (const [position, kind] of KINDS.entries()) await cycle(kind, -1 - position); // warm-up, not counted
  for (let index = 0; index < cycles; index++) {
    for (const [position, kind] of KINDS.entries()) samples[position]!.push(await cycle(kind, index));
    if ((index + 1) % 50 === 0) log(`uncontended: ${index + 1}/${cycles} cycles of each kind`);
  }
  const p50s = samples.map((list) =>
    percentile(
      [...list].sort((a, b) => a - b),
      0.5,
    ),
  );
  for (const [position, kind] of KINDS.entries()) {
    const sorted = [...samples[position]!].sort((a, b) => a - b);
    log(
      `${kind.name.padEnd(50)} acquire p50 ${p50s[position]!.toFixed(1)} ms (${(p50s[position]! / p50s[0]!).toFixed(2)} of the document lock's), p95 ${percentile(sorted, 0.95).toFixed(1)} ms`,
    );
  }
}

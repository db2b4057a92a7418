/**
 * What an engine probe counts while it runs: the engine side's IterationMetrics (shared/lock-driver.ts),
 * one per operation (its requests to the lock store are its own), all adding to one tally.
 */
import type { IterationEnd, IterationMetrics } from '../../shared/lock-driver.js';
import { HOLD_MARKER } from '../../shared/workload.js';
import { noRequests, type PerKind, REQUEST_KINDS } from '../model.js';

/** Failed requests kept in words; the counts carry the totals. */
const ERROR_SAMPLES = 3;

export class ProbeTally {
  offered = 0;
  goodput = 0;
  gaveUp = 0;
  conflicts = 0;
  retries = 0;
  errors = 0;
  acquireRequests = 0;
  /** Operations the probe stopped counting while they ran (after its grace). */
  interrupted = 0;
  readonly acquireMs: number[] = [];
  /** One line per critical section, `LTHOLD {json}` as k6 logs it. */
  readonly holdLines: string[] = [];
  /** Time completed operations spent in engine calls (acquire and release, backoff excluded), and in backoff, ms. */
  engineMs = 0;
  backoffMs = 0;
  /** Completed operations weighted by the files they cover: the weights, and weighted engine time and requests. */
  readonly covered = { files: 0, engineMs: 0, requests: noRequests() };
  readonly errorSamples: string[] = [];
  /** Completed operations by kind of operation, and the requests they sent: what each kind costs. */
  readonly byOp: Record<string, { done: number; requests: PerKind }> = {};

  /** The metrics of one operation, whose requests to the lock store are counted into `requests` (request-count.ts). */
  forOperation(requests: PerKind): IterationMetrics {
    return {
      offered: () => {
        this.offered++;
      },
      answered: (answer) => {
        this.acquireRequests++;
        if (answer.kind === 'conflict') this.conflicts++;
      },
      retried: () => {
        this.retries++;
      },
      acquired: (latencyMs) => {
        this.acquireMs.push(latencyMs);
      },
      held: (record) => {
        this.holdLines.push(HOLD_MARKER + JSON.stringify(record));
      },
      ended: (end, tags) => this.count(end, requests, tags.op),
      problem: (what, detail) => this.sample(`${what}: ${detail}`),
    };
  }

  /** A failure in words, while fewer than ERROR_SAMPLES are kept. */
  sample(text: string): void {
    if (this.errorSamples.length < ERROR_SAMPLES) this.errorSamples.push(text);
  }

  private count(end: IterationEnd, requests: PerKind, op: string): void {
    switch (end.outcome) {
      case 'interrupted':
        this.interrupted++;
        return;
      case 'gave-up':
        this.gaveUp++;
        return;
      case 'error':
      case 'release-failed':
        this.errors++;
        return;
      case 'done': {
        const engineMs = end.acquireMs - end.backoffMs + end.releaseMs;
        this.goodput++;
        this.engineMs += engineMs;
        this.backoffMs += end.backoffMs;
        this.covered.files += end.files;
        this.covered.engineMs += end.files * engineMs;
        for (const kind of REQUEST_KINDS) this.covered.requests[kind] += end.files * requests[kind];
        const mine = this.byOp[op] ?? { done: 0, requests: noRequests() };
        this.byOp[op] = mine;
        mine.done++;
        for (const kind of REQUEST_KINDS) mine.requests[kind] += requests[kind];
        return;
      }
    }
  }
}

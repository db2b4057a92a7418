/**
 * Checks what work that runs once promises (docs/work-once.md, docs/protocol.md), from a fault run's
 * history alone. A record is known to have applied when its release answered `recorded`, or when an
 * acquire of its key answered it (the workload's result names the lease that recorded it); its write
 * happened between its release's invoke and that answer. A completed record stands from then until
 * its expiry: the one an answer gave (on the recorder's clock, taken to the runner's), or else, at the
 * earliest, its release's invoke plus the ttl it asked for.
 *
 * - completed-twice (I10): two runs of one key both recorded `completed`, the second's record written
 *   surely while the first stood (begun after the first applied, answered before the first expired);
 * - record-not-answered: an acquire of the key, called after a completed record applied and answered
 *   before it expired, was granted the work, told it is in progress, or answered another run's record;
 * - refused-record-applied: a release told "not recorded" (a fail) whose record answered a later acquire;
 * - revoked-recorded: a lease that a revoke took recorded its outcome (either status) after the revoke's
 *   write. When both tokens are known, the record's write token against the revoke's (one shard, so one
 *   order); else only a record whose release was called after the revoke answered is surely after it
 *   (a record in flight while the revoke ran may have been first, and is not judged);
 * - late-work-grant: a work grant answered after its lease had ended (the caller would run the work
 *   with no time left, while another delivery may take it on).
 *
 * Pure: the history in, the violations out. Times are the runner's clock.
 */
import type { CheckerOptions, HistoryEvent, Hold, Violation } from './history.js';

/** What the history says about one lease's record. */
interface RecordFact {
  lease: string;
  client: string;
  work: string;
  status: 'completed' | 'failed';
  ttlMs: number;
  invokedAt: number;
  /** How its release answered: recorded (ok with `recorded`), refused (fail), unknown (info, or ok without `recorded`). */
  answer: 'recorded' | 'refused' | 'unknown' | 'pending';
  answeredAt?: number;
  recordToken?: string;
  /** The first acquire answer that gave this record, and the record's expiry it said (runner's clock). */
  citedAt?: number;
  expiresAt?: number;
}

/** One acquire with an idempotency key, from its invoke to its answer. */
interface WorkAttempt {
  client: string;
  work: string;
  invokedAt: number;
  answeredAt: number;
  answer: 'grant' | 'completed' | 'in-progress' | 'other';
  lease?: string;
  cites?: string;
  expiresAt?: number;
}

const compareTokens = (a: string, b: string): number => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

function readWork(history: readonly HistoryEvent[], holds: readonly Hold[]): { records: Map<string, RecordFact>; attempts: WorkAttempt[] } {
  const offsets = new Map(holds.map((hold) => [hold.leaseId, hold.clockOffsetMs ?? 0]));
  const records = new Map<string, RecordFact>();
  const attempts: WorkAttempt[] = [];
  const invokes = new Map<string, HistoryEvent>();
  for (const event of [...history].sort((a, b) => a.time - b.time)) {
    if (event.type === 'invoke') {
      invokes.set(event.client, event);
      if (event.op === 'release' && event.record && event.leaseId && event.work)
        records.set(event.leaseId, { lease: event.leaseId, client: event.client, work: event.work, ...event.record, invokedAt: event.time, answer: 'pending' });
      continue;
    }
    const invoke = invokes.get(event.client);
    if (event.op === 'release' && event.leaseId && records.has(event.leaseId)) {
      const fact = records.get(event.leaseId)!;
      fact.answeredAt = event.time;
      fact.answer = event.type === 'ok' && event.recorded ? 'recorded' : event.type === 'fail' ? 'refused' : 'unknown';
      if (event.recordToken) fact.recordToken = event.recordToken;
      continue;
    }
    if (event.op !== 'acquire' || !invoke?.work) continue;
    const attempt: WorkAttempt = { client: event.client, work: invoke.work, invokedAt: invoke.time, answeredAt: event.time, answer: 'other' };
    if (event.type === 'ok' && event.answered) {
      const offset = offsets.get(event.answered.lease) ?? 0;
      Object.assign(attempt, { answer: 'completed', cites: event.answered.lease, expiresAt: event.answered.expiresAt - offset });
    } else if (event.type === 'ok' && event.leaseId) Object.assign(attempt, { answer: 'grant', lease: event.leaseId, expiresAt: event.expiresAt });
    else if (event.type === 'fail' && event.error === 'WorkInProgressError') attempt.answer = 'in-progress';
    attempts.push(attempt);
  }
  for (const attempt of attempts) {
    const fact = attempt.cites ? records.get(attempt.cites) : undefined;
    if (!fact || fact.citedAt !== undefined) continue;
    fact.citedAt = attempt.answeredAt;
    fact.expiresAt = attempt.expiresAt;
  }
  return { records, attempts };
}

/** When a record surely applied (undefined: not known to have applied). */
const appliedBy = (fact: RecordFact): number | undefined => {
  const times = [...(fact.answer === 'recorded' ? [fact.answeredAt!] : []), ...(fact.citedAt !== undefined ? [fact.citedAt] : [])];
  return times.length > 0 ? Math.min(...times) : undefined;
};

/** Until when a completed record surely stands. */
const standsUntil = (fact: RecordFact): number => fact.expiresAt ?? fact.invokedAt + fact.ttlMs;

export function checkWork(history: readonly HistoryEvent[], holds: readonly Hold[], options: CheckerOptions): Violation[] {
  const violations: Violation[] = [];
  const { records, attempts } = readWork(history, holds);
  const applied = [...records.values()].filter((fact) => appliedBy(fact) !== undefined);
  const completedByWork = new Map<string, RecordFact[]>();
  for (const fact of applied) if (fact.status === 'completed') completedByWork.set(fact.work, [...(completedByWork.get(fact.work) ?? []), fact]);
  const attemptsByWork = new Map<string, WorkAttempt[]>();
  for (const attempt of attempts) attemptsByWork.set(attempt.work, [...(attemptsByWork.get(attempt.work) ?? []), attempt]);

  for (const [work, facts] of completedByWork) {
    for (const first of facts) {
      const from = appliedBy(first)!;
      const until = standsUntil(first) - options.maxClockSkewMs;
      for (const second of facts) {
        if (second === first || second.invokedAt < from || appliedBy(second)! >= until) continue;
        violations.push({
          kind: 'completed-twice',
          message: `work ${work}: ${second.client}'s lease ${second.lease} recorded completed at ${second.invokedAt}..${appliedBy(second)} while ${first.client}'s lease ${first.lease}'s record stood (applied by ${from}, until ${Math.round(until)})`,
        });
      }
      for (const attempt of attemptsByWork.get(work) ?? []) {
        if (attempt.invokedAt < from || attempt.answeredAt >= until) continue;
        const wrong =
          attempt.answer === 'grant'
            ? `was granted the work (lease ${attempt.lease})`
            : attempt.answer === 'in-progress'
              ? 'was told it is in progress'
              : attempt.answer === 'completed' && attempt.cites !== first.lease
                ? `was answered lease ${attempt.cites}'s record`
                : undefined;
        if (!wrong) continue;
        violations.push({
          kind: 'record-not-answered',
          message: `work ${work}: ${attempt.client}'s acquire at ${attempt.invokedAt}..${attempt.answeredAt} ${wrong} while ${first.client}'s lease ${first.lease}'s completed record stood (applied by ${from}, until ${Math.round(until)})`,
        });
      }
    }
  }

  for (const fact of records.values()) {
    if (fact.answer === 'refused' && fact.citedAt !== undefined)
      violations.push({
        kind: 'refused-record-applied',
        message: `work ${fact.work}: ${fact.client}'s lease ${fact.lease} was told its record was not recorded, yet an acquire at ${fact.citedAt} was answered with it`,
      });
  }

  const invokes = new Map<string, number>();
  for (const event of [...history].sort((a, b) => a.time - b.time)) {
    if (event.type === 'invoke') invokes.set(event.client, event.time);
    if (event.op !== 'revoke' || event.type !== 'ok') continue;
    for (const lease of event.revoked ?? []) {
      const fact = records.get(lease);
      if (!fact || appliedBy(fact) === undefined) continue;
      const byToken = fact.recordToken !== undefined && event.fencingToken !== undefined;
      const after = byToken ? compareTokens(fact.recordToken!, event.fencingToken!) > 0 : fact.invokedAt > event.time;
      if (!after) continue;
      const how = byToken
        ? `its record's write (token ${fact.recordToken}) came after the revoke's (token ${event.fencingToken})`
        : `its release was called at ${fact.invokedAt}, after the revoke answered at ${event.time}`;
      violations.push({
        kind: 'revoked-recorded',
        message: `work ${fact.work}: ${fact.client}'s lease ${lease}, revoked by ${event.client} (called at ${invokes.get(event.client) ?? event.time}), recorded ${fact.status}: ${how}`,
      });
    }
  }

  for (const attempt of attempts) {
    if (attempt.answer !== 'grant' || attempt.expiresAt === undefined || attempt.expiresAt > attempt.answeredAt) continue;
    violations.push({
      kind: 'late-work-grant',
      message: `work ${attempt.work}: ${attempt.client}'s lease ${attempt.lease} was granted at ${attempt.answeredAt}, ${attempt.answeredAt - attempt.expiresAt} ms after it ended`,
    });
  }
  return violations;
}

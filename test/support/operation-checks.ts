/**
 * The invariants of docs/protocol.md, checked over one schedule of the systematic explorations
 * (test/engine/*-exhaustive.test.ts), on true time. The model is written out here, not taken from the
 * engine: an exclusive hold excludes every other hold of its document, a permit hold shares only with
 * the permit holds of its semaphore while their counts add up to at most the limit.
 *
 * Every process reads its own clock (an offset from true time) and acts on a lease until its expiry
 * by that clock; so a hold ends, in true time, at `expiresAt - offset`. What is checked:
 * - I1 no two incompatible holds of one document overlap in true time; I11 the permit holds of a
 *   semaphore that overlap never hold more than its limit.
 * - I2 of two incompatible holds of a document, the later grant's fencing token there is larger.
 * - I3 a grant or renewal is answered standing on the primary, with time left by its holder's clock;
 *   a work grant also stands on its claim of the work.
 * - I5 a holder leaves a document before its end (by its own clock) only by its own calls or an
 *   operator's revoke (the revoker processes). A revoked hold ends at the revoke's first write that
 *   concerns it (the fence of its work's claim, W5, or the removal of its holder).
 * - I10 a `completed` record stays on the primary, and answers every call that reads the work, until
 *   its expiry by its recorder's clock; no second `completed` record of the work lands before then;
 *   an outcome is recorded only by a lease that took the work on, still holds the lock and was not
 *   revoked, when the record lands; every `completed` answer is a record that landed.
 */
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import { lockDocId } from '../../packages/engine/src/keys.js';
import type { MemoryLockStore } from '../../packages/engine/src/memory-store.js';
import type { CompletedWork, Grant, HolderMode, LockTarget, Renewal, StoredHolder, StoredWork } from '../../packages/engine/src/model.js';
import type { StoredLock } from '../../packages/engine/src/store.js';
import type { SystematicScheduler, WriteSeen } from './systematic.js';

/** The compatibility table of docs/model.md, written out again. */
const MAY_SHARE: Record<HolderMode, readonly HolderMode[]> = { IS: ['IS', 'IX', 'S'], IX: ['IS', 'IX'], S: ['IS', 'S'], X: [] };
const compatible = (a: HolderMode, b: HolderMode): boolean => MAY_SHARE[a].includes(b) && MAY_SHARE[b].includes(a);
/** A fencing token's epoch: its lock index incarnation (packages/engine/src/fencing.ts). */
const epochOf = (token: string): bigint => BigInt(token) / 10n ** 16n;
/** Points (OperationChecks.point) per true millisecond: more than the store calls of any schedule. */
const POINTS_PER_MS = 100_000;
const ms = (point: number): string => `+${Math.floor(point / POINTS_PER_MS) - 1_000_000} ms`;
const segmentsOf = (hold: { segments: Array<[number, number]> }): string => hold.segments.map(([start, end]) => `${ms(start)}..${ms(end)}`).join(', ');

/** A process of a scenario: its clock's offset from true time, and the skew allowance its engine is configured with. */
export interface Process {
  offset: number;
  /** The allowance it acts with. */
  skewMs: number;
  /** Its engine is given no allowance (as the CLI builds it): it takes the lock index's, or the default when the index records none. */
  unset?: boolean;
}

export interface Hold {
  actor: string;
  leaseId: string;
  keys: Array<{ docId: string; mode: HolderMode; fencingToken: string }>;
  permits?: { limit: number; count: number };
  /**
   * When the holder may act: from each grant or renewal until its expiry by the holder's clock, cut
   * short when it stops. In points (point()): true time, then the order of the store calls within an instant.
   */
  segments: Array<[number, number]>;
  /** The work's document, for a grant of acquireWork. */
  work?: string;
}

interface AppliedRecord {
  docId: string;
  /** The payload hash the work document carried with it (none from a caller that gave none). */
  payloadHash: string | undefined;
  lease: string;
  owner: string;
  status: string;
  result: unknown;
  fencingToken: string;
  at: number;
  /** Its place among the store calls (a read after it in this order sees it). */
  seq: number;
  /** Its expiry by its recorder's clock, in true time. */
  until: number;
}

interface WorkCall {
  actor: string;
  docId: string;
  payloadHash: string | undefined;
  /** When its first read of the work's document ran (true time), and its place among the store calls. */
  readAt?: number;
  readSeq?: number;
  answer?: { kind: 'grant' } | { kind: 'completed'; answer: CompletedWork } | { kind: 'error'; name: string };
}

type Outcome = NonNullable<StoredWork['outcome']>;
/** Two payloads differ only when both are known: a side without a hash matches any. */
const differ = (a: string | undefined, b: string | undefined): boolean => a !== undefined && b !== undefined && a !== b;
const sameOutcome = (a: Outcome | undefined, b: Outcome | undefined): boolean => a?.lease === b?.lease && a?.recordedAt === b?.recordedAt;

export class OperationChecks {
  /** What broke as it happened. */
  readonly problems: string[] = [];
  readonly holds: Hold[] = [];
  /** When an operator's first write concerning each lease landed (true time: revoked()), and where (its place among the store calls, as a point). */
  readonly revokedAt = new Map<string, number>();
  private readonly revokedSeq = new Map<string, number>();
  private readonly revokedPoint = new Map<string, number>();
  private readonly claimed = new Map<string, Set<string>>();
  private readonly records: AppliedRecord[] = [];
  private readonly workCalls: WorkCall[] = [];
  /** Store calls so far: orders reads and writes of one instant. */
  private seq = 0;

  constructor(
    private readonly scheduler: SystematicScheduler,
    private readonly memory: MemoryLockStore,
    private readonly processes: ReadonlyMap<string, Process>,
    /** The processes whose writes revoke (an operator's revoke): they may take a live holder off. */
    private readonly revokers: ReadonlySet<string> = new Set(),
    /**
     * The operator re-creates the lock index (forced) in these schedules: every holder goes with the old
     * incarnation, as documented, so holds of different incarnations are not checked for I1 (the
     * new incarnation's larger tokens fence the old ones off: I2 still is).
     */
    private readonly recreated = false,
  ) {}

  private offset(actor: string): number {
    return this.processes.get(actor)?.offset ?? 0;
  }

  /**
   * Now as a point: true time, then the store calls so far, so that two holds with no time between
   * their steps still overlap when one is granted before the other stops. An expiry is a point before
   * every step of its instant.
   */
  point(): number {
    return this.scheduler.now * POINTS_PER_MS + this.seq;
  }

  /** `at` by `actor`'s clock, in true time. */
  trueTime(actor: string, at: number): number {
    return at - this.offset(actor);
  }

  private at(): string {
    return `+${this.scheduler.now - 1_000_000} ms`;
  }

  private primary(docId: string): StoredLock | null {
    return this.memory.peek(docId);
  }

  /** The store's watch (steppedStore): every write as it applies. */
  onWrite = (seen: WriteSeen): void => {
    this.seq++;
    const now = this.scheduler.now;
    for (const [docId, before] of seen.before) {
      const after = seen.after.get(docId) ?? null;
      if (before?.seqNo === after?.seqNo && before?.index === after?.index) continue;
      const remaining = new Set((after?.body.holders ?? []).map((holder) => holder.lease));
      for (const holder of before?.body.holders ?? []) if (!remaining.has(holder.lease)) this.holderLeft(holder, docId, seen.actor, now);
      if (before?.body.work || after?.body.work) this.workChanged(docId, before?.body.work, after?.body.work, now, seen.actor);
    }
  };

  private holderLeft(holder: StoredHolder, docId: string, actor: string, now: number): void {
    if (this.revokers.has(actor)) {
      for (let gone: StoredHolder | null | undefined = holder; gone; gone = gone.restores) this.revoked(gone.lease, now, true);
      return;
    }
    if (holder.owner === actor) return;
    const end = this.trueTime(holder.owner, holder.expiresAt);
    if (now < end) {
      this.problems.push(
        `I5 only the holder or a revoke: ${actor} took ${holder.owner}'s lease off ${docId} at ${this.at()}, before its end by ${holder.owner}'s clock (+${end - 1_000_000} ms)`,
      );
    }
  }

  /**
   * An operator's write fenced `lease`'s work, or took its holder off a document: its hold ends at the
   * first, and it records nothing after it; a renewal is refused once sent after the second (a renewal
   * may land between the two: as if it came before the revoke).
   */
  private revoked(lease: string, now: number, holder: boolean): void {
    if (holder && !this.revokedSeq.has(lease)) this.revokedSeq.set(lease, this.seq);
    if (this.revokedAt.has(lease)) return;
    this.revokedAt.set(lease, now);
    this.revokedPoint.set(lease, this.point());
  }

  private workChanged(docId: string, was: StoredWork | undefined, is: StoredWork | undefined, now: number, actor: string): void {
    // A revoke fences the work of a lease before it takes its locks (W5): its revoke starts there.
    if (this.revokers.has(actor) && was?.claim && was.claim.lease !== is?.claim?.lease) this.revoked(was.claim.lease, now, false);
    if (is?.claim && is.claim.lease !== was?.claim?.lease) {
      const leases = this.claimed.get(docId) ?? new Set<string>();
      this.claimed.set(docId, leases.add(is.claim.lease));
    }
    const [before, after] = [was?.outcome, is?.outcome];
    if (before?.status === 'completed' && !sameOutcome(before, after)) {
      const record = this.records.find((applied) => applied.docId === docId && applied.lease === before.lease);
      if (record && now < record.until) {
        const how = !is ? 'deleted' : after ? `replaced by ${after.owner}'s ${after.status} record` : `replaced by ${is.claim?.owner}'s claim`;
        this.problems.push(
          `I10 a record is kept until its expiry: ${record.owner}'s completed record was ${how} at ${this.at()}, before +${record.until - 1_000_000} ms`,
        );
      }
    }
    if (!after || sameOutcome(before, after)) return;
    const owner = after.owner;
    if (after.status === 'completed') {
      for (const earlier of this.records) {
        if (earlier.docId === docId && earlier.status === 'completed' && now < earlier.until) {
          this.problems.push(
            `I10 completed twice: ${owner} recorded completed at ${this.at()}, while ${earlier.owner}'s record is kept until +${earlier.until - 1_000_000} ms`,
          );
        }
      }
    }
    if (!this.claimed.get(docId)?.has(after.lease)) {
      this.problems.push(
        `I10 records only who took the work on: ${owner}'s lease recorded ${after.status} on ${docId} at ${this.at()}, and never claimed that work`,
      );
    }
    const revokedAt = this.revokedAt.get(after.lease);
    if (revokedAt !== undefined) {
      this.problems.push(
        `I10 a revoked lease records nothing: ${owner}'s lease, revoked at +${revokedAt - 1_000_000} ms, recorded ${after.status} at ${this.at()}`,
      );
    }
    // Under the lock: its holder still on every key (a record that lands just past the lease's end, while
    // nobody else has taken the lock, breaks nothing; one taken over breaks I1 or this).
    const hold = this.holds.find((candidate) => candidate.leaseId === after.lease);
    for (const key of hold?.keys ?? []) {
      if (!this.primary(key.docId)?.body.holders.some((holder) => holder.lease === after.lease)) {
        this.problems.push(`I10 records only under the lock: ${owner}'s lease recorded ${after.status} at ${this.at()}, no longer holding ${key.docId}`);
      }
    }
    this.records.push({
      docId,
      payloadHash: is?.payloadHash,
      lease: after.lease,
      owner,
      status: after.status,
      result: after.result,
      fencingToken: after.fencingToken,
      at: now,
      seq: this.seq,
      until: this.trueTime(owner, after.expiresAt),
    });
  }

  /** The store's read watch: a work call's first read of its work's document. */
  onRead = (actor: string, docIds: readonly string[]): void => {
    this.seq++;
    for (const call of this.workCalls) {
      if (call.actor === actor && call.answer === undefined && call.readAt === undefined && docIds.includes(call.docId)) {
        call.readAt = this.scheduler.now;
        call.readSeq = this.seq;
      }
    }
  };

  /** An acquireWork call starts; tell `answered` how it ended. */
  workCall(actor: string, docId: string, payloadHash?: string): WorkCall {
    const call: WorkCall = { actor, docId, payloadHash };
    this.workCalls.push(call);
    return call;
  }

  answered(call: WorkCall, answer: NonNullable<WorkCall['answer']>): void {
    call.answer = answer;
  }

  /** A grant answered to `actor` (the step that answered it has just run: nothing ran since). */
  granted(actor: string, target: LockTarget, grant: Grant, work?: string): Hold {
    const hold: Hold = {
      actor,
      leaseId: grant.leaseId,
      keys: grant.keys.map((key) => ({ docId: lockDocId(target.namespace, target.granularity, key.key), mode: key.mode, fencingToken: key.fencingToken })),
      ...(grant.permits ? { permits: grant.permits } : {}),
      segments: [[this.point(), this.trueTime(actor, grant.expiresAt) * POINTS_PER_MS]],
      ...(work ? { work } : {}),
    };
    this.holds.push(hold);
    this.standing(hold, grant.expiresAt, 'grant');
    return hold;
  }

  /** A process's work step (no store call): it lasts, so that its hold is not empty. */
  worked = (): void => {
    this.seq++;
  };

  /** Where a call is sent among the store calls: `renewed` takes it. */
  mark(): number {
    return this.seq;
  }

  /** A renewal sent at `sent` (mark()) answered now. */
  renewed(hold: Hold, renewal: Renewal, sent: number): void {
    hold.segments.push([this.point(), this.trueTime(hold.actor, renewal.expiresAt) * POINTS_PER_MS]);
    const revokedSeq = this.revokedSeq.get(hold.leaseId);
    if (revokedSeq !== undefined && revokedSeq <= sent) {
      this.problems.push(`I5 a revoked lease renews nothing: ${hold.actor}'s renewal, sent after its revoke's write, was answered at ${this.at()}`);
    }
    this.standing(hold, renewal.expiresAt, 'renewal');
  }

  /** The holder stops acting (it releases, or it heard its lease is lost). */
  stopped(hold: Hold): void {
    for (const segment of hold.segments) segment[1] = Math.min(segment[1], this.point());
  }

  /** I3: on the primary, the lease holds every key until at least the expiry told, which is still ahead by the holder's clock. */
  private standing(hold: Hold, expiresAt: number, what: string): void {
    const now = this.scheduler.now;
    // Revoked while its call was under way: as if revoked just after the answer (docs/protocol.md, T12); its hold ends at the revoke.
    if (this.revokedAt.has(hold.leaseId)) return;
    // Granted in an incarnation the operator has since re-created (forced): it went with it, as documented.
    if (this.recreated && hold.keys.some((key) => epochOf(key.fencingToken) !== BigInt(this.memory.currentEpoch))) return;
    if (now >= this.trueTime(hold.actor, expiresAt)) {
      this.problems.push(
        `I3 answered with time left: ${hold.actor}'s ${what} answered at ${this.at()}, after its end by its own clock (+${this.trueTime(hold.actor, expiresAt) - 1_000_000} ms)`,
      );
    }
    for (const key of hold.keys) {
      const mine = this.primary(key.docId)?.body.holders.find((holder) => holder.lease === hold.leaseId);
      if (!mine || mine.expiresAt < expiresAt)
        this.problems.push(`I3 stands on the primary: ${hold.actor}'s ${what} answered at ${this.at()}, while the primary's ${key.docId} does not hold it`);
    }
    if (hold.work && this.primary(hold.work)?.body.work?.claim?.lease !== hold.leaseId) {
      this.problems.push(`I3 a work grant stands on its claim: ${hold.actor}'s ${what} answered at ${this.at()}, while the work's claim is not its own`);
    }
  }

  /** Everything, once the schedule is over. */
  check(): string[] {
    const found = [...this.problems];
    for (const hold of this.holds) {
      const revokedAt = this.revokedPoint.get(hold.leaseId);
      if (revokedAt !== undefined) for (const segment of hold.segments) segment[1] = Math.min(segment[1], revokedAt);
    }
    const live = this.holds.filter((hold) => hold.segments.some(([start, end]) => start < end));
    const overlap = (a: Hold, b: Hold): boolean => a.segments.some(([s1, e1]) => b.segments.some(([s2, e2]) => Math.max(s1, s2) < Math.min(e1, e2)));
    for (const [index, a] of live.entries()) {
      for (const b of live.slice(index + 1)) {
        if (a.actor === b.actor) continue;
        for (const keyA of a.keys) {
          const keyB = b.keys.find((key) => key.docId === keyA.docId);
          if (!keyB) continue;
          const permits = a.permits && b.permits;
          const dropped = this.recreated && epochOf(keyA.fencingToken) !== epochOf(keyB.fencingToken);
          if (!permits && !dropped && !compatible(keyA.mode, keyB.mode) && overlap(a, b)) {
            found.push(`I1 one holder: ${a.actor} (${keyA.mode}) and ${b.actor} (${keyB.mode}) both held ${keyA.docId}: ${segmentsOf(a)} / ${segmentsOf(b)}`);
          }
          const [first, second] = a.segments[0]![0] <= b.segments[0]![0] ? [keyA, keyB] : [keyB, keyA];
          // Across a forced re-creation, a grant of the old incarnation answered after one of the new is
          // as if it came just before the re-creation, which ended it (checked by `standing`).
          if (!permits && !dropped && !compatible(keyA.mode, keyB.mode) && compareFencingTokens(second.fencingToken, first.fencingToken) <= 0) {
            found.push(`I2 fencing order on ${keyA.docId}: ${second.fencingToken} granted after ${first.fencingToken}`);
          }
        }
      }
    }
    found.push(...this.permitViolations(live));
    found.push(...this.answerViolations());
    return found;
  }

  /** I11: at every instant a permit hold starts, the overlapping permit holds of its semaphore fit its limit. */
  private permitViolations(live: Hold[]): string[] {
    const found: string[] = [];
    for (const hold of live.filter((candidate) => candidate.permits)) {
      for (const [start] of hold.segments) {
        const docId = hold.keys[0]!.docId;
        const at = live.filter((other) => other.permits && other.keys[0]!.docId === docId && other.segments.some(([s, e]) => s <= start && start < e && s < e));
        const sum = at.reduce((total, other) => total + other.permits!.count, 0);
        if (sum > hold.permits!.limit) {
          found.push(`I11 permits: at ${ms(start)} ${at.map((other) => `${other.actor} ${other.permits!.count}`).join(' + ')} > ${hold.permits!.limit}`);
        }
      }
    }
    return found;
  }

  /** I10: a call that read the work while a completed record was kept answered that record; a completed answer is a record that landed. */
  private answerViolations(): string[] {
    const found: string[] = [];
    for (const call of this.workCalls) {
      const answer = call.answer;
      if (answer?.kind === 'completed') {
        const recorded = this.records.some(
          (record) => record.docId === call.docId && record.status === 'completed' && record.fencingToken === answer.answer.fencingToken,
        );
        if (!recorded) found.push(`I10 a result nobody recorded: ${call.actor} was answered ${JSON.stringify(answer.answer.result)}`);
        const ofAnotherPayload = this.records.some(
          (record) => record.docId === call.docId && record.fencingToken === answer.answer.fencingToken && differ(record.payloadHash, call.payloadHash),
        );
        if (ofAnotherPayload) found.push(`I10 another payload's result: ${call.actor} was answered ${JSON.stringify(answer.answer.result)}`);
      }
      if (call.readAt === undefined || call.readSeq === undefined) continue;
      for (const record of this.records) {
        if (record.docId !== call.docId || record.status !== 'completed' || call.readSeq < record.seq || call.readAt >= record.until) continue;
        // A call of another payload is refused by name while the record is kept; one of the same payload gets the record.
        if (differ(record.payloadHash, call.payloadHash)) {
          if (answer?.kind === 'error' && answer.name === 'WorkPayloadMismatchError') continue;
        } else if (answer?.kind === 'completed' && answer.answer.fencingToken === record.fencingToken) continue;
        const told =
          answer?.kind === 'completed'
            ? 'another result'
            : answer?.kind === 'grant'
              ? 'a grant (the work runs again)'
              : answer?.kind === 'error'
                ? answer.name
                : 'nothing';
        found.push(
          `I10 a record answers every later call: ${call.actor} read the work at +${call.readAt - 1_000_000} ms, while ${record.owner}'s record was kept (until +${record.until - 1_000_000} ms), and was answered ${told}`,
        );
      }
    }
    return found;
  }
}

/**
 * The next true instant after `now` at which a decision of some process may change: for every time a
 * document stores (a lease's end, a record's or claim's expiry, a ticket's), that time plus each of
 * `deltas` (0 and the skew allowance at least) by each process's clock, one millisecond after (the
 * engine compares both strictly and not).
 */
export function nextInstant(memory: MemoryLockStore, processes: ReadonlyMap<string, Process>, now: number, deltas: readonly number[] = []): number | undefined {
  const times: number[] = [];
  for (const body of memory.bodies()) {
    for (const holder of body.holders) times.push(holder.expiresAt);
    for (const ticket of body.queue ?? []) times.push(ticket.expiresAt, ...(ticket.reservedUntil !== undefined ? [ticket.reservedUntil] : []));
    const work = body.work;
    // A claim decides nothing once an outcome is recorded.
    if (work?.outcome) times.push(work.outcome.expiresAt);
    else if (work?.claim) times.push(work.claim.expiresAt);
  }
  let next: number | undefined;
  for (const time of times) {
    for (const { offset, skewMs } of processes.values()) {
      for (const delta of [0, skewMs, ...deltas]) {
        const instant = time + delta - offset + 1;
        if (instant > now && (next === undefined || instant < next)) next = instant;
      }
    }
  }
  return next;
}

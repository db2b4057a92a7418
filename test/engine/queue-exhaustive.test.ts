/**
 * Every interleaving, up to a bound, of a small configuration of the queue protocol (docs/protocol.md):
 * one lock document; a caller that does not wait (X), a waiter in the call (S, shared) and a waiter
 * woken by a channel (W, exclusive, whose wake-up may arrive twice and whose channel may go away);
 * the sweeper; and time passing in steps past leases, reservations and tickets.
 *
 * Why this is exhaustive over the engine's decisions: every change of a lock document is one
 * conditional write decided on some version of it (lock-document.ts). A write decided on any version
 * but the current one does not apply, so the outcomes of all interleavings are the sequences of writes
 * each decided on the current version, which is what the search enumerates (depth-first, states
 * deduplicated). The decisions are the engine's own pure functions; only the store is left out (the
 * random simulation, interleavings.test.ts, and the real node cover it). A failure prints the shortest
 * schedule that breaks (breadth of the search grows one step at a time).
 */
import { describe, expect, it } from 'vitest';
import { compatible } from '../../packages/engine/src/compatibility.js';
import { compareFencingTokens } from '../../packages/engine/src/fencing.js';
import { planKeys } from '../../packages/engine/src/keys.js';
import { type Claim, decideAcquire, fenceOf, isLive, removeLeaseOp, replaceOp, settleFences } from '../../packages/engine/src/lock-document.js';
import type { HolderMode, PlannedKey } from '../../packages/engine/src/model.js';
import { claimable, handOver } from '../../packages/engine/src/queue.js';
import { resolveSettings } from '../../packages/engine/src/settings.js';
import type { StoredLock, WriteOp } from '../../packages/engine/src/store.js';

const DEPTH = Number(process.env.EXHAUSTIVE_DEPTH ?? 11);
const TICK_MS = 100;
const MAX_TICKS = 6;
const timing = resolveSettings({ maxClockSkewMs: 50, queue: { claimWindowMs: 150, rewakeAfterMs: 100 } });
const key = (mode: 'exclusive' | 'shared'): PlannedKey => planKeys({ namespace: 'x', granularity: 'document', ids: ['a'] }, mode)[0]!;

type Phase = 'idle' | 'queued' | 'holding' | 'done';
interface Proc {
  name: 'X' | 'S' | 'W';
  mode: 'exclusive' | 'shared';
  phase: Phase;
  lease?: string;
  /** W: wake-ups received and not yet acted on; whether it has been told anything at all; whether its channel is gone. */
  inbox: number;
  told: boolean;
  gone: boolean;
  attempts: number;
}
interface Hold {
  proc: string;
  mode: HolderMode;
  token: string;
  start: number;
  end: number;
}
interface State {
  now: number;
  ticks: number;
  seq: number;
  doc: StoredLock | null;
  procs: Proc[];
  holds: Hold[];
  steps: string[];
}

const initial = (): State => ({
  now: 1_000,
  ticks: 0,
  seq: 0,
  doc: null,
  procs: [
    { name: 'X', mode: 'exclusive', phase: 'idle', inbox: 0, told: false, gone: false, attempts: 0 },
    { name: 'S', mode: 'shared', phase: 'idle', inbox: 0, told: false, gone: false, attempts: 0 },
    { name: 'W', mode: 'exclusive', phase: 'idle', inbox: 0, told: false, gone: false, attempts: 0 },
  ],
  holds: [],
  steps: [],
});

const clone = (state: State): State => structuredClone(state);

function claimOf(proc: Proc, lease: string, now: number): Claim {
  const requestId = proc.name === 'X' ? null : `request-${proc.name}`;
  const waits = proc.name !== 'X';
  return {
    leaseId: lease,
    proof: 'proof',
    owner: proc.name,
    requestId,
    call: requestId ? `call-${proc.name}` : null,
    expiresAt: now + 250,
    ...(waits && !(proc.name === 'W' && proc.phase === 'queued')
      ? {
          queue: {
            ticket: lease,
            owner: proc.name,
            mode: proc.mode === 'exclusive' ? 'X' : 'S',
            ttlMs: 250,
            expiresAt: now + 500,
            request: requestId,
            call: `call-${proc.name}`,
            ...(proc.name === 'W' ? { wake: { kind: 'queue' as const, queueUrl: 'https://sqs.example/w' } } : {}),
          },
        }
      : {}),
  };
}

/** Applies a write decided on the current version; records what it granted, and tells the channel waiter what it reserved or dropped. */
function apply(state: State, op: WriteOp, by?: Proc): void {
  const before = state.doc;
  state.seq++;
  state.doc = op.kind === 'delete' ? null : { docId: op.docId, seqNo: state.seq, primaryTerm: 1, index: 'locks', body: op.body };
  const w = state.procs.find((proc) => proc.name === 'W')!;
  for (const ticket of op.queueEffects?.reserved ?? []) {
    if (ticket.owner !== 'W' || w.gone) continue;
    w.inbox += 1;
    w.told = true;
  }
  for (const ticket of op.queueEffects?.dropped ?? []) if (ticket.owner === 'W') w.told = true;
  if (!state.doc) return;
  const previous = new Set(before?.body.holders.map((holder) => holder.lease));
  for (const holder of state.doc.body.holders) {
    if (previous.has(holder.lease)) continue;
    // A holder appears only by its own process's write: anything else is a grant made on someone's behalf.
    if (!by || holder.lease !== by.lease) throw new Error(`holder ${holder.owner} (${holder.lease}) inserted by ${by?.name ?? 'the sweeper'}'s write`);
    state.holds.push({ proc: by.name, mode: holder.mode, token: fenceOf(holder, state.doc), start: state.now, end: holder.expiresAt });
  }
}

/** What may happen next in `state`: each a label and the change it makes. */
function moves(state: State): Array<[string, (next: State) => void]> {
  const found: Array<[string, (next: State) => void]> = [];
  for (const [index, proc] of state.procs.entries()) {
    const at = (next: State): Proc => next.procs[index]!;
    if (proc.phase === 'idle' && proc.attempts < 2) {
      found.push([
        `${proc.name} acquires`,
        (next) => {
          const me = at(next);
          me.attempts++;
          me.lease = `${me.name}${me.attempts}`;
          const decision = decideAcquire(next.doc, key(me.mode), claimOf(me, me.lease, next.now), next.now, timing);
          if (decision.kind === 'conflict' || decision.kind === 'permits-mismatch' || decision.kind === 'queue-full') return;
          // No write: our lease is there already, a drain took our ticket out, or our call's claim holds the lock.
          if (decision.kind === 'already-held' || decision.kind === 'drained' || decision.kind === 'claimed') return;
          if (decision.op) apply(next, decision.op, me);
          me.phase = decision.kind === 'queued' ? 'queued' : 'holding';
        },
      ]);
    }
    // The waiter in the call claims when its look shows the reservation; the channel waiter when woken (a copy of the wake-up may come twice).
    const reserved = state.doc?.body.queue?.find((ticket) => ticket.owner === proc.name);
    const mayClaim = proc.name === 'S' ? proc.phase === 'queued' && claimable(reserved, state.now) : proc.name === 'W' && proc.inbox > 0;
    if (mayClaim) {
      found.push([
        `${proc.name} claims`,
        (next) => {
          const me = at(next);
          if (me.name === 'W') {
            me.inbox--;
            me.lease = `${me.name}c${me.inbox}-${next.seq}`;
          }
          const decision = decideAcquire(next.doc, key(me.mode), claimOf(me, me.lease!, next.now), next.now, timing);
          if (decision.kind === 'write') {
            apply(next, decision.op, me);
            // A second claim of one call takes the first one's grant over: the first holds no more.
            for (const hold of next.holds) if (hold.proc === me.name && hold.end > next.now && next.holds.at(-1) !== hold) hold.end = next.now;
            me.phase = 'holding';
          }
        },
      ]);
    }
    if (proc.phase === 'holding') {
      found.push([
        `${proc.name} releases`,
        (next) => {
          const me = at(next);
          me.phase = 'done';
          for (const hold of next.holds) if (hold.proc === me.name) hold.end = Math.min(hold.end, next.now);
          const op = next.doc && removeLeaseOp(next.doc, me.lease!, next.now, timing, false, true);
          if (op) apply(next, op);
        },
      ]);
    }
    if (proc.name === 'W' && proc.phase === 'queued' && !proc.gone) {
      found.push([
        "W's channel goes away",
        (next) => {
          at(next).gone = true;
          at(next).inbox = 0;
        },
      ]);
    }
  }
  if (state.doc) {
    const doc = state.doc;
    const live = settleFences(doc).filter((holder) => isLive(holder, state.now, timing.maxClockSkewMs));
    const served = handOver(live, doc.body.queue, state.now, timing);
    if (live.length < doc.body.holders.length || served.reserved.length > 0 || served.dropped.length > 0) {
      found.push(['the sweeper serves', (next) => apply(next, replaceOp(next.doc!, { ...next.doc!.body, docId: next.doc!.docId }, live, next.now, timing))]);
    }
    // A channel that answers "nobody waits" to a wake-up: the writer cancels the reservation.
    const ticket = doc.body.queue?.find((waiter) => waiter.owner === 'W' && waiter.reservedUntil !== undefined);
    if (ticket && state.procs[2]!.gone) {
      found.push([
        'the reservation of W is cancelled',
        (next) => {
          const queue = (next.doc!.body.queue ?? []).filter((waiter) => waiter.owner !== 'W');
          apply(
            next,
            replaceOp(next.doc!, { ...next.doc!.body, docId: next.doc!.docId }, settleFences(next.doc!), next.now, timing, false, {
              queue,
              nextPosition: next.doc!.body.nextPosition ?? 0,
            }),
          );
        },
      ]);
    }
  }
  if (state.ticks < MAX_TICKS) {
    found.push([
      `time passes to +${(state.ticks + 1) * TICK_MS} ms`,
      (next) => {
        next.ticks++;
        next.now += TICK_MS;
        for (const proc of next.procs) {
          // A holder stops at its lease's end by its own clock.
          const mine = next.doc?.body.holders.find((holder) => holder.lease === proc.lease);
          if (proc.phase === 'holding' && (!mine || mine.expiresAt <= next.now)) proc.phase = 'done';
        }
      },
    ]);
  }
  return found;
}

function violations(state: State): string[] {
  const found: string[] = [];
  for (const [index, a] of state.holds.entries()) {
    for (const b of state.holds.slice(index + 1)) {
      if (a.proc === b.proc || compatible(a.mode, b.mode)) continue;
      if (Math.max(a.start, b.start) < Math.min(a.end, b.end)) found.push(`two holders: ${a.proc} ${a.mode} and ${b.proc} ${b.mode} overlap`);
      if (compareFencingTokens(b.token, a.token) <= 0) found.push(`fencing order: ${b.proc} got ${b.token} after ${a.proc}'s ${a.token}`);
    }
  }
  return found;
}

/** After the schedule: time moves past everything and the sweeper serves until nothing is left; a waiter that joined must have been woken or told. */
function untold(state: State): string[] {
  const end = clone(state);
  for (let round = 0; round < 6 && end.doc; round++) {
    end.now += 1_000;
    const live = settleFences(end.doc).filter((holder) => isLive(holder, end.now, timing.maxClockSkewMs));
    apply(end, replaceOp(end.doc, { ...end.doc.body, docId: end.doc.docId }, live, end.now, timing));
  }
  const w = end.procs[2]!;
  return w.attempts > 0 && w.phase !== 'idle' && !w.told && !w.gone ? ['W joined the queue and was never woken nor told it failed'] : [];
}

describe('the queue protocol, every interleaving up to a bound', () => {
  it(`keeps one holder at a time, fencing order and every waiter told, in every schedule of up to ${DEPTH} steps`, () => {
    const seen = new Set<string>();
    let explored = 0;
    let failure: string[] | undefined;
    // Iterative deepening: the first failure found is one of the shortest schedules that break.
    for (let limit = 1; limit <= DEPTH && !failure; limit++) {
      seen.clear();
      const stack: Array<{ state: State; depth: number }> = [{ state: initial(), depth: 0 }];
      while (stack.length > 0 && !failure) {
        const { state, depth } = stack.pop()!;
        const fingerprint = JSON.stringify([state.now, state.doc, state.procs, state.holds.map((hold) => [hold.proc, hold.end > state.now])]);
        if (seen.has(`${depth}:${fingerprint}`)) continue;
        seen.add(`${depth}:${fingerprint}`);
        explored++;
        const problems = [...violations(state), ...(depth === limit ? untold(state) : [])];
        if (problems.length > 0) failure = [...problems, 'schedule:', ...state.steps];
        if (depth === limit) continue;
        for (const [label, move] of moves(state)) {
          const next = clone(state);
          try {
            move(next);
          } catch (error) {
            failure = [(error as Error).message, 'schedule:', ...state.steps, label];
            break;
          }
          next.steps.push(`${label} (at +${next.now - 1_000} ms)`);
          stack.push({ state: next, depth: depth + 1 });
        }
      }
    }
    expect(failure ?? []).toEqual([]);
    // The bound did reach the interesting states: many schedules, not a handful.
    expect(explored).toBeGreaterThan(10_000);
  }, 600_000);
});

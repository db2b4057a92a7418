/**
 * Channel waiters in the fault runs: a WakeNotifier in memory (no AWS) that hands each message to the
 * waiter listening on its channel. A wake-up is a hint, never a grant: a waiter told `ready` claims
 * the lock with the same acquire again (faults/workload.ts), and only that claim's answer goes into
 * the history. The notifier injects the faults a real channel has:
 *
 * - thrown: the message went out, then the notifier died before noting it (it throws): the sweeper
 *   wakes the waiter again, which then hears twice;
 * - duplicated: the message reaches the waiter twice (at-least-once delivery);
 * - lost: the message is dropped, and the notifier answers `delivered` all the same: a `ready` lost
 *   is woken again by the sweeper (still reserved, unclaimed); a `failed` lost is heard by nobody, and
 *   the waiter ends on its channel's own timeout;
 * - gone: the channel answers `gone` (a waiter that gave up, a task token that timed out): the waiter
 *   stops there, and the engine cancels its reservation.
 *
 * A waiter that stopped listening (it claimed, was told it failed, or timed out) has no channel any
 * more: what comes later answers `gone` (counted as late).
 */
import type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from '../packages/engine/src/wake.js';

/** How a channel waiter's call ended. */
export type WaiterEnd = 'claimed' | 'claim-failed' | 'told-failed' | 'timed-out' | 'gave-up';

/** What a waiter heard while it waited: its first message, its channel gone, or nothing before its own timeout. */
export type Heard = { kind: 'message'; message: WakeMessage } | { kind: 'gone' } | { kind: 'timed-out' };

/** Shares of the deliveries that each fault hits (the rest go through once). */
export interface NotifierFaults {
  thrown: number;
  duplicated: number;
  lost: number;
  gone: number;
}

export const NOTIFIER_FAULTS: Readonly<NotifierFaults> = { thrown: 0.1, duplicated: 0.1, lost: 0.05, gone: 0.05 };

interface Box {
  client: string;
  messages: WakeMessage[];
  /** The waiter still listens: from its queue call until its call ends. */
  listening: boolean;
  /** The channel answered `gone` to a message before the waiter heard anything: it gave up. */
  gaveUp: boolean;
  end?: WaiterEnd;
  arrived?: () => void;
}

export interface WakeTally {
  /** Channel waiters: calls that queued (or may have: an acquire with wake whose outcome is unknown). */
  waiters: number;
  /** Queue calls refused or failed for sure: nothing queued, no channel waited on (not among `waiters`). */
  notQueued: number;
  /** Waiters whose first message was `ready`. */
  woken: number;
  /** Their claims: granted, or refused / failed (a lapsed reservation, the store). */
  claimed: number;
  claimFailed: number;
  /** Waiters whose first message was `failed`. */
  toldFailed: number;
  /** Waiters that heard nothing before their own channel's timeout. */
  timedOut: number;
  /** Waiters whose channel answered `gone` (injected) before they heard anything. */
  gaveUp: number;
  /** Messages a waiter received beyond its first (injected copies, wake-ups again after a throw or a lost message). */
  duplicates: number;
  /** Messages that came after the waiter stopped listening (answered `gone`). */
  late: number;
  /** `ready` messages that named another call than the waiter's (target, mode, owner, requestId): an engine bug. */
  mismatched: number;
  /** Waiters whose call has not ended (told, or its own timeout): must be 0 at the end of a run. */
  untold: number;
  /** The notifier's own faults, per delivery. */
  injected: NotifierFaults;
}

export class FaultNotifier implements WakeNotifier {
  private readonly boxes = new Map<string, Box>();
  readonly tally: WakeTally = {
    waiters: 0,
    notQueued: 0,
    woken: 0,
    claimed: 0,
    claimFailed: 0,
    toldFailed: 0,
    timedOut: 0,
    gaveUp: 0,
    duplicates: 0,
    late: 0,
    mismatched: 0,
    untold: 0,
    injected: { thrown: 0, duplicated: 0, lost: 0, gone: 0 },
  };

  constructor(
    private readonly faults: Readonly<NotifierFaults> = NOTIFIER_FAULTS,
    private readonly random: () => number = Math.random,
  ) {}

  /** Opens a channel for one call of `client`: an SQS-like queue URL of its own, listened to from now on. */
  open(client: string, call: number): { channel: WakeChannel; wake: { queueUrl: string } } {
    const queueUrl = `https://sqs.memory.invalid/wake/${client}/${call}`;
    this.boxes.set(queueUrl, { client, messages: [], listening: true, gaveUp: false });
    this.tally.waiters++;
    return { channel: { kind: 'queue', queueUrl }, wake: { queueUrl } };
  }

  private box(channel: WakeChannel): Box | undefined {
    return channel.kind === 'queue' ? this.boxes.get(channel.queueUrl) : undefined;
  }

  async notify(channel: WakeChannel, message: WakeMessage): Promise<WakeDelivery> {
    const box = this.box(channel);
    if (!box) return 'gone';
    if (!box.listening || box.gaveUp) {
      this.tally.late++;
      return 'gone';
    }
    const { thrown, duplicated, lost, gone } = this.faults;
    const roll = this.random();
    if (roll < lost) {
      this.tally.injected.lost++;
      return 'delivered';
    }
    // A waiter gives up only while it has heard nothing: one told already is claiming, or done.
    if (roll < lost + gone && box.messages.length === 0) {
      this.tally.injected.gone++;
      box.gaveUp = true;
      box.arrived?.();
      return 'gone';
    }
    this.deliver(box, message);
    if (roll < lost + gone + duplicated) {
      this.tally.injected.duplicated++;
      this.deliver(box, message);
    } else if (roll < lost + gone + duplicated + thrown) {
      this.tally.injected.thrown++;
      throw new Error('the message went out, then the notifier died before noting it (fault run)');
    }
    return 'delivered';
  }

  private deliver(box: Box, message: WakeMessage): void {
    box.messages.push(message);
    box.arrived?.();
  }

  /** What the waiter hears first: a message, its channel gone, or nothing within `timeoutMs` (its channel's own timeout). */
  async listen(channel: WakeChannel, timeoutMs: number): Promise<Heard> {
    const box = this.box(channel);
    if (!box) return { kind: 'timed-out' };
    if (box.messages.length === 0 && !box.gaveUp) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        box.arrived = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      box.arrived = undefined;
    }
    const [first] = box.messages;
    if (first) return { kind: 'message', message: first };
    return box.gaveUp ? { kind: 'gone' } : { kind: 'timed-out' };
  }

  /** The waiter's call ended: it stops listening (later messages answer `gone`). */
  end(channel: WakeChannel, end: WaiterEnd): void {
    const box = this.box(channel);
    if (!box || box.end) return;
    box.end = end;
    box.listening = false;
    box.arrived = undefined;
  }

  /** The queue call failed for sure: no ticket, nobody waits on the channel. */
  notQueued(channel: WakeChannel): void {
    if (channel.kind !== 'queue' || !this.boxes.delete(channel.queueUrl)) return;
    this.tally.waiters--;
    this.tally.notQueued++;
  }

  /** Waiters listening that have heard nothing yet (what a re-created lock index drops: their tickets went with it). */
  waiting(): number {
    return [...this.boxes.values()].filter((box) => box.listening && box.messages.length === 0 && !box.gaveUp).length;
  }

  /** At the end of a run: how each waiter's call ended, and what the channels carried. */
  count(): WakeTally {
    const ends: Record<WaiterEnd, number> = { claimed: 0, 'claim-failed': 0, 'told-failed': 0, 'timed-out': 0, 'gave-up': 0 };
    let woken = 0;
    let duplicates = 0;
    let untold = 0;
    for (const box of this.boxes.values()) {
      if (box.end) ends[box.end]++;
      else untold++;
      if (box.messages[0]?.outcome === 'ready') woken++;
      duplicates += Math.max(0, box.messages.length - 1);
    }
    Object.assign(this.tally, {
      woken,
      claimed: ends.claimed,
      claimFailed: ends['claim-failed'],
      toldFailed: ends['told-failed'],
      timedOut: ends['timed-out'],
      gaveUp: ends['gave-up'],
      duplicates,
      untold,
    });
    return this.tally;
  }
}

/** Whether every channel waiter ended told (ready, then its claim; or failed) or on its own channel's timeout (or gone). */
export const everyWaiterEnded = (tally: WakeTally): boolean =>
  tally.untold === 0 && tally.claimed + tally.claimFailed + tally.toldFailed + tally.timedOut + tally.gaveUp === tally.waiters;

/** The tallies of several runs added up (the soak's table). */
export function sumTallies(tallies: readonly WakeTally[]): WakeTally {
  const total = new FaultNotifier().tally;
  for (const tally of tallies) {
    for (const field of Object.keys(total) as Array<keyof WakeTally>) {
      if (field !== 'injected') total[field] += tally[field];
    }
    for (const fault of Object.keys(total.injected) as Array<keyof NotifierFaults>) total.injected[fault] += tally.injected[fault];
  }
  return total;
}

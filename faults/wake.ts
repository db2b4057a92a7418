/**
 * Channel waiters in the fault runs: a WakeNotifier in memory (no AWS) that hands each message to
 * the client waiting on its channel and records the grant in the history when it is told, since a
 * grant counts from the moment the notifier is called with it. One delivery in ten throws after the
 * message went out (the process died before noting it), so that the sweeper tells it again: a
 * waiter then receives the same lease twice.
 */
import type { WakeChannel, WakeDelivery, WakeMessage, WakeNotifier } from '../functions/core/wake.js';
import type { HeldKey, HistoryEvent } from './history.js';

/** One channel waiter: who it is, what it asked for, and where its messages go. */
interface Mailbox {
  client: string;
  keys: HeldKey[];
  clockOffsetMs: number;
  messages: WakeMessage[];
  /** The leases already recorded as granted (one `ok` per lease, however often it is told). */
  recorded: Set<string>;
  /** The client's call failed and it stopped waiting (a task that failed): later messages find nobody. */
  closed: boolean;
  arrived?: () => void;
}

export interface WakeTally {
  waiters: number;
  toldGranted: number;
  toldFailed: number;
  toldTwice: number;
  /** Waiters the call left queued that heard nothing by the end of the run (the engine's best effort lost it, or the run ended first). */
  untold: number;
}

export class FaultNotifier implements WakeNotifier {
  private readonly boxes = new Map<string, Mailbox>();
  readonly tally: WakeTally = { waiters: 0, toldGranted: 0, toldFailed: 0, toldTwice: 0, untold: 0 };

  constructor(private readonly history: HistoryEvent[]) {}

  /** Opens a channel for one call of `client`: an SQS-like queue URL of its own. */
  open(client: string, call: number, keys: HeldKey[], clockOffsetMs: number): { channel: WakeChannel; wake: { queueUrl: string } } {
    const queueUrl = `https://sqs.memory.invalid/wake/${client}/${call}`;
    this.boxes.set(queueUrl, { client, keys, clockOffsetMs, messages: [], recorded: new Set(), closed: false });
    this.tally.waiters++;
    return { channel: { kind: 'queue', queueUrl }, wake: { queueUrl } };
  }

  async notify(channel: WakeChannel, message: WakeMessage): Promise<WakeDelivery> {
    const box = channel.kind === 'queue' ? this.boxes.get(channel.queueUrl) : undefined;
    if (!box || box.closed) return 'gone';
    if (message.outcome === 'granted' && !box.recorded.has(message.grant.leaseId)) {
      box.recorded.add(message.grant.leaseId);
      this.history.push({
        client: box.client,
        time: Date.now(),
        type: 'ok',
        op: 'acquire',
        leaseId: message.grant.leaseId,
        keys: box.keys,
        fencingToken: message.grant.fencingToken,
        expiresAt: message.grant.expiresAt - box.clockOffsetMs,
        ...(box.clockOffsetMs !== 0 ? { clockOffsetMs: box.clockOffsetMs } : {}),
      });
    }
    box.messages.push(message);
    box.arrived?.();
    if (Math.random() < 0.1) throw new Error('the message went out, then the notifier died before noting it (fault run)');
    return 'delivered';
  }

  /** The first outcome told on the channel so far. */
  first(channel: WakeChannel): WakeMessage | undefined {
    return channel.kind === 'queue' ? this.boxes.get(channel.queueUrl)?.messages[0] : undefined;
  }

  /** The first outcome told on the channel, waiting up to `timeoutMs`; undefined if none came. */
  async next(channel: WakeChannel, timeoutMs: number): Promise<WakeMessage | undefined> {
    const box = channel.kind === 'queue' ? this.boxes.get(channel.queueUrl) : undefined;
    if (!box) return undefined;
    if (box.messages.length === 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        box.arrived = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      box.arrived = undefined;
    }
    return box.messages[0];
  }

  /** Whether a grant of this lease reached the channel more than once (a waiter keys on the lease: the copies are one lease). */
  copies(channel: WakeChannel, leaseId: string): number {
    const box = channel.kind === 'queue' ? this.boxes.get(channel.queueUrl) : undefined;
    return box?.messages.filter((message) => message.outcome === 'granted' && message.grant.leaseId === leaseId).length ?? 0;
  }

  /** The client's call failed, so it stops listening: later deliveries answer `gone` (the engine gives a grant back). A client that only gave up waiting keeps its channel open: what comes later is still counted. */
  close(channel: WakeChannel): void {
    const box = channel.kind === 'queue' ? this.boxes.get(channel.queueUrl) : undefined;
    if (box) box.closed = true;
  }

  /** At the end of a run: how many channels heard what. `queued`: the channels whose call answered queued. */
  count(queued: ReadonlySet<string>): WakeTally {
    for (const [url, box] of this.boxes) {
      const granted = box.messages.filter((message) => message.outcome === 'granted');
      if (granted.length > 0) this.tally.toldGranted++;
      if (granted.length > 1) this.tally.toldTwice++;
      if (box.messages.some((message) => message.outcome === 'failed')) this.tally.toldFailed++;
      if (queued.has(url) && box.messages.length === 0) this.tally.untold++;
    }
    return this.tally;
  }
}

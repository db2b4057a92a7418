/**
 * The faults the runner knows: what each does (for --help and the table), how the clients behave
 * under it, and which sets --short and --soak run. One place, so the usage text, the option checks
 * and the injector cannot disagree on a name.
 */

export const FAULTS = [
  'kill-primary',
  'pause-primary',
  'kill-replica',
  'partition-reset',
  'partition-drop',
  'partition-isolate',
  'crash-holders',
  'pause-holders',
  'stall-acquirers',
  'timeout-acquirers',
  'clock-skew',
  'clock-skew-beyond',
  'recreate-index',
  'work-revoke',
  'work-revoke-kill',
] as const;
export type Fault = (typeof FAULTS)[number];

export const DESCRIPTIONS: Record<Fault, string> = {
  'kill-primary': "kill -9 of the node holding the lock index's primary, restarted 10 s later",
  'pause-primary': "SIGSTOP of the primary's node for up to 20 s",
  'kill-replica': "kill -9 of the replica's node, restarted 10 s later",
  'partition-reset':
    "the primary's node cut off from the other nodes' transport by TCP resets (iptables), its HTTP port still answering clients; healed after up to 15 s",
  'partition-drop': 'the same, with its transport packets silently dropped',
  'partition-isolate': "the primary's node's transport and HTTP port both dropped: clients fail over to the other nodes",
  'crash-holders': '20 % of holders never release',
  'pause-holders': '20 % of holders stall 2.3 s past their 2 s lease, then renew and release',
  'stall-acquirers': '15 % of acquires stall 2.4 s (past the TTL) between two store calls',
  'timeout-acquirers': '15 % of acquires freeze for good after their first write (a Lambda timeout)',
  'clock-skew': "clients' clocks spread over the engine's maxClockSkewMs (500 ms: -250 to +250 ms), 20 % of holders crash",
  'clock-skew-beyond': 'clocks spread over 5x maxClockSkewMs (-1250 to +1250 ms): beyond the assumption, expected to break',
  'recreate-index':
    "the lock index re-created as its next incarnation mid-run, as an operator would (recreateLockIndex: refused while tickets are queued, then forced): its leases and tickets are lost, the new epoch's tokens are larger",
  'work-revoke':
    'work that runs once (faults/work-once.ts: messages delivered twice at once and again later, records completed or failed, some record writes stalled) while an operator revokes a document every 150-450 ms; clocks spread over maxClockSkewMs',
  'work-revoke-kill': "the same, and kill -9 of the primary's node mid-run, restarted 10 s later",
};

/** What `npm test` runs: a failover, the harder partition, clocks within the bound (the tree+document workload in each). */
export const SHORT_FAULTS: readonly Fault[] = ['kill-primary', 'partition-drop', 'clock-skew'];

/** Runs that demonstrate an assumption by breaking it: their violations are counted, not failures. */
export const EXPECTED_TO_BREAK: readonly Fault[] = ['clock-skew-beyond'];

export const isPartition = (fault: Fault): boolean => fault.startsWith('partition-');

/** How the clients behave under a fault, and the engine settings they run with. */
export interface Behaviour {
  /** Share of holders that die holding the lock (its lease must run out). */
  crashRate: number;
  /** Share of holders that stall 2.3 s, past their lease, then renew and release. */
  stallRate: number;
  /** Acquires hooked between two store calls: stalled past the TTL, or frozen for good. */
  acquirers?: { fault: 'stall' | 'freeze'; rate: number };
  /** The clients' clocks are spread evenly over this range, centred on the real clock. */
  clockSpreadMs: number;
  /** The engine's maxClockSkewMs. */
  maxClockSkewMs: number;
  /** The clients run work that runs once (faults/work-once.ts) with an operator revoking, instead of the lock workload. */
  workOnce?: boolean;
}

/**
 * The engine's default skew allowance is what the clock-skew faults test. The others use 100 ms
 * (all clients share one real clock) so that an expired 2 s lease is taken over sooner.
 */
const DEFAULT_MAX_CLOCK_SKEW_MS = 500;

export function behaviourOf(fault: Fault): Behaviour {
  const base: Behaviour = { crashRate: 0, stallRate: 0, clockSpreadMs: 0, maxClockSkewMs: 100 };
  switch (fault) {
    case 'crash-holders':
      return { ...base, crashRate: 0.2 };
    case 'pause-holders':
      return { ...base, stallRate: 0.2 };
    case 'stall-acquirers':
      return { ...base, acquirers: { fault: 'stall', rate: 0.15 } };
    case 'timeout-acquirers':
      return { ...base, acquirers: { fault: 'freeze', rate: 0.15 } };
    // Without takeovers of expired leases, skewed clocks would decide nothing: some holders crash.
    case 'clock-skew':
      return { ...base, crashRate: 0.2, clockSpreadMs: DEFAULT_MAX_CLOCK_SKEW_MS, maxClockSkewMs: DEFAULT_MAX_CLOCK_SKEW_MS };
    case 'clock-skew-beyond':
      return { ...base, crashRate: 0.2, clockSpreadMs: 5 * DEFAULT_MAX_CLOCK_SKEW_MS, maxClockSkewMs: DEFAULT_MAX_CLOCK_SKEW_MS };
    // Records expire by the readers' clocks: spread within the bound, a reader ahead must still answer the record until it expires.
    case 'work-revoke':
    case 'work-revoke-kill':
      return { ...base, clockSpreadMs: DEFAULT_MAX_CLOCK_SKEW_MS, maxClockSkewMs: DEFAULT_MAX_CLOCK_SKEW_MS, workOnce: true };
    // A few holders die during a partition too, so that expired leases are taken over while a copy may be stale.
    case 'partition-reset':
    case 'partition-drop':
    case 'partition-isolate':
      return { ...base, crashRate: 0.05 };
    default:
      return base;
  }
}

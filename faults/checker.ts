/**
 * Checks a fault run's history for what the lock service promises, with lease semantics:
 *
 * - A hold lasts from its grant (the acquire's `ok`) until the earlier of its release (the release's
 *   `invoke`: the holder stops acting when it asks) and its lease's end (`expiresAt`, extended by each
 *   renewal that returned `ok`). An acquire whose outcome is unknown (`info`) may hold, but its client
 *   does not know it and never acts on it: it cannot overlap anything, and it does not count.
 * - overlap: two incompatible holds on one key overlap by more than the clock skew allowance;
 * - lost-grant: the service confirmed a hold (a renewal `ok`, or a release that says `released`) in
 *   a call made while an incompatible later grant on one of its keys was live: it had given the key
 *   away and still told the first holder it had it;
 * - fencing-order: of two incompatible holds on one key, the later grant has a token that is not larger;
 * - non-holder-succeeded: a renew or release with a forged token returned `ok` (a release counts when
 *   its outcome says it released something).
 */
import type { CheckerOptions, HeldKey, HistoryEvent, HolderMode, Violation } from './history.js';

/** The compatibility table, written out again: a checker must not share the engine's copy. */
const MAY_SHARE: Record<HolderMode, readonly HolderMode[]> = { IS: ['IS', 'IX', 'S'], IX: ['IS', 'IX'], S: ['IS', 'S'], X: [] };
const compatible = (a: HolderMode, b: HolderMode): boolean => MAY_SHARE[a].includes(b) && MAY_SHARE[b].includes(a);

export interface Hold {
  client: string;
  leaseId: string;
  keys: HeldKey[];
  fencingToken: string;
  grantedAt: number;
  /** The earlier of its release's invoke and its lease's end (after renewals). */
  endsAt: number;
}

const compareTokens = (a: string, b: string): number => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

/** The holds a history acknowledged, in grant order. */
export function holdsOf(history: readonly HistoryEvent[]): Hold[] {
  const holds = new Map<string, Hold>();
  for (const event of [...history].sort((a, b) => a.time - b.time)) {
    if (event.op === 'acquire' && event.type === 'ok' && event.leaseId && event.keys && event.fencingToken && event.expiresAt !== undefined) {
      holds.set(event.leaseId, {
        client: event.client,
        leaseId: event.leaseId,
        keys: event.keys,
        fencingToken: event.fencingToken,
        grantedAt: event.time,
        endsAt: event.expiresAt,
      });
      continue;
    }
    const hold = event.leaseId ? holds.get(event.leaseId) : undefined;
    if (!hold || event.forged) continue;
    // A renewal extends the hold only once its answer arrived, and only to what it said.
    if (event.op === 'renew' && event.type === 'ok' && event.expiresAt !== undefined && event.time < hold.endsAt) hold.endsAt = event.expiresAt;
    if (event.op === 'release' && event.type === 'invoke') hold.endsAt = Math.min(hold.endsAt, event.time);
  }
  return [...holds.values()].sort((a, b) => a.grantedAt - b.grantedAt);
}

export function checkHistory(history: readonly HistoryEvent[], options: CheckerOptions): Violation[] {
  const violations: Violation[] = [];
  const holds = holdsOf(history);
  // A confirmation counts from its call's invoke: the service may have acted any time between invoke
  // and answer, so only a call that started after the other grant surely confirmed after it.
  const confirmations = new Map<string, number[]>();
  const invokedAt = new Map<string, number>();
  for (const event of [...history].sort((a, b) => a.time - b.time)) {
    if (event.type === 'invoke') invokedAt.set(event.client, event.time);
    const confirms =
      event.type === 'ok' && !event.forged && event.leaseId && (event.op === 'renew' || (event.op === 'release' && event.outcome === 'released'));
    if (confirms) confirmations.set(event.leaseId!, [...(confirmations.get(event.leaseId!) ?? []), invokedAt.get(event.client) ?? event.time]);
  }
  for (const [index, first] of holds.entries()) {
    for (const second of holds.slice(index + 1)) {
      for (const a of first.keys) {
        const b = second.keys.find((candidate) => candidate.key === a.key);
        if (!b || compatible(a.mode, b.mode)) continue;
        const describe = `${first.client} (${a.mode}, token ${first.fencingToken}) and ${second.client} (${b.mode}, token ${second.fencingToken}) on ${a.key}`;
        const overlap = Math.min(first.endsAt, second.endsAt) - Math.max(first.grantedAt, second.grantedAt);
        if (overlap > options.maxClockSkewMs) violations.push({ kind: 'overlap', message: `${describe}: held together for ${Math.round(overlap)} ms` });
        const confirmedLate = (confirmations.get(first.leaseId) ?? []).find((at) => at > second.grantedAt + options.maxClockSkewMs && at < second.endsAt);
        if (confirmedLate !== undefined) {
          violations.push({
            kind: 'lost-grant',
            message: `${describe}: ${first.client} was told it still held the lock ${Math.round(confirmedLate - second.grantedAt)} ms after ${second.client} got it`,
          });
        }
        if (compareTokens(second.fencingToken, first.fencingToken) <= 0) {
          violations.push({ kind: 'fencing-order', message: `${describe}: ${second.client} was granted later with a token that is not larger` });
        }
      }
    }
  }
  for (const event of history) {
    if (!event.forged || event.type !== 'ok' || event.op === 'acquire') continue;
    if (event.op === 'release' && (event.outcome === 'not_held' || event.outcome === undefined)) continue;
    violations.push({
      kind: 'non-holder-succeeded',
      message: `${event.client}'s ${event.op} with a forged token for lease ${event.leaseId} succeeded${event.outcome ? ` (${event.outcome})` : ''}`,
    });
  }
  return violations;
}

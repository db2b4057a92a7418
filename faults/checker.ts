/**
 * Checks a fault run's history for what the lock service promises, with lease semantics:
 *
 * - A hold lasts from its grant (the acquire's `ok`) until the earlier of its release (the release's
 *   `invoke`: the holder stops acting when it asks) and its lease's end (`expiresAt`, extended by each
 *   renewal that returned `ok`). An acquire whose outcome is unknown (`info`) may hold, but its client
 *   does not know it and never acts on it: it cannot overlap anything, and it does not count.
 * - overlap: two incompatible holds of one incarnation of the lock index overlap by more than the
 *   clock skew allowance. A fencing token carries its incarnation's epoch (token / 10¹⁶): when the
 *   lock index is re-created, the leases of the old incarnation are lost with it (docs/lock-index.md)
 *   and the lock is free in the new one at once, so a hold of an earlier epoch overlapping a later
 *   epoch's is no violation; its fence (the smaller token) stops it, which fencing-order checks;
 * - lost-grant: the service confirmed a hold (a renewal `ok`, or a release that says `released`) in
 *   a call made while an incompatible later grant was live: it had given the key away and still told
 *   the first holder it had it;
 * - fencing-order: of two incompatible holds, the later grant has a token that is not larger (across
 *   incarnations too: a later epoch's tokens are all larger);
 * - non-holder-succeeded: a renew or release with a forged token returned `ok` (a release counts when
 *   its outcome says it released something);
 * - over-limit: the holds of one semaphore (keys with `permits`, which share their key and are X to
 *   everything else) live together beyond the skew carry more permits than its limit.
 *
 * Incompatible holds are judged by the multi-granularity rules, written out here again rather than
 * imported (a checker must not share the engine's copy): a lock on a tree path covers everything
 * below it, and a lock on `/a/b` counts as an intention on `/a` (IX for X, IS for S). Each hold is
 * spread over the lock-space nodes it touches (its own key, and a tree path's ancestors in intention
 * mode) and two holds conflict where they meet on a node in modes the table does not let share.
 * Document and global keys are nodes of their own; `d|`, `g|` and `t|` keys never meet.
 */

import type { CheckerOptions, HeldKey, HistoryEvent, Hold, HolderMode, ViolatingHold, Violation, ViolationKind } from './history.js';
import { checkWork } from './work-checker.js';

/** The compatibility table: which modes a holder in the key's mode lets share the node. */
const MAY_SHARE: Record<HolderMode, readonly HolderMode[]> = { IS: ['IS', 'IX', 'S'], IX: ['IS', 'IX'], S: ['IS', 'S'], X: [] };
const MODES: readonly HolderMode[] = ['IS', 'IX', 'S', 'X'];
const compatible = (a: HolderMode, b: HolderMode): boolean => MAY_SHARE[a].includes(b) && MAY_SHARE[b].includes(a);
/** What a lock below a node amounts to on the node. */
const INTENTION: Record<HolderMode, HolderMode> = { X: 'IX', IX: 'IX', S: 'IS', IS: 'IS' };

const compareTokens = (a: string, b: string): number => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);

/** The incarnation a fencing token comes from: its epoch, the digits above 10¹⁶ (0 for tokens from before epochs). */
export const epochOf = (token: string): bigint => BigInt(token) / 10n ** 16n;

/** A held key on the lock-space nodes it touches: itself, and for a tree path every ancestor in intention mode. */
export function nodesOf(held: HeldKey): HeldKey[] {
  if (!held.key.startsWith('t|/')) return [held];
  const segments = held.key.slice(2).split('/').filter(Boolean);
  const ancestors = segments.slice(0, -1).map((_, depth) => ({ key: `t|/${segments.slice(0, depth + 1).join('/')}`, mode: INTENTION[held.mode] }));
  return [...ancestors, held];
}

/** Whether a hold touches the lock-space node `key` (a revoke's target key). */
const touches = (hold: Hold, key: string): boolean => hold.keys.some((held) => nodesOf(held).some((node) => node.key === key));

/**
 * The holds a history acknowledged, in grant order. A revoke ends the holds it took at its invoke
 * (its write came after; the lock may be given away from then on): those its answer names, or, when
 * its outcome is unknown, every hold on its keys granted before it answered.
 */
export function holdsOf(history: readonly HistoryEvent[]): Hold[] {
  const holds = new Map<string, Hold>();
  const invokedAt = new Map<string, number>();
  const revokeInvoke = new Map<string, HistoryEvent>();
  const endByRevoke = (hold: Hold, revokedAt: number): void => {
    hold.endsAt = Math.min(hold.endsAt, Math.max(hold.grantedAt, revokedAt));
  };
  for (const event of [...history].sort((a, b) => a.time - b.time)) {
    if (event.type === 'invoke') invokedAt.set(event.client, event.time);
    if (event.op === 'acquire' && event.type === 'ok' && event.leaseId && event.keys && event.fencingToken && event.expiresAt !== undefined) {
      holds.set(event.leaseId, {
        client: event.client,
        leaseId: event.leaseId,
        keys: event.keys,
        fencingToken: event.fencingToken,
        invokedAt: invokedAt.get(event.client) ?? event.time,
        grantedAt: event.time,
        endsAt: event.expiresAt,
        ...(event.clockOffsetMs ? { clockOffsetMs: event.clockOffsetMs } : {}),
      });
      continue;
    }
    if (event.op === 'revoke') {
      if (event.type === 'invoke') revokeInvoke.set(event.client, event);
      const invoke = revokeInvoke.get(event.client);
      if (event.type === 'ok' && invoke) for (const lease of event.revoked ?? []) if (holds.has(lease)) endByRevoke(holds.get(lease)!, invoke.time);
      if (event.type === 'info' && invoke) {
        for (const hold of holds.values()) if (hold.endsAt > invoke.time && invoke.keys?.some(({ key }) => touches(hold, key))) endByRevoke(hold, invoke.time);
      }
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

/** One hold on one node: in `mode` there, because it asked for `held`. */
interface Entry {
  hold: Hold;
  mode: HolderMode;
  held: HeldKey;
}

/**
 * When the service confirmed each lease (a renewal ok, a release that released). A confirmation
 * counts from its call's invoke: the service may have acted any time between invoke and answer, so
 * only a call that started after the other grant surely confirmed after it.
 */
function confirmationsOf(history: readonly HistoryEvent[]): Map<string, number[]> {
  const confirmations = new Map<string, number[]>();
  const invokedAt = new Map<string, number>();
  for (const event of [...history].sort((a, b) => a.time - b.time)) {
    if (event.type === 'invoke') invokedAt.set(event.client, event.time);
    const confirms =
      event.type === 'ok' && !event.forged && event.leaseId && (event.op === 'renew' || (event.op === 'release' && event.outcome === 'released'));
    if (confirms) confirmations.set(event.leaseId!, [...(confirmations.get(event.leaseId!) ?? []), invokedAt.get(event.client) ?? event.time]);
  }
  return confirmations;
}

const side = (entry: Entry): ViolatingHold => ({
  client: entry.hold.client,
  leaseId: entry.hold.leaseId,
  key: entry.held.key,
  mode: entry.held.mode,
  fencingToken: entry.hold.fencingToken,
  grantedAt: entry.hold.grantedAt,
  endsAt: entry.hold.endsAt,
});

export function checkHistory(history: readonly HistoryEvent[], options: CheckerOptions): Violation[] {
  const violations: Violation[] = [];
  const reported = new Set<string>();
  const report = (kind: ViolationKind, node: string, first: Entry, second: Entry, what: string): void => {
    // A pair that meets on several nodes (two keys of a document set) is one violation of each kind.
    const pair = `${kind} ${first.hold.leaseId} ${second.hold.leaseId}`;
    if (reported.has(pair)) return;
    reported.add(pair);
    const named = (entry: Entry) =>
      `${entry.hold.client} (${entry.held.mode} on ${entry.held.key}${entry.held.key === node ? '' : `, ${entry.mode} on ${node}`}, token ${entry.hold.fencingToken})`;
    violations.push({ kind, message: `${named(first)} and ${named(second)}: ${what}`, at: node, holds: [side(first), side(second)] });
  };
  const confirmations = confirmationsOf(history);
  // Every node's holders in grant order (holdsOf sorts), each hold once per node and mode.
  const byNode = new Map<string, Entry[]>();
  const holds = holdsOf(history);
  for (const hold of holds) {
    const touched = new Set<string>();
    for (const held of hold.keys) {
      for (const node of nodesOf(held)) {
        if (touched.has(`${node.mode} ${node.key}`)) continue;
        touched.add(`${node.mode} ${node.key}`);
        const entries = byNode.get(node.key) ?? [];
        entries.push({ hold, mode: node.mode, held });
        byNode.set(node.key, entries);
      }
    }
  }
  // Permit holders of one semaphore share its key: their sum is checked below instead.
  const sharing = (a: Entry, b: Entry): boolean => a.held.permits !== undefined && b.held.permits !== undefined && a.held.key === b.held.key;
  const conflict = (a: Entry, b: Entry): boolean => a.hold !== b.hold && !compatible(a.mode, b.mode) && !sharing(a, b);
  for (const [node, entries] of byNode) {
    // over-limit: at each permit grant, the permits of the holds of its semaphore still live (beyond the skew) exceed the limit.
    const permitted = entries.filter((entry) => entry.held.permits !== undefined && entry.held.key === node);
    for (const [position, entry] of permitted.entries()) {
      const live = permitted.slice(0, position).filter((earlier) => earlier.hold.endsAt - entry.hold.grantedAt > options.maxClockSkewMs);
      const sum = [...live, entry].reduce((total, { held }) => total + held.permits!.count, 0);
      if (sum > entry.held.permits!.limit && live.length > 0)
        report('over-limit', node, live[0]!, entry, `${sum} permits of ${entry.held.permits!.limit} live together (${live.length + 1} holds)`);
    }
    // Holds still live when a later one was granted; one that ended before a grant cannot overlap any later one.
    let live: Entry[] = [];
    // Of the holds granted so far, the one with the largest token in each mode.
    const newest = new Map<HolderMode, Entry>();
    for (const [position, entry] of entries.entries()) {
      live = live.filter((earlier) => earlier.hold.endsAt - entry.hold.grantedAt > options.maxClockSkewMs);
      for (const earlier of live) {
        const overlap = Math.min(earlier.hold.endsAt, entry.hold.endsAt) - entry.hold.grantedAt;
        // The earlier hold's lease went with its incarnation when the later one was made.
        const ofAnEarlierIncarnation = epochOf(earlier.hold.fencingToken) < epochOf(entry.hold.fencingToken);
        if (conflict(earlier, entry) && !ofAnEarlierIncarnation && overlap > options.maxClockSkewMs)
          report('overlap', node, earlier, entry, `held together for ${Math.round(overlap)} ms`);
      }
      live.push(entry);
      for (const mode of MODES) {
        const earlier = newest.get(mode);
        if (earlier && conflict(earlier, entry) && compareTokens(entry.hold.fencingToken, earlier.hold.fencingToken) <= 0)
          report('fencing-order', node, earlier, entry, `${entry.hold.client} was granted later with a token that is not larger`);
      }
      const top = newest.get(entry.mode);
      if (!top || compareTokens(entry.hold.fencingToken, top.hold.fencingToken) > 0) newest.set(entry.mode, entry);
      // This hold confirmed after an incompatible later grant took effect, while that grant was live.
      for (const confirmedAt of confirmations.get(entry.hold.leaseId) ?? []) {
        for (let next = position + 1; next < entries.length; next++) {
          const later = entries[next]!;
          if (later.hold.grantedAt + options.maxClockSkewMs >= confirmedAt) break;
          if (!conflict(entry, later) || confirmedAt >= later.hold.endsAt) continue;
          const after = Math.round(confirmedAt - later.hold.grantedAt);
          report('lost-grant', node, entry, later, `${entry.hold.client} was told it still held the lock ${after} ms after ${later.hold.client} got it`);
        }
      }
    }
  }
  // Only the work runs have revokes and work: the lock runs' long histories are not sorted again for them.
  if (history.some((event) => event.op === 'revoke')) violations.push(...checkRevokes(history, holds));
  if (history.some((event) => event.work !== undefined)) violations.push(...checkWork(history, holds, options));
  for (const event of history) {
    if (!event.forged || event.type !== 'ok' || event.op === 'acquire' || event.op === 'revoke') continue;
    if (event.op === 'release' && (event.outcome === 'not_held' || event.outcome === undefined)) continue;
    violations.push({
      kind: 'non-holder-succeeded',
      message: `${event.client}'s ${event.op} with a forged token for lease ${event.leaseId} succeeded${event.outcome ? ` (${event.outcome})` : ''}`,
    });
  }
  return violations;
}

/**
 * What a revoke promises about the lock (operations/revoke.ts), judged on the revokes that answered:
 * - fencing-order: its write's token on the target's key is above every holder it took, and below
 *   the token of every grant on that key asked for after it answered;
 * - revoked-confirmed: a lease it took is never told it still holds: a renewal that answered ok, or a
 *   release that answered `released`, in a call made after the revoke answered.
 */
export function checkRevokes(history: readonly HistoryEvent[], holds: readonly Hold[]): Violation[] {
  const violations: Violation[] = [];
  const byLease = new Map(holds.map((hold) => [hold.leaseId, hold]));
  const sorted = [...history].sort((a, b) => a.time - b.time);
  const invokedAt = new Map<string, number>();
  const revokedAt = new Map<string, number>();
  for (const event of sorted) {
    if (event.type === 'invoke') invokedAt.set(event.client, event.time);
    if (event.op === 'revoke' && event.type === 'ok') {
      for (const lease of event.revoked ?? []) if (!revokedAt.has(lease)) revokedAt.set(lease, event.time);
      const token = event.fencingToken;
      if (token === undefined) continue;
      const keys = (event.keys ?? []).map(({ key }) => key);
      for (const lease of event.revoked ?? []) {
        const hold = byLease.get(lease);
        if (hold && compareTokens(hold.fencingToken, token) >= 0)
          violations.push({
            kind: 'fencing-order',
            message: `revoke by ${event.client} (token ${token}) took ${hold.client}'s lease ${lease} whose token ${hold.fencingToken} is not smaller`,
          });
      }
      for (const hold of holds) {
        if (hold.invokedAt <= event.time || !keys.some((key) => touches(hold, key)) || compareTokens(hold.fencingToken, token) > 0) continue;
        violations.push({
          kind: 'fencing-order',
          message: `${hold.client}'s lease ${hold.leaseId} on ${keys.join(', ')}, asked for after the revoke by ${event.client} answered (token ${token}), got token ${hold.fencingToken}, not larger`,
        });
      }
    }
    const since = event.leaseId ? revokedAt.get(event.leaseId) : undefined;
    const confirms = event.type === 'ok' && (event.op === 'renew' || (event.op === 'release' && event.outcome === 'released'));
    if (since !== undefined && confirms && (invokedAt.get(event.client) ?? event.time) > since) {
      violations.push({
        kind: 'revoked-confirmed',
        message: `${event.client}'s ${event.op} of lease ${event.leaseId}, asked for after a revoke had taken it, answered ${event.op === 'renew' ? 'ok' : 'released'}`,
      });
    }
  }
  return violations;
}

/** How many violations of each kind: what a run that is expected to break reports. */
export function countByKind(violations: readonly Violation[]): Partial<Record<ViolationKind, number>> {
  const counts: Partial<Record<ViolationKind, number>> = {};
  for (const violation of violations) counts[violation.kind] = (counts[violation.kind] ?? 0) + 1;
  return counts;
}

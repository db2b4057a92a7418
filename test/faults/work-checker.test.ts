/**
 * The fault runner's checks of work that runs once and of revoke (faults/work-checker.ts,
 * checkRevokes in faults/checker.ts): each rule catches a hand-made history that breaks it, and a
 * history that keeps every promise passes.
 */
import { describe, expect, it } from 'vitest';
import { checkHistory, holdsOf } from '../../faults/checker.js';
import type { HistoryEvent } from '../../faults/history.js';

const STRICT = { maxClockSkewMs: 0 };
const TTL = 3_000;
const on = (id: string) => [{ key: `d|${id}`, mode: 'X' as const }];
const kinds = (history: HistoryEvent[]) => checkHistory(history, STRICT).map((violation) => violation.kind);

/** A delivery of `work` granted: the acquire's invoke 5 ms before its ok. */
function granted(client: string, lease: string, at: number, token: string, work: string, id = 'k0', expiresAt = at + 2_000): HistoryEvent[] {
  return [
    { client, type: 'invoke', op: 'acquire', time: at - 5, keys: on(id), work },
    { client, type: 'ok', op: 'acquire', time: at, leaseId: lease, keys: on(id), fencingToken: token, expiresAt, work },
  ];
}

/** A release with a record, called at `at`, answered 5 ms later: recorded, refused (fail) or unknown (info). */
function recorded(
  client: string,
  lease: string,
  at: number,
  work: string,
  options: { status?: 'completed' | 'failed'; answer?: 'recorded' | 'refused' | 'unknown'; recordToken?: string; outcome?: string } = {},
): HistoryEvent[] {
  const { status = 'completed', answer = 'recorded', recordToken, outcome = 'released' } = options;
  const invoke: HistoryEvent = { client, type: 'invoke', op: 'release', time: at, leaseId: lease, work, record: { status, ttlMs: TTL } };
  const time = at + 5;
  if (answer === 'refused') return [invoke, { client, type: 'fail', op: 'release', time, leaseId: lease, error: 'LeaseLostError' }];
  if (answer === 'unknown') return [invoke, { client, type: 'info', op: 'release', time, leaseId: lease, error: 'StoreUnavailableError' }];
  return [invoke, { client, type: 'ok', op: 'release', time, leaseId: lease, outcome, recorded: status, ...(recordToken ? { recordToken } : {}) }];
}

/** A delivery answered with the record of `lease` (which expires at `expiresAt` on that lease's clock). */
function answered(client: string, at: number, work: string, lease: string, expiresAt: number, id = 'k0'): HistoryEvent[] {
  return [
    { client, type: 'invoke', op: 'acquire', time: at - 5, keys: on(id), work },
    { client, type: 'ok', op: 'acquire', time: at, work, answered: { lease, recordedAt: expiresAt - TTL, expiresAt } },
  ];
}

function inProgress(client: string, at: number, work: string, id = 'k0'): HistoryEvent[] {
  return [
    { client, type: 'invoke', op: 'acquire', time: at - 5, keys: on(id), work },
    { client, type: 'fail', op: 'acquire', time: at, error: 'WorkInProgressError' },
  ];
}

/** The operator's revoke of one document, called at `at`, answered 10 ms later. */
function revoked(at: number, id: string, leases: string[], token?: string, type: 'ok' | 'info' = 'ok'): HistoryEvent[] {
  return [
    { client: 'operator', type: 'invoke', op: 'revoke', time: at, keys: on(id) },
    type === 'ok'
      ? { client: 'operator', type, op: 'revoke', time: at + 10, keys: on(id), revoked: leases, ...(token ? { fencingToken: token } : {}) }
      : { client: 'operator', type, op: 'revoke', time: at + 10, error: 'LockOutcomeUnknownError' },
  ];
}

describe('the work and revoke checks', () => {
  it('pass a history that keeps every promise: answers while a record stands, work again after it expires or failed, a revoke before a refused record', () => {
    const history: HistoryEvent[] = [
      // m1: recorded, answered while it stands, run again after it expired.
      ...granted('c1', 'l1', 100, '10', 'm1'),
      ...recorded('c1', 'l1', 200, 'm1'),
      ...answered('c2', 300, 'm1', 'l1', 200 + TTL),
      ...granted('c3', 'l3', 3_300, '40', 'm1'),
      ...recorded('c3', 'l3', 3_400, 'm1'),
      // m2: a second delivery while the first has it is told "in progress"; the first fails, the next runs it.
      ...granted('c4', 'l4', 100, '11', 'm2', 'k1'),
      ...inProgress('c5', 110, 'm2', 'k1'),
      ...recorded('c4', 'l4', 200, 'm2', { status: 'failed' }),
      ...granted('c5', 'l5', 300, '13', 'm2', 'k1'),
      ...recorded('c5', 'l5', 400, 'm2'),
      // m3: revoked while working, so its record is refused; the next delivery runs it.
      ...granted('c6', 'l6', 1_000, '20', 'm3', 'k2'),
      ...revoked(1_050, 'k2', ['l6'], '21'),
      ...recorded('c6', 'l6', 1_100, 'm3', { answer: 'refused' }),
      ...granted('c7', 'l7', 1_200, '22', 'm3', 'k2'),
      ...recorded('c7', 'l7', 1_300, 'm3'),
      // m4: a revoke racing a record whose write came first (its token is below the revoke's).
      ...granted('c8', 'l8', 2_000, '30', 'm4', 'k3'),
      ...recorded('c8', 'l8', 2_050, 'm4', { recordToken: '31' }),
      ...revoked(2_052, 'k3', ['l8'], '32'),
      // A revoke racing a record, no tokens known: the order cannot be told, so it is not judged.
      ...granted('c8', 'l9', 2_500, '33', 'm5', 'k3'),
      ...revoked(2_540, 'k3', ['l9'], '34'),
      ...recorded('c8', 'l9', 2_545, 'm5'),
    ];
    expect(checkHistory(history, STRICT)).toEqual([]);
  });

  it('catches two completed records of one key, the second written while the first stood (I10)', () => {
    const twice = [
      ...granted('c1', 'l1', 100, '10', 'm1'),
      ...recorded('c1', 'l1', 200, 'm1'),
      // c2's acquire was called before c1's record applied: its grant is no violation by itself, its record is.
      { client: 'c2', type: 'invoke', op: 'acquire', time: 180, keys: on('k0'), work: 'm1' } as HistoryEvent,
      { client: 'c2', type: 'ok', op: 'acquire', time: 210, leaseId: 'l2', keys: on('k0'), fencingToken: '12', expiresAt: 2_210, work: 'm1' } as HistoryEvent,
      ...recorded('c2', 'l2', 300, 'm1'),
    ];
    expect(kinds(twice)).toEqual(['completed-twice']);
    // The same, the first record known only from an answer that gave it (its release's answer lost).
    const fromAnswer = [
      ...granted('c1', 'l1', 100, '10', 'm1'),
      ...recorded('c1', 'l1', 200, 'm1', { answer: 'unknown' }),
      ...answered('c3', 250, 'm1', 'l1', 200 + TTL),
      ...granted('c2', 'l2', 400, '12', 'm1'),
      ...recorded('c2', 'l2', 500, 'm1'),
    ];
    expect(kinds(fromAnswer).sort()).toEqual(['completed-twice', 'record-not-answered']);
    // After the first expired, or when the first was `failed`, a second completed record is right.
    expect(
      kinds([
        ...granted('c1', 'l1', 100, '10', 'm1'),
        ...recorded('c1', 'l1', 200, 'm1'),
        ...granted('c2', 'l2', 3_300, '12', 'm1'),
        ...recorded('c2', 'l2', 3_400, 'm1'),
      ]),
    ).toEqual([]);
    expect(
      kinds([
        ...granted('c1', 'l1', 100, '10', 'm1'),
        ...recorded('c1', 'l1', 200, 'm1', { status: 'failed' }),
        ...granted('c2', 'l2', 300, '12', 'm1'),
        ...recorded('c2', 'l2', 400, 'm1'),
      ]),
    ).toEqual([]);
  });

  it('catches an acquire made while a completed record stood that was granted, told in progress, or given another record', () => {
    const first = [...granted('c1', 'l1', 100, '10', 'm1'), ...recorded('c1', 'l1', 200, 'm1')];
    expect(kinds([...first, ...granted('c2', 'l2', 400, '12', 'm1')])).toEqual(['record-not-answered']);
    expect(kinds([...first, ...inProgress('c2', 400, 'm1')])).toEqual(['record-not-answered']);
    expect(kinds([...first, ...answered('c2', 400, 'm1', 'l0', 5_000)])).toEqual(['record-not-answered']);
    // Until its expiry by the recorder's clock, taken to the runner's: a recorder 250 ms ahead ends it 250 ms earlier in real time.
    const ahead = [
      { client: 'c1', type: 'invoke', op: 'acquire', time: 95, keys: on('k0'), work: 'm1' } as HistoryEvent,
      {
        client: 'c1',
        type: 'ok',
        op: 'acquire',
        time: 100,
        leaseId: 'l1',
        keys: on('k0'),
        fencingToken: '10',
        expiresAt: 2_100,
        clockOffsetMs: 250,
        work: 'm1',
      } as HistoryEvent,
      ...recorded('c1', 'l1', 200, 'm1'),
      // The record's expiresAt on c1's clock: 200 + 250 + TTL, so 3,200 on the runner's.
      ...answered('c3', 300, 'm1', 'l1', 3_450),
    ];
    expect(kinds([...ahead, ...granted('c2', 'l2', 3_150, '12', 'm1')])).toEqual(['record-not-answered']);
    expect(kinds([...ahead, ...granted('c2', 'l2', 3_250, '12', 'm1')])).toEqual([]);
    // Called before the record applied: it may have read the document before.
    expect(kinds([...first, ...inProgress('c2', 206, 'm1')])).toEqual([]);
  });

  it('catches a record told "not recorded" that answered a later acquire', () => {
    const history = [
      ...granted('c1', 'l1', 100, '10', 'm1'),
      ...recorded('c1', 'l1', 200, 'm1', { answer: 'refused' }),
      ...answered('c2', 400, 'm1', 'l1', 200 + TTL),
    ];
    expect(kinds(history)).toEqual(['refused-record-applied']);
  });

  it('catches a revoked lease that recorded after the revoke: by the write tokens, or by the times when they are unknown', () => {
    const lease = [...granted('c1', 'l1', 100, '10', 'm1')];
    // The revoke landed between the record's read and its write: only the tokens tell.
    expect(kinds([...lease, ...recorded('c1', 'l1', 200, 'm1', { recordToken: '15' }), ...revoked(198, 'k0', ['l1'], '14')])).toEqual(['revoked-recorded']);
    expect(kinds([...lease, ...recorded('c1', 'l1', 200, 'm1', { recordToken: '13', status: 'failed' }), ...revoked(198, 'k0', ['l1'], '14')])).toEqual([]);
    // No tokens: a release called after the revoke answered is surely after it, whatever status it recorded.
    // (As the engine answered it on main: not_held, together with the record.)
    expect(kinds([...lease, ...revoked(150, 'k0', ['l1'], '14'), ...recorded('c1', 'l1', 200, 'm1', { status: 'failed', outcome: 'not_held' })])).toEqual([
      'revoked-recorded',
    ]);
    // A record refused, or of a lease the revoke did not take, is no violation.
    expect(kinds([...lease, ...revoked(150, 'k0', ['l1'], '14'), ...recorded('c1', 'l1', 200, 'm1', { answer: 'refused' })])).toEqual([]);
    expect(kinds([...lease, ...revoked(150, 'k0', [], undefined), ...recorded('c1', 'l1', 200, 'm1', { outcome: 'not_held' })])).toEqual([]);
  });

  it('catches a work grant answered after its lease had ended', () => {
    expect(kinds(granted('c1', 'l1', 2_500, '10', 'm1', 'k0', 2_400))).toEqual(['late-work-grant']);
    expect(kinds(granted('c1', 'l1', 2_300, '10', 'm1', 'k0', 2_400))).toEqual([]);
  });
});

describe('revoke in the lock checks', () => {
  it('ends a revoked hold at the revoke, so the next holder does not overlap it; without the revoke it would', () => {
    const first = granted('c1', 'l1', 100, '10', 'm1');
    const next = granted('c2', 'l2', 330, '13', 'm2');
    expect(kinds([...first, ...revoked(300, 'k0', ['l1'], '12'), ...next])).toEqual([]);
    expect(holdsOf([...first, ...revoked(300, 'k0', ['l1'], '12')])[0]?.endsAt).toBe(300);
    expect(kinds([...first, ...next])).toEqual(['overlap']);
    // A revoke whose outcome is unknown may have taken every holder of its key.
    expect(kinds([...first, ...revoked(300, 'k0', [], undefined, 'info'), ...next])).toEqual([]);
    // A revoke of another key ends nothing here.
    expect(kinds([...first, ...revoked(300, 'k1', [], undefined, 'info'), ...next])).toEqual(['overlap']);
  });

  it("catches a token out of order around a revoke: a revoked holder's above it, a later grant's below it", () => {
    const first = granted('c1', 'l1', 100, '10', 'm1');
    expect(kinds([...first, ...revoked(300, 'k0', ['l1'], '9')])).toEqual(['fencing-order']);
    // c2 asked after the revoke answered (at 310), and got a token below the revoke's.
    expect(kinds([...first, ...revoked(300, 'k0', ['l1'], '12'), ...granted('c2', 'l2', 330, '11', 'm2')])).toEqual(['fencing-order']);
  });

  it('catches a revoked lease told it still holds: a renewal that answered, or a release that released, asked for after the revoke', () => {
    const first = granted('c1', 'l1', 100, '10', 'm1');
    const renewal: HistoryEvent[] = [
      { client: 'c1', type: 'invoke', op: 'renew', time: 400, leaseId: 'l1' },
      { client: 'c1', type: 'ok', op: 'renew', time: 410, leaseId: 'l1', fencingToken: '10', expiresAt: 2_410 },
    ];
    expect(kinds([...first, ...revoked(300, 'k0', ['l1'], '12'), ...renewal])).toEqual(['revoked-confirmed']);
    const release = (outcome: string): HistoryEvent[] => [
      { client: 'c1', type: 'invoke', op: 'release', time: 400, leaseId: 'l1' },
      { client: 'c1', type: 'ok', op: 'release', time: 410, leaseId: 'l1', outcome },
    ];
    expect(kinds([...first, ...revoked(300, 'k0', ['l1'], '12'), ...release('released')])).toEqual(['revoked-confirmed']);
    expect(kinds([...first, ...revoked(300, 'k0', ['l1'], '12'), ...release('not_held')])).toEqual([]);
  });
});

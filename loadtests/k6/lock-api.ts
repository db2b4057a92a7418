/**
 * A small k6 client for the lock service's HTTP API (acquire, renew, release, health): the k6 side's
 * LockDriver (shared/lock-driver.ts). k6's http calls block the VU, so the driver's promises are
 * settled when they are returned.
 */

import { check } from 'k6';
import http, { type Params, type RefinedResponse, type ResponseType } from 'k6/http';
import type { AcquireAnswer, AcquireRequest, LockDriver, OpTags, ReleaseAnswer } from '../shared/lock-driver.ts';

type Response = RefinedResponse<ResponseType | undefined>;

// 409 (held) and 503 (retryable) are expected answers, not failed requests.
const expected = http.expectedStatuses(200, 409, 503);

/**
 * k6 checks, one per response (the `checks` metric and k6's summary count them). They judge the
 * answer only: a conflict is a correct answer, and the workload's own metrics decide what it means.
 */
export const CHECKS = {
  acquire: 'acquire answered 200 granted, or 409 / 503 busy',
  release: 'release answered 200 with an outcome, or 503 to retry',
  renew: 'renew answered 200',
  health: 'health answered 200',
} as const;

function json(response: Response): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(typeof response.body === 'string' ? response.body : '');
    return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function retryAfter(response: Response, body: Record<string, unknown> | undefined): { retryAfterMs?: number } {
  if (body && typeof body.retryAfterMs === 'number') return { retryAfterMs: body.retryAfterMs };
  const header = Number(response.headers['Retry-After']);
  return Number.isFinite(header) && header > 0 ? { retryAfterMs: header * 1000 } : {};
}

function snippet(response: Response): string {
  const text = typeof response.body === 'string' ? response.body : '';
  return response.error ? `${response.error} ${text}`.trim().slice(0, 300) : text.slice(0, 300);
}

/** What an acquire answer means to the client: granted, busy (retry), unavailable (retry) or an error. */
function acquireAnswer(response: Response): AcquireAnswer {
  const durationMs = response.timings.duration;
  const parsed = json(response);
  if (response.status === 200 && parsed && typeof parsed.leaseToken === 'string' && typeof parsed.fencingToken === 'string') {
    return {
      kind: 'granted',
      durationMs,
      grant: { leaseToken: parsed.leaseToken, fencingToken: parsed.fencingToken, expiresAt: Date.parse(String(parsed.expiresAt)) },
    };
  }
  // LockContentionError (503): too many writers raced on the same lock documents (a hot global lock,
  // a hot ancestor). Like a conflict it means "busy, try later", and a real client treats it so.
  const busy = response.status === 409 || (response.status === 503 && parsed?.error === 'LockContentionError');
  if (busy) return { kind: 'conflict', durationMs, ...retryAfter(response, parsed) };
  if (response.status === 503) return { kind: 'unavailable', durationMs, ...retryAfter(response, parsed) };
  return { kind: 'error', status: response.status, detail: snippet(response), durationMs };
}

export class LockApi implements LockDriver {
  private readonly params: Params;

  constructor(
    private readonly baseUrl: string,
    private readonly tags: Record<string, string> = {},
  ) {
    this.params = { headers: { 'Content-Type': 'application/json' }, responseCallback: expected, timeout: '12s' };
  }

  private post(name: string, body: unknown, tags: Record<string, string>): Response {
    return http.post(`${this.baseUrl}/${name}`, JSON.stringify(body), {
      ...this.params,
      tags: { ...this.tags, ...tags, name },
    });
  }

  health(): { status: number; body: string } {
    const response = http.get(`${this.baseUrl}/health`, { timeout: '10s', tags: { name: 'health' } });
    check(response, { [CHECKS.health]: (r) => r.status === 200 }, { ...this.tags, name: 'health' });
    // The whole body when there is one: a refusal is explained from its JSON (shared/access-refusal.ts).
    const text = typeof response.body === 'string' ? response.body : '';
    return { status: response.status, body: response.error || !text ? snippet(response) : text.slice(0, 2000) };
  }

  async acquire(request: AcquireRequest, tags: OpTags): Promise<AcquireAnswer> {
    const response = this.post('acquire', request, tags);
    const answer = acquireAnswer(response);
    check(response, { [CHECKS.acquire]: () => answer.kind === 'granted' || answer.kind === 'conflict' }, { ...this.tags, ...tags, name: 'acquire' });
    return answer;
  }

  renew(leaseToken: string, ttlMs?: number, tags: Record<string, string> = {}): { status: number; body: string } {
    const response = this.post('renew', ttlMs === undefined ? { leaseToken } : { leaseToken, ttlMs }, tags);
    check(response, { [CHECKS.renew]: (r) => r.status === 200 }, { ...this.tags, ...tags, name: 'renew' });
    return { status: response.status, body: snippet(response) };
  }

  async release(leaseToken: string, tags: OpTags): Promise<ReleaseAnswer> {
    const response = this.post('release', { leaseToken }, tags);
    const parsed = json(response);
    const outcome = response.status === 200 && typeof parsed?.outcome === 'string' ? parsed.outcome : undefined;
    // A 503 is the service saying "retry" (the iteration does, for about 6 s); a release that never got an outcome counts as an error.
    check(response, { [CHECKS.release]: (r) => outcome !== undefined || r.status === 503 }, { ...this.tags, ...tags, name: 'release' });
    if (outcome !== undefined) return { ok: true, outcome };
    return { ok: false, status: response.status, detail: snippet(response) };
  }
}

/**
 * Warm-up before each measured run. serverless-offline (like Lambda itself) starts a new function
 * instance whenever all existing ones are busy, and each cold start costs seconds on this machine;
 * without a warm-up the first seconds of a run measure cold starts instead of locks. We send rounds
 * of concurrent acquire + release pairs on distinct documents (no contention) in a namespace of
 * their own until a full-concurrency round is fast.
 */

/** The namespace the warm-up locks in (a kit namespace like the runs': lt-*). */
export const warmupNamespace = (runId: string): string => `lt-warmup-${runId}`;

export interface WarmupOptions {
  concurrency: number;
  /** A round at full concurrency whose slowest pair takes less than this ends the warm-up. */
  fastMs: number;
  maxRounds: number;
  deadlineMs: number;
}

export const DEFAULT_WARMUP: WarmupOptions = { concurrency: 40, fastMs: 400, maxRounds: 10, deadlineMs: 90_000 };

export interface WarmupResult {
  rounds: number;
  lastRoundMs: number;
  warm: boolean;
  failures: number;
  sample?: string;
}

async function post(url: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> | undefined; text: string }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await response.text();
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    json = undefined;
  }
  return { status: response.status, json, text };
}

export async function warmUp(baseUrl: string, namespace: string, options: WarmupOptions = DEFAULT_WARMUP): Promise<WarmupResult> {
  const started = Date.now();
  let failures = 0;
  let sample: string | undefined;
  let counter = 0;
  const pair = async (): Promise<void> => {
    const id = `warm-${counter++}`;
    try {
      const acquired = await post(`${baseUrl}/acquire`, { namespace, granularity: 'document', ids: [id], owner: 'warmup', ttlMs: 5000 });
      const token = acquired.json?.leaseToken;
      if (acquired.status !== 200 || typeof token !== 'string') {
        failures++;
        sample ??= `acquire answered ${acquired.status}: ${acquired.text.slice(0, 200)}`;
        return;
      }
      const released = await post(`${baseUrl}/release`, { leaseToken: token });
      if (released.status !== 200) {
        failures++;
        sample ??= `release answered ${released.status}: ${released.text.slice(0, 200)}`;
      }
    } catch (error) {
      failures++;
      sample ??= (error as Error).message;
    }
  };
  const steps = [Math.ceil(options.concurrency / 4), Math.ceil(options.concurrency / 2)];
  let rounds = 0;
  let lastRoundMs = Infinity;
  while (rounds < options.maxRounds && Date.now() - started < options.deadlineMs) {
    const concurrency = steps[rounds] ?? options.concurrency;
    const roundStart = Date.now();
    await Promise.all(Array.from({ length: concurrency }, () => pair()));
    lastRoundMs = Date.now() - roundStart;
    rounds++;
    if (concurrency === options.concurrency && lastRoundMs < options.fastMs) break;
  }
  return { rounds, lastRoundMs, warm: lastRoundMs < options.fastMs, failures, ...(sample ? { sample } : {}) };
}

/** One GET that never throws: readiness checks want "not yet, because ..." rather than an exception. */
import { networkProblem } from '../../tools/cli/service-errors.js';

export type HttpAnswer = { status: number; body: string } | { status: 0; error: string };

export async function httpGet(url: string, timeoutMs: number): Promise<HttpAnswer> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: response.status, body: await response.text() };
  } catch (error) {
    // "connection refused (ECONNREFUSED)" rather than fetch's "fetch failed".
    const { message, cause } = error as Error & { cause?: { message?: string } };
    return { status: 0, error: networkProblem(error) ?? (cause?.message ? `${message}: ${cause.message}` : message) };
  }
}

/** A check for `waitUntil`: true on 200, otherwise what answered ("503: {...}" or "nothing: connection refused (ECONNREFUSED)"). */
export async function answers200(url: string, timeoutMs = 5_000): Promise<true | string> {
  const answer = await httpGet(url, timeoutMs);
  if (answer.status === 200) return true;
  return 'error' in answer ? `nothing: ${answer.error}` : `${answer.status}: ${answer.body.slice(0, 200)}`;
}

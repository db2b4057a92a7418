/**
 * Before any k6 run against a deployed stage: is it reachable, and may the kit's role call it? One
 * GET /health, then one acquire and its release in a kit namespace, through the same way k6 goes
 * (the signing proxy). The first refusal stops the run with one line naming what is missing.
 */
import { explainRefusal } from '../shared/access-refusal.js';

/** The stage refused the kit, or did not answer: one line, no stack trace. */
export class TargetAccessError extends Error {
  override name = 'TargetAccessError';
}

interface Answer {
  status: number;
  body: string;
}

async function call(baseUrl: string, method: string, path: string, body?: unknown): Promise<Answer> {
  try {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      ...(body === undefined ? {} : { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: response.status, body: await response.text() };
  } catch (error) {
    const { message, cause } = error as Error & { cause?: { code?: string; message?: string } };
    return { status: 0, body: JSON.stringify({ message: cause?.code ?? cause?.message ?? message }) };
  }
}

function leaseTokenOf(body: string): string | undefined {
  try {
    const token = (JSON.parse(body) as { leaseToken?: unknown }).leaseToken;
    return typeof token === 'string' ? token : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Throws TargetAccessError unless `baseUrl` (the signing proxy, or the target itself unsigned)
 * answers /health, grants an acquire in `namespace` and releases it. `target` names the stage in
 * the message.
 */
export async function checkTargetAccess(baseUrl: string, target: string, namespace: string): Promise<void> {
  const fail = (method: string, path: string, answer: Answer, extra: { namespace?: string } = {}): never => {
    throw new TargetAccessError(explainRefusal({ method, path, target, ...answer, ...extra }) ?? `${method} ${path} failed`);
  };
  const health = await call(baseUrl, 'GET', '/health');
  if (health.status !== 200) fail('GET', '/health', health);
  const acquired = await call(baseUrl, 'POST', '/acquire', { namespace, granularity: 'document', ids: ['access-check'], owner: 'loadtest-check', ttlMs: 5000 });
  if (acquired.status !== 200) fail('POST', '/acquire', acquired, { namespace });
  const leaseToken = leaseTokenOf(acquired.body);
  if (leaseToken === undefined) throw new TargetAccessError(`POST ${target}/acquire answered 200 without a leaseToken: ${acquired.body.slice(0, 200)}`);
  const released = await call(baseUrl, 'POST', '/release', { leaseToken });
  if (released.status !== 200) fail('POST', '/release', released);
}

/**
 * The one polling loop of the kit: Elasticsearch coming up, serverless-offline answering /health,
 * a deployed stage answering, a process going away. Everything that waits for something to become
 * true calls this instead of writing its own loop, so deadlines and "why not yet" reasons behave alike.
 */

/** A check answers `true` when the wait is over, or a short reason why not yet (kept for the timeout message). */
export type Check = () => Promise<true | string> | true | string;

export interface WaitOptions {
  timeoutMs: number;
  intervalMs: number;
  /** Consulted before every check: a reason to stop waiting at once (what we wait for has died). */
  abandonIf?: () => string | undefined;
}

export type WaitOutcome = { ready: true } | { ready: false; reason: string; abandoned: boolean };

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitUntil(check: Check, options: WaitOptions): Promise<WaitOutcome> {
  const deadline = Date.now() + options.timeoutMs;
  let reason = 'not checked yet';
  for (;;) {
    const abandoned = options.abandonIf?.();
    if (abandoned !== undefined) return { ready: false, reason: abandoned, abandoned: true };
    const answer = await check();
    if (answer === true) return { ready: true };
    reason = answer;
    if (Date.now() + options.intervalMs > deadline) return { ready: false, reason, abandoned: false };
    await sleep(options.intervalMs);
  }
}

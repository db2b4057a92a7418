/**
 * `sweep` on a deployed stage: the sweeper function invoked directly (Lambda Invoke,
 * RequestResponse) with the caller's credential chain, as the schedule would run it, and its report.
 */

import { errorFromFunctionError, parsePayload } from '../packages/client/src/transport-invoke.js';
import type { SweepReportBody } from '../packages/client/src/wire.js';
import { UsageError } from '../tools/cli/flags.js';
import type { OpsBackend, SweepOptions } from './backend.js';

export interface SweeperTarget {
  /** Name or ARN: --sweeper-function, else es-lease-locks-<stage>-sweeper (the Serverless Framework's name). */
  functionName: string;
  region?: string;
  /** Another Lambda endpoint (a local invoke API): --lambda-endpoint. */
  endpoint?: string;
}

/** The sweeper function's name in a stage deployed by this project's serverless.yml. */
export const sweeperOfStage = (stage: string): string => `es-lease-locks-${stage}-sweeper`;

export async function invokeSweeper(target: SweeperTarget, options: SweepOptions, timeoutMs = 120_000): Promise<SweepReportBody> {
  const { LambdaClient, InvokeCommand } = await import('@aws-sdk/client-lambda');
  const client = new LambdaClient({
    ...(target.region ? { region: target.region } : {}),
    ...(target.endpoint ? { endpoint: target.endpoint } : {}),
    // One attempt: a sweep that timed out may still be running; the operator decides whether to run another.
    maxAttempts: 1,
  });
  try {
    const output = await client.send(new InvokeCommand({ FunctionName: target.functionName, Payload: new TextEncoder().encode(JSON.stringify(options)) }), {
      abortSignal: AbortSignal.timeout(timeoutMs),
    });
    const payload = parsePayload(output.Payload);
    if (output.FunctionError) throw errorFromFunctionError(payload);
    return payload as SweepReportBody;
  } catch (error) {
    throw invokeFailure(error, target.functionName);
  } finally {
    client.destroy();
  }
}

/** The Invoke call's own failure (refused by Lambda, no such function, unreachable) as one line; a function error as it is. */
function invokeFailure(error: unknown, functionName: string): unknown {
  const { name, message, $metadata } = (error ?? {}) as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  if ($metadata === undefined) return error;
  const status = $metadata.httpStatusCode;
  const failure = new Error(`Invoke ${functionName}: ${name ?? 'Error'}${status ? ` (${status})` : ''}: ${message ?? ''}`, { cause: error });
  // Lambda's own refusal (no lambda:InvokeFunction) exits as refused; its status is in the message otherwise.
  return status === 403 ? Object.assign(failure, { status }) : failure;
}

/** The third way, for sweep only: the sweeper function of a stage, invoked directly. */
export function sweeperBackend(target: SweeperTarget): OpsBackend {
  const elsewhere = async (): Promise<never> => {
    throw new UsageError('--stage and --sweeper-function: only for sweep');
  };
  return {
    list: elsewhere,
    inspect: elsewhere,
    revoke: elsewhere,
    drain: elsewhere,
    status: elsewhere,
    sweep: (options) => invokeSweeper(target, options),
    close: async () => {},
  };
}

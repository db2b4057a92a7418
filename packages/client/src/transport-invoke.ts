/**
 * The lock functions invoked directly (Lambda Invoke, RequestResponse) as a Locker: no API Gateway
 * in between, IAM on lambda:InvokeFunction. The payload is the same JSON as the HTTP body; a refusal
 * comes back as a function error, which is turned back into its class by name.
 *
 * @aws-sdk/client-lambda loads on the first call (on Lambda the runtime has it: bundle it as external).
 */
import type { LambdaClient, LambdaClientConfig } from '@aws-sdk/client-lambda';
import { type ErrorDetails, errorFromBody, LockServiceError, lockError } from './errors.js';
import type { CallOptions, Locker } from './locker.js';
import { type ErrorBody, isErrorName, type OperationName, type Operations } from './wire.js';

export interface InvokeTransportOptions {
  /**
   * The function (name, ARN or partial ARN) of each operation, or a function of the operation, e.g.
   * `(operation) => \`es-lease-locks-prod-${operation}\`` (the Serverless Framework's names).
   */
  functions: Partial<Record<OperationName, string>> | ((operation: OperationName) => string);
  /** A Lambda client of your own (its region, credentials, endpoint and retries are used as they are). */
  client?: LambdaClient;
  /** For the client this transport makes otherwise: region, endpoint (e.g. a local invoke API), credentials, maxAttempts... */
  clientConfig?: LambdaClientConfig;
  /** Per call (the acquire's waitMs comes on top). Default 30 s. */
  timeoutMs?: number;
}

type LambdaModule = typeof import('@aws-sdk/client-lambda');

export class InvokeTransport implements Locker {
  private readonly timeoutMs: number;
  private loading: Promise<{ client: LambdaClient; module: LambdaModule }> | undefined;

  constructor(private readonly options: InvokeTransportOptions) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  acquire(body: Operations['acquire']['request'], options: CallOptions = {}): Promise<Operations['acquire']['answer']> {
    return this.invoke('acquire', body, { ...options, timeoutMs: (options.timeoutMs ?? this.timeoutMs) + (body.waitMs ?? 0) }, body.requestId);
  }

  renew(body: Operations['renew']['request'], options: CallOptions = {}): Promise<Operations['renew']['answer']> {
    return this.invoke('renew', body, options);
  }

  release(body: Operations['release']['request'], options: CallOptions = {}): Promise<Operations['release']['answer']> {
    return this.invoke('release', body, options);
  }

  inspect(query: Operations['inspect']['request'], options: CallOptions = {}): Promise<Operations['inspect']['answer']> {
    return this.invoke('inspect', query, options);
  }

  list(query: Operations['list']['request'] = {}, options: CallOptions = {}): Promise<Operations['list']['answer']> {
    return this.invoke('list', query, options);
  }

  /** The function an operation invokes. */
  functionName(operation: OperationName): string {
    const { functions } = this.options;
    const name = typeof functions === 'function' ? functions(operation) : functions[operation];
    if (!name) throw new TypeError(`invokeTransport: no function configured for ${operation}`);
    return name;
  }

  private lambda(): Promise<{ client: LambdaClient; module: LambdaModule }> {
    this.loading ??= import('@aws-sdk/client-lambda').then(
      (module) => ({ module, client: this.options.client ?? new module.LambdaClient({ ...this.options.clientConfig }) }),
      (error: unknown) => {
        this.loading = undefined;
        throw error;
      },
    );
    return this.loading;
  }

  private async invoke<Op extends OperationName>(
    operation: Op,
    body: Operations[Op]['request'],
    options: CallOptions,
    requestId?: string,
  ): Promise<Operations[Op]['answer']> {
    const functionName = this.functionName(operation);
    const { client, module } = await this.lambda();
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const abortSignal = AbortSignal.any([AbortSignal.timeout(timeoutMs), ...(options.signal ? [options.signal] : [])]);
    const write = operation === 'acquire' || operation === 'renew' || operation === 'release';
    let output: { FunctionError?: string | undefined; Payload?: Uint8Array | undefined };
    try {
      output = await client.send(new module.InvokeCommand({ FunctionName: functionName, Payload: new TextEncoder().encode(JSON.stringify(body)) }), {
        abortSignal,
      });
    } catch (error) {
      options.signal?.throwIfAborted();
      throw invokeFailure(error, { functionName, timeoutMs, write, ...(requestId ? { requestId } : {}) });
    }
    const payload = parsePayload(output.Payload);
    if (output.FunctionError) throw errorFromFunctionError(payload, write, requestId);
    return payload as Operations[Op]['answer'];
  }
}

export function invokeTransport(options: InvokeTransportOptions): InvokeTransport {
  return new InvokeTransport(options);
}

/** An invocation's payload as JSON; text that is not JSON as an error message (cut short). */
export function parsePayload(payload: Uint8Array | undefined): unknown {
  if (!payload || payload.length === 0) return undefined;
  const text = new TextDecoder().decode(payload);
  try {
    return JSON.parse(text);
  } catch {
    return { errorMessage: text.slice(0, 500) };
  }
}

/**
 * A function error's payload (`{ errorType, errorMessage, trace }`) as its class. The name is the
 * errorType on Lambda; local emulators that lose it (serverless-offline reports `Error`) still have
 * it at the head of the stack trace. An errorMessage that is an error body (JSON) carries the details.
 */
export function errorFromFunctionError(payload: unknown, write = false, requestId?: string): LockServiceError {
  const { errorType, errorMessage, trace } = (typeof payload === 'object' && payload !== null ? payload : {}) as {
    errorType?: unknown;
    errorMessage?: unknown;
    trace?: unknown;
  };
  const message = typeof errorMessage === 'string' ? errorMessage : undefined;
  const body = message?.startsWith('{') ? parseBody(message) : undefined;
  if (body && isErrorName(body.error)) return errorFromBody(body);
  const fromTrace = Array.isArray(trace) && typeof trace[0] === 'string' ? /^([A-Za-z]+Error)\b/.exec(trace[0])?.[1] : undefined;
  const name = isErrorName(errorType) ? errorType : isErrorName(fromTrace) ? fromTrace : undefined;
  if (name) return errorFromBody({ error: name, message: message ?? name });
  // The function ran out of time or its runtime died mid-call: a write may have applied before it did.
  if (write && /^(Sandbox|Runtime)\./.test(String(errorType)))
    return lockError('LockOutcomeUnknownError', `${String(errorType)}: ${message ?? ''}; the call may have applied. Retry.`, requestId ? { requestId } : {});
  return errorFromBody({ error: typeof errorType === 'string' ? errorType : 'InternalError', message: message ?? 'function error' });
}

function parseBody(text: string): Partial<ErrorBody> | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Partial<ErrorBody>) : undefined;
  } catch {
    return undefined;
  }
}

/** The Invoke call itself failed (not the function): refused by Lambda (4xx), or no answer (network, throttling, 5xx). */
function invokeFailure(error: unknown, call: { functionName: string; timeoutMs: number; write: boolean; requestId?: string }): LockServiceError {
  const { name, message, $metadata } = (error ?? {}) as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = $metadata?.httpStatusCode;
  const what = name === 'TimeoutError' || name === 'AbortError' ? `no answer within ${call.timeoutMs} ms` : `${name ?? 'Error'}: ${message ?? error}`;
  const text = `Invoke ${call.functionName}: ${what}`;
  if (status !== undefined && status >= 400 && status < 500 && status !== 429)
    return new LockServiceError(name ?? `HTTP${status}`, {}, text, { status, cause: error });
  const details: ErrorDetails = call.requestId ? { requestId: call.requestId } : {};
  if (!call.write) return lockError('StoreUnavailableError', `${text}. Retry.`, {}, { cause: error });
  return lockError('LockOutcomeUnknownError', `${text}; the call may have applied. Retry${call.requestId ? ' with the same requestId' : ''}.`, details, {
    cause: error,
  });
}

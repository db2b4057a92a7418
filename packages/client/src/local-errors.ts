/**
 * The client's own errors: raised in this process, never answered by the service, so not
 * LockServiceErrors. Each takes its retryability from the wire module's catalogue of local errors
 * (LOCAL_ERRORS) and keeps the fields it was raised with as its own read-only properties.
 */
import { LOCAL_ERRORS, type LocalErrorName } from './wire.js';

/** A local error's class: raised with its fields, a message and what caused it. */
export type LocalErrorClass<Fields extends object> = new (
  fields: Fields,
  message: string,
  options?: { cause?: unknown },
) => Error & { readonly retryable: boolean } & Readonly<Fields>;

/**
 * The base of the class of a local error: `class InsufficientTimeError extends localError<Fields>('InsufficientTimeError') {}`.
 * The fields are given to the instance at run time, so the overload types them.
 */
export function localError<Fields extends object>(name: LocalErrorName): LocalErrorClass<Fields>;
export function localError(name: LocalErrorName): LocalErrorClass<Record<never, never>> {
  return class extends Error {
    override readonly name = name;
    readonly retryable = LOCAL_ERRORS[name].retryable;
    constructor(fields: object, message: string, options: { cause?: unknown } = {}) {
      super(message, options.cause === undefined ? undefined : { cause: options.cause });
      Object.assign(this, fields);
    }
  };
}

/**
 * Refused by the client before any request: the Lambda function's remaining time (minus what the
 * release and the answer need) is too short for the shortest lease the service grants.
 */
export class InsufficientTimeError extends localError<{
  /** What was left for the lease, in ms. */
  availableMs: number;
  /** The shortest lease worth asking for, in ms. */
  neededMs: number;
}>('InsufficientTimeError') {}

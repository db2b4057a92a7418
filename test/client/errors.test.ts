/**
 * The client's errors: a class per name of the wire catalogue, its status and retryability read
 * from the catalogue; names this version does not know kept as they are; a Lambda function error
 * turned back into its class from what Lambda (or a local emulator) reports.
 */
import {
  ERROR_NAMES,
  ERRORS,
  errorFromBody,
  errorFromFunctionError,
  isTransient,
  LeaseLostError,
  LockHeldError,
  LockOutcomeUnknownError,
  LockServiceError,
  type ValidationError,
} from '@es-lease-locks/client';
import { describe, expect, it } from 'vitest';

describe('error classes', () => {
  it.each(ERROR_NAMES)('%s: its own class, with the status and retryability of the catalogue', (name) => {
    const error = errorFromBody({ error: name, message: `a ${name}` });
    expect(error).toBeInstanceOf(LockServiceError);
    expect(error.constructor.name).toBe(name);
    expect(error).toMatchObject({ name, message: `a ${name}`, status: ERRORS[name].status, retryable: ERRORS[name].retryable });
    // Retried at once by the client: the retryable ones on the service's side; a held lock or a quota is the caller's to wait for.
    expect(isTransient(error)).toBe(ERRORS[name].retryable && ERRORS[name].status >= 500);
  });

  it('keeps the details each name carries', () => {
    const held = errorFromBody({
      error: 'LockHeldError',
      message: 'held',
      retryAfterMs: 250,
      waitedMs: 1_000,
      conflicts: [{ key: 'a', granularity: 'document', requestedMode: 'X', holders: [], reason: 'request_id_reused' }],
    });
    expect(held).toBeInstanceOf(LockHeldError);
    expect(held).toMatchObject({ retryAfterMs: 250, waitedMs: 1_000, conflicts: [{ key: 'a', reason: 'request_id_reused' }] });
    const invalid = errorFromBody({ error: 'ValidationError', message: 'bad', fields: [{ field: 'ids.3', rule: 'max', message: 'too long' }] });
    expect((invalid as ValidationError).fields).toEqual([{ field: 'ids.3', rule: 'max', message: 'too long' }]);
    const unknown = errorFromBody({ error: 'LockOutcomeUnknownError', message: 'may hold', requestId: 'run-3', mayHoldUntil: '2026-11-22T12:00:00.000Z' });
    expect(unknown).toMatchObject({ requestId: 'run-3', mayHoldUntil: Date.parse('2026-11-22T12:00:00.000Z') });
    expect((errorFromBody({ error: 'LeaseLostError', message: 'gone', lostKeys: ['*'] }) as LeaseLostError).lostKeys).toEqual(['*']);
  });

  it('a name this client does not know stays a LockServiceError under that name; no name at all is named by the HTTP status', () => {
    const future = errorFromBody({ error: 'LeaseStolenError', message: 'new in a later version', retryable: false }, { status: 409 });
    expect(future.constructor).toBe(LockServiceError);
    expect(future).toMatchObject({ name: 'LeaseStolenError', status: 409, retryable: false });
    // A gateway's own answer (no name): retryable when its status says so.
    expect(errorFromBody({ message: 'Service Unavailable' }, { status: 503 })).toMatchObject({
      name: 'HTTP503',
      status: 503,
      retryable: true,
      transient: true,
    });
    expect(errorFromBody({ message: 'Forbidden' }, { status: 403 })).toMatchObject({ name: 'HTTP403', retryable: false });
  });
});

describe('function errors (direct invocation)', () => {
  it("Lambda's own report: the name is the errorType", () => {
    const error = errorFromFunctionError({ errorType: 'LockHeldError', errorMessage: 'Lock held: a (X by x)', trace: [] });
    expect(error).toBeInstanceOf(LockHeldError);
    expect(error.message).toBe('Lock held: a (X by x)');
  });

  it('an emulator that reports errorType "Error": the name at the head of the stack trace', () => {
    const error = errorFromFunctionError({ errorType: 'Error', errorMessage: 'gone', trace: ['LeaseLostError: gone', '    at renew (file:///x.mjs:1:1)'] });
    expect(error).toBeInstanceOf(LeaseLostError);
  });

  it('an errorMessage that is an error body carries its details', () => {
    const body = {
      error: 'LockHeldError',
      message: 'held',
      retryAfterMs: 300,
      conflicts: [{ key: 'a', granularity: 'document', requestedMode: 'X', holders: [] }],
    };
    const error = errorFromFunctionError({ errorType: 'LockHeldError', errorMessage: JSON.stringify(body) });
    expect(error).toMatchObject({ message: 'held', retryAfterMs: 300, conflicts: [{ key: 'a' }] });
  });

  it('a function that timed out during a write may have applied it: LockOutcomeUnknownError, with the requestId to retry with', () => {
    const error = errorFromFunctionError({ errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out after 29.00 seconds' }, true, 'run-9');
    expect(error).toBeInstanceOf(LockOutcomeUnknownError);
    expect(error).toMatchObject({ requestId: 'run-9', retryable: true });
    // The same on a read is nothing more than what it says.
    expect(errorFromFunctionError({ errorType: 'Sandbox.Timedout', errorMessage: 'Task timed out' }, false)).toMatchObject({ name: 'Sandbox.Timedout' });
  });
});

/**
 * Work named by its event, on the client's side: the key and the payload hash computed here
 * (wire/event-path.ts, the code the service runs for an acquire that carries its event) and sent as
 * `idempotencyKey` and `payloadHash`, so the event itself never crosses the wire.
 */
import { ValidationError } from './errors.js';
import { type AcquireBody, type EventLocator, type FieldIssueBody, keyFromEvent, payloadHashFromEvent } from './wire.js';

/** How acquireOnce() and using() take the work's key and payload from its event (Powertools' idempotency options). */
export interface EventKeyOptions {
  /**
   * The event the work is for (an SQS record, an EventBridge event, a Step Functions input). Its hash
   * (or that of its part at `payloadPath`) goes with the call: a redelivery of the key with another
   * payload is refused (WorkPayloadMismatchError), never answered with the first payload's result.
   */
  event?: unknown;
  /**
   * Where the key is in `event`, instead of the request's `idempotencyKey`: a path
   * (`detail.orderId`, `Records[0].messageId`, `detail."order-id"`: dots, [index], quoted names) or
   * a function of the event. A string, or a number (its JSON text).
   */
  eventKeyPath?: EventLocator;
  /** The part of `event` whose hash is checked (a path or a function); the whole event when left out. */
  payloadPath?: EventLocator;
  /**
   * No key in the event is a ValidationError (`eventKeyPath:no_key`) and nothing is sent. Without it
   * the call takes the lock without the work (no record; a redelivery runs it again) and says so
   * through `onNoKey`.
   */
  throwOnNoKey?: boolean;
  /** Told when the event has no key at `eventKeyPath` and the call runs without a record; a process warning when left out. */
  onNoKey?: (path: string) => void;
}

/** The acquire the event names: the request with its key and payload hash, or, no key there, without work (`missingKeyPath`). */
export function nameWorkByEvent(request: AcquireBody, options: EventKeyOptions): { request: AcquireBody; missingKeyPath?: string } {
  const { event, eventKeyPath, payloadPath, throwOnNoKey } = options;
  if (event === undefined) {
    const stray = (['eventKeyPath', 'payloadPath', 'throwOnNoKey'] as const).filter((field) => options[field] !== undefined);
    if (stray.length > 0) refuse(stray.map((field) => ({ field, rule: 'needs_event', message: 'reads the event: give event' })));
    return { request };
  }
  if (request.payloadHash !== undefined)
    refuse([{ field: 'payloadHash', rule: 'not_with_event', message: 'is computed from the event: give one or the other' }]);
  if (eventKeyPath !== undefined && request.idempotencyKey !== undefined)
    refuse([{ field: 'idempotencyKey', rule: 'not_with_event', message: 'names the work, as eventKeyPath does in the event: give one or the other' }]);
  if (eventKeyPath === undefined && request.idempotencyKey === undefined)
    refuse([{ field: 'eventKeyPath', rule: 'required', message: 'names the work in the event (or give the request an idempotencyKey)' }]);
  const payload = payloadHashFromEvent(event, payloadPath);
  const key = eventKeyPath === undefined ? undefined : keyFromEvent(event, { eventKeyPath, throwOnNoKey });
  const issues = [...(key && 'issues' in key ? key.issues : []), ...('issues' in payload ? payload.issues : [])];
  if (issues.length > 0) refuse(issues);
  if (key && 'missingKeyPath' in key) {
    const { idempotencyKey: _none, ...plain } = request;
    (options.onNoKey ?? warnNoKey)(key.missingKeyPath);
    return { request: plain, missingKeyPath: key.missingKeyPath };
  }
  return {
    request: {
      ...request,
      ...(key && 'key' in key ? { idempotencyKey: key.key } : {}),
      payloadHash: (payload as { payloadHash: string }).payloadHash,
    },
  };
}

function refuse(fields: FieldIssueBody[]): never {
  throw new ValidationError({ fields }, `Invalid request: ${fields.map((issue) => `${issue.field}: ${issue.message}`).join('; ')}`);
}

function warnNoKey(path: string): void {
  process.emitWarning(`The event has no idempotency key at ${path}: the work runs without a record (a redelivery runs it again)`, {
    code: 'ES_LEASE_LOCKS_NO_IDEMPOTENCY_KEY',
  });
}

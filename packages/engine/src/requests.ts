/**
 * The one request boundary: every request schema, and the step from a validated body to the typed
 * request the engine takes. The functions read an event with a kind's `schema` (through the
 * Powertools parser) and call `toRequest`; in-process callers go through LockService, which does
 * the same. Either way a request is validated once and a lease token decoded once. Every rule has a
 * name so that errors say which field broke which rule; what differs per granularity lives in
 * granularity/.
 */
import { z } from 'zod';
import { canonicalJson, EVENT_PATH_MAX, PAYLOAD_HASH_PATTERN, workFromEvent } from '../../client/src/wire/event-path.js';
import { ValidationError } from './errors.js';
import { parseWith } from './field-issues.js';
import { granularityNames, type RawTargetFields, rulesFor, TARGET_FIELD_NAMES, targetBody } from './granularity/index.js';
import { checkText } from './granularity/text.js';
import { planKeys } from './keys.js';
import { decodeToken } from './lease-token.js';
import type { AcquireRequest, Granularity, LockTarget, RequestedMode, WorkRecord } from './model.js';
import type { OwnedToken } from './operations/owned.js';
import type { LockSettings } from './settings.js';
import type { WakeChannel } from './wake.js';
import { workKeyHash } from './work.js';

export const NAMESPACE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]*$/;
const REQUEST_ID_PATTERN = /^[\x21-\x7e]+$/;
const MAX_TOKEN_CHARS = 1_000_000;

type Limits = LockSettings['limits'];

/** Renew: the lease the token names (decoded here, once), and the new lease length. */
export interface RenewRequest {
  lease: OwnedToken;
  ttlMs: number;
}

/** Release: the lease the token names, and the outcome of its work to record (a lease acquired with an idempotency key). */
export interface ReleaseRequest {
  lease: OwnedToken;
  record?: WorkRecord;
}

export interface InspectRequest {
  target: LockTarget;
  mode: RequestedMode;
}

export interface ListRequest {
  namespace?: string;
  granularity?: Granularity;
  owner?: string;
  pathPrefix?: string;
  limit: number;
  includeExpired: boolean;
}

/** An operator's revoke or drain: the target, why, and who (the caller's principal, over HTTP). */
export interface AdminRequest {
  target: LockTarget;
  reason: string;
  by: string;
}

export interface SweepRequest {
  batchSize?: number;
  maxBatches?: number;
}

/** One kind of request: the wire shape it is validated against, and its typed form. */
export interface RequestKind<TParsed, TRequest> {
  readonly name: string;
  readonly schema: z.ZodType<TParsed>;
  /** Named numeric and boolean fields of a GET route's query string (its other fields are text). */
  readonly query?: { numeric?: readonly string[]; booleans?: readonly string[] };
  /** The typed request of a body that passed `schema`; throws ValidationError for what the schema cannot see (a lease token's contents). */
  toRequest(parsed: TParsed): TRequest;
}

function targetShape(limits: Limits) {
  return {
    namespace: z
      .string()
      .min(1)
      .max(limits.namespaceMax)
      .regex(NAMESPACE_PATTERN, { error: 'must start with a letter or digit and contain only letters, digits, ".", "_", ":" and "-"' }),
    granularity: z.enum(granularityNames()),
    ids: z.array(z.string().min(1)).min(1).max(limits.idsPerRequest).optional(),
    path: z.string().optional(),
  };
}

/** The granularity's own checks, and no target field of another granularity. */
function checkTarget(input: RawTargetFields & { granularity: Granularity }, ctx: z.core.$RefinementCtx<unknown>, limits: Limits): void {
  const rules = rulesFor(input.granularity);
  for (const field of TARGET_FIELD_NAMES) {
    if (rules.field !== field && input[field] !== undefined) {
      const takers = granularityNames().filter((name) => rulesFor(name).field === field);
      ctx.addIssue({
        code: 'custom',
        path: [field],
        message: `is only allowed for the ${takers.join(' or ')} granularity`,
        params: { rule: 'not_allowed' },
      });
    }
  }
  rules.check(input, ctx, limits);
}

/** A lock target alone (inspect, and the target inside an unsigned lease token). */
function targetSchema({ limits }: Readonly<LockSettings>) {
  return z
    .object({ ...targetShape(limits), mode: z.enum(['exclusive', 'shared']).default('exclusive') })
    .strict()
    .superRefine((input, ctx) => checkTarget(input, ctx, limits));
}

const WAKE_CHANNELS = ['taskToken', 'queueUrl', 'eventBusName'] as const;

/**
 * Where a queued waiter hears its outcome: exactly one channel, at most `queue.wakeBytes` of UTF-8
 * (it is stored on the lock document with the ticket, and every write rewrites the document).
 */
function wakeSchema({ queue }: Readonly<LockSettings>) {
  return z
    .object({
      taskToken: z.string().min(1).optional(),
      queueUrl: z
        .string()
        .regex(/^https?:\/\/[^\s]+$/, { error: 'must be the URL of an SQS queue' })
        .optional(),
      eventBusName: z
        .string()
        .min(1)
        .regex(/^(arn:aws[\w-]*:events:[\w-]+:\d{12}:event-bus\/)?[/.\-_A-Za-z0-9]+$/, { error: 'must be an EventBridge bus name or ARN' })
        .optional(),
    })
    .strict()
    .superRefine((wake, ctx) => {
      const given = [wake.taskToken, wake.queueUrl, wake.eventBusName].filter((value) => value !== undefined).length;
      if (given !== 1)
        ctx.addIssue({ code: 'custom', path: [], message: 'must name exactly one of taskToken, queueUrl, eventBusName', params: { rule: 'one_channel' } });
      for (const field of WAKE_CHANNELS) {
        const bytes = Buffer.byteLength(wake[field] ?? '', 'utf8');
        if (bytes > queue.wakeBytes)
          ctx.addIssue({
            code: 'custom',
            path: [field],
            message: `is ${bytes} bytes (UTF-8), above the ${queue.wakeBytes} a wake channel may take (queue.wakeBytes)`,
            params: { rule: 'too_large' },
          });
      }
    });
}

type ParsedWake = z.output<ReturnType<typeof wakeSchema>>;

function toWake(wake: ParsedWake): WakeChannel {
  if (wake.taskToken !== undefined) return { kind: 'task', taskToken: wake.taskToken };
  if (wake.queueUrl !== undefined) return { kind: 'queue', queueUrl: wake.queueUrl };
  return { kind: 'event', eventBusName: wake.eventBusName! };
}

function acquireSchema(settings: Readonly<LockSettings>) {
  const { limits, ttl } = settings;
  return z
    .object({
      ...targetShape(limits),
      mode: z.enum(['exclusive', 'shared']).default('exclusive'),
      owner: z.string().min(1).max(limits.ownerMax),
      ttlMs: z.number().int().min(ttl.minMs).max(ttl.maxMs).default(ttl.defaultMs),
      waitMs: z.number().int().min(0).max(settings.maxWaitMs).default(0),
      permits: permitsSchema(limits).optional(),
      requestId: z.string().min(1).max(limits.requestIdMax).regex(REQUEST_ID_PATTERN, { error: 'must be printable ASCII without spaces' }).optional(),
      wake: wakeSchema(settings).optional(),
      queueTtlMs: z
        .number()
        .int()
        .min(ttl.minMs)
        .max(settings.queue.ticketTtlMs.maxMs, { error: `must be at most ${settings.queue.ticketTtlMs.maxMs} ms (queue.ticketTtlMs.maxMs)` })
        .optional(),
      // Names the work, to run it once: `true` names it by the requestId. Only its hash is kept.
      idempotencyKey: z.union([z.string().min(1).max(limits.idempotencyKeyMax), z.literal(true)]).optional(),
      // The hash of the payload the work is for: a redelivery of the key with another payload is refused (WorkPayloadMismatchError).
      payloadHash: z
        .string()
        .regex(PAYLOAD_HASH_PATTERN, { error: 'must be 1 to 128 characters of letters, digits, "_", "-", "+", "/" and "=" (a SHA-256 in base64url is 43)' })
        .optional(),
      // Or the event itself: the key at `eventKeyPath`, the hash of the event (or of its part at `payloadPath`), computed here as the client does.
      event: z.unknown().optional(),
      eventKeyPath: z.string().min(1).max(EVENT_PATH_MAX).optional(),
      payloadPath: z.string().min(1).max(EVENT_PATH_MAX).optional(),
      throwOnNoKey: z.boolean().optional(),
    })
    .strict()
    .superRefine((input, ctx) => {
      checkText(ctx, ['owner'], input.owner, limits.ownerMax * 4);
      checkTarget(input, ctx, limits);
      const rule = (path: string, name: string, message: string): void => void ctx.addIssue({ code: 'custom', path: [path], message, params: { rule: name } });
      if (input.idempotencyKey === true && input.requestId === undefined)
        rule('idempotencyKey', 'needs_request_id', 'is true, which names the work by the requestId: give a requestId (or the key itself)');
      checkEventWork(input, rule, settings.work.eventBytes);
      // What names the work: the key, or the path to it in the event.
      const naming = input.idempotencyKey !== undefined ? 'idempotencyKey' : input.eventKeyPath !== undefined ? 'eventKeyPath' : undefined;
      // The work is taken on by the lock's one holder: a shared lock has several.
      if (naming && input.mode !== 'exclusive') rule(naming, 'exclusive_only', 'names work done under an exclusive lock: use mode exclusive');
      // A semaphore has several holders at once: none of them alone has the work.
      if (naming && input.permits !== undefined) rule(naming, 'not_with_permits', 'names work done under a lock of one holder; permits have several');
      if (input.queueTtlMs !== undefined && input.wake === undefined)
        rule('queueTtlMs', 'needs_wake', 'is the queue lease of a waiter with a wake channel: give wake too');
      if (input.permits !== undefined) checkPermits(input, rule);
      if (input.wake === undefined) return;
      // One lock's queue: a waiter of several keys would hold some while queued for others, and two such waiters can deadlock.
      if ((input.ids?.length ?? 1) > 1) rule('wake', 'single_key', 'queues for one lock: give a single id (several ids are taken all at once, with waitMs)');
      if (input.waitMs > 0) rule('waitMs', 'not_with_wake', 'must be 0 with wake: the call answers at once and the outcome goes to the wake channel');
      // The waiter claims its reservation with the same acquire again: the requestId is what names the call.
      if (input.requestId === undefined)
        rule('requestId', 'needs_request_id', 'is needed with wake: the waiter claims its turn with the same acquire (same requestId) without wake');
    });
}

/** The fields that name work by its event go together, and with nothing else that names it; the event is JSON, within its bound. */
function checkEventWork(
  input: {
    idempotencyKey?: unknown;
    payloadHash?: string | undefined;
    event?: unknown;
    eventKeyPath?: string | undefined;
    payloadPath?: string | undefined;
    throwOnNoKey?: boolean | undefined;
  },
  rule: (path: string, name: string, message: string) => void,
  eventBytes: number,
): void {
  const withEvent = input.event !== undefined;
  if (input.payloadHash !== undefined && withEvent) rule('payloadHash', 'not_with_event', 'is computed from the event: give one or the other');
  else if (input.payloadHash !== undefined && input.idempotencyKey === undefined)
    rule('payloadHash', 'needs_idempotency_key', 'is the hash of the payload of work named by an idempotencyKey: give the key too');
  if (withEvent && input.idempotencyKey !== undefined)
    rule('idempotencyKey', 'not_with_event', 'names the work, as eventKeyPath does in the event: give one or the other');
  if (withEvent && input.eventKeyPath === undefined) rule('event', 'needs_event_key_path', 'names the work by the key at eventKeyPath: give eventKeyPath');
  for (const field of ['eventKeyPath', 'payloadPath', 'throwOnNoKey'] as const)
    if (input[field] !== undefined && !withEvent) rule(field, 'needs_event', 'reads the event: give event');
  if (!withEvent) return;
  const json = canonicalJson(input.event);
  if (json === undefined) rule('event', 'json', 'must be a JSON value');
  else if (Buffer.byteLength(json, 'utf8') > eventBytes)
    rule(
      'event',
      'too_large',
      `is ${Buffer.byteLength(json, 'utf8')} bytes of JSON, above the ${eventBytes} an acquire may carry (work.eventBytes): hash it yourself and send idempotencyKey and payloadHash`,
    );
}

/**
 * The work an acquire names: by its idempotencyKey (and payloadHash), or by its event, read as the
 * client reads it (wire/event-path.ts). An event without its key is no work (`missingKeyPath`), unless
 * the call asked that to be an error.
 */
function workOf(parsed: ParsedAcquire, target: LockTarget, limits: Limits): Pick<AcquireRequest, 'work' | 'missingKeyPath'> {
  const payload = parsed.payloadHash !== undefined ? { payloadHash: parsed.payloadHash } : {};
  if (parsed.idempotencyKey !== undefined)
    return { work: { keyHash: workKeyHash(target, parsed.idempotencyKey === true ? parsed.requestId! : parsed.idempotencyKey), ...payload } };
  if (parsed.event === undefined || parsed.eventKeyPath === undefined) return {};
  const found = workFromEvent(parsed.event, {
    eventKeyPath: parsed.eventKeyPath,
    payloadPath: parsed.payloadPath,
    throwOnNoKey: parsed.throwOnNoKey,
    keyMax: limits.idempotencyKeyMax,
  });
  if ('issues' in found) throw new ValidationError({ fields: found.issues });
  if ('missingKeyPath' in found) return { missingKeyPath: found.missingKeyPath };
  return { work: { keyHash: workKeyHash(target, found.key), payloadHash: found.payloadHash } };
}

/** A semaphore's share: `count` (default 1) of `limit` permits. */
function permitsSchema(limits: Limits) {
  return z
    .object({ limit: z.number().int().min(1).max(limits.permitsMax), count: z.number().int().min(1).default(1) })
    .strict()
    .superRefine((permits, ctx) => {
      // Against a limit that is itself refused, the count says nothing more.
      if (permits.limit >= 1 && permits.count > permits.limit)
        ctx.addIssue({ code: 'custom', path: ['count'], message: `must be at most permits.limit (${permits.limit})`, params: { rule: 'more_than_limit' } });
    });
}

/** Permits count holders of one lock document, each an exclusive holder as everything around the target sees it (docs/permits.md). */
function checkPermits(
  input: { granularity: Granularity; ids?: string[] | undefined; mode: RequestedMode },
  rule: (path: string, name: string, message: string) => void,
): void {
  const refusal = rulesFor(input.granularity).refusesPermits;
  if (refusal !== undefined) rule('permits', `not_for_${input.granularity}`, refusal);
  else if ((input.ids?.length ?? 1) > 1) rule('permits', 'single_key', 'count holders of one lock: give a single id (a semaphore is one document)');
  if (input.mode !== 'exclusive')
    rule('mode', 'not_with_permits', 'must be exclusive with permits: permit holders share only with each other, while their permits fit');
}

function renewSchema({ ttl }: Readonly<LockSettings>) {
  return z
    .object({
      leaseToken: z.string().min(1).max(MAX_TOKEN_CHARS),
      ttlMs: z.number().int().min(ttl.minMs).max(ttl.maxMs).default(ttl.defaultMs),
    })
    .strict();
}

function releaseSchema({ work }: Readonly<LockSettings>) {
  const record = z
    .object({
      status: z.enum(['completed', 'failed']),
      result: z.unknown().optional(),
      ttlMs: z.number().int().min(work.recordTtlMs.minMs).max(work.recordTtlMs.maxMs).default(work.recordTtlMs.defaultMs),
    })
    .strict()
    .superRefine((input, ctx) => {
      if (input.result === undefined) return;
      const json = jsonText(input.result);
      if (json === undefined) ctx.addIssue({ code: 'custom', path: ['result'], message: 'must be a JSON value', params: { rule: 'json' } });
      else if (Buffer.byteLength(json, 'utf8') > work.resultBytes)
        ctx.addIssue({
          code: 'custom',
          path: ['result'],
          message: `is ${Buffer.byteLength(json, 'utf8')} bytes of JSON, above the ${work.resultBytes} stored inline: store it elsewhere and record where`,
          params: { rule: 'too_large' },
        });
    });
  return z.object({ leaseToken: z.string().min(1).max(MAX_TOKEN_CHARS), record: record.optional() }).strict();
}

/** The JSON text of a value, or undefined if it is not JSON (a function, a cycle, a bigint). */
function jsonText(value: unknown): string | undefined {
  try {
    const text = JSON.stringify(value);
    return typeof text === 'string' && JSON.stringify(JSON.parse(text)) === text ? text : undefined;
  } catch {
    return undefined;
  }
}

function listSchema({ limits }: Readonly<LockSettings>) {
  return z
    .object({
      namespace: z.string().min(1).max(limits.namespaceMax).regex(NAMESPACE_PATTERN, { error: 'is not a valid namespace' }).optional(),
      granularity: z.enum(granularityNames()).optional(),
      owner: z.string().min(1).max(limits.ownerMax).optional(),
      pathPrefix: z.string().startsWith('/', { error: 'must start with "/"' }).max(limits.pathBytes).optional(),
      limit: z.number().int().min(1).max(1_000).default(100),
      includeExpired: z.boolean().default(false),
    })
    .strict();
}

/** A revoke or a drain: a target (any mode: what is taken off is whoever holds or waits for it), and a reason for the audit. */
function adminSchema({ limits, admin }: Readonly<LockSettings>) {
  return z
    .object({
      ...targetShape(limits),
      reason: z.string().trim().min(1, { error: 'must say why (it is kept in the audit record)' }).max(admin.reasonMax),
      by: z.string().min(1).max(256).optional(),
    })
    .strict()
    .superRefine((input, ctx) => checkTarget(input, ctx, limits));
}

const statusSchema = z.object({}).strict();

const sweepSchema = z
  .object({
    batchSize: z.number().int().min(1).max(10_000).optional(),
    maxBatches: z.number().int().min(1).max(1_000).optional(),
  })
  .strict();

type ParsedTarget = z.output<ReturnType<typeof targetSchema>>;
type ParsedAcquire = z.output<ReturnType<typeof acquireSchema>>;

/** The target of a parsed request, in its canonical form. */
function toTarget(parsed: RawTargetFields & { namespace: string; granularity: Granularity }): LockTarget {
  return rulesFor(parsed.granularity).target(parsed.namespace, parsed);
}

export interface LockRequests {
  readonly acquire: RequestKind<ParsedAcquire, AcquireRequest>;
  readonly renew: RequestKind<z.output<ReturnType<typeof renewSchema>>, RenewRequest>;
  readonly release: RequestKind<z.output<ReturnType<typeof releaseSchema>>, ReleaseRequest>;
  readonly inspect: RequestKind<ParsedTarget, InspectRequest>;
  readonly list: RequestKind<z.output<ReturnType<typeof listSchema>>, ListRequest>;
  readonly sweep: RequestKind<z.output<typeof sweepSchema>, SweepRequest>;
  readonly revoke: RequestKind<z.output<ReturnType<typeof adminSchema>>, AdminRequest>;
  readonly drain: RequestKind<z.output<ReturnType<typeof adminSchema>>, AdminRequest>;
  readonly status: RequestKind<z.output<typeof statusSchema>, Record<string, never>>;
}

/** `by` of a revoke or drain that names nobody (the functions record the caller's principal instead). */
export const UNNAMED_OPERATOR = 'unnamed operator';

const toAdminRequest = (parsed: z.output<ReturnType<typeof adminSchema>>): AdminRequest => ({
  target: toTarget(parsed),
  reason: parsed.reason,
  by: parsed.by ?? UNNAMED_OPERATOR,
});

function buildRequests(settings: Readonly<LockSettings>): LockRequests {
  const target = targetSchema(settings);
  const admin = adminSchema(settings);
  /**
   * The token's lease, decoded once. The target inside is input like any other and goes through the
   * same rules, unless the MAC shows that this service issued it (after validating it at acquire).
   */
  const leaseOf = (leaseToken: string): OwnedToken => {
    const decoded = decodeToken(leaseToken, settings.tokenSigningKey);
    const leaseTarget = decoded.signed ? decoded.target : toTarget(parseWith(target, { ...targetBody(decoded.target), mode: decoded.mode }));
    return { ...decoded, target: leaseTarget, keys: planKeys(leaseTarget, decoded.mode) };
  };
  return Object.freeze({
    acquire: {
      name: 'acquire',
      schema: acquireSchema(settings),
      toRequest: (parsed: ParsedAcquire): AcquireRequest => ({
        ...workOf(parsed, toTarget(parsed), settings.limits),
        target: toTarget(parsed),
        mode: parsed.mode,
        owner: parsed.owner,
        ttlMs: parsed.ttlMs,
        waitMs: parsed.waitMs,
        ...(parsed.requestId !== undefined ? { requestId: parsed.requestId } : {}),
        ...(parsed.permits !== undefined ? { permits: parsed.permits } : {}),
        ...(parsed.wake !== undefined ? { wake: toWake(parsed.wake) } : {}),
        ...(parsed.queueTtlMs !== undefined ? { queueTtlMs: parsed.queueTtlMs } : {}),
      }),
    },
    renew: { name: 'renew', schema: renewSchema(settings), toRequest: ({ leaseToken, ttlMs }) => ({ lease: leaseOf(leaseToken), ttlMs }) },
    release: {
      name: 'release',
      schema: releaseSchema(settings),
      toRequest: ({ leaseToken, record }) => ({
        lease: leaseOf(leaseToken),
        ...(record ? { record: { status: record.status, ttlMs: record.ttlMs, ...(record.result !== undefined ? { result: record.result } : {}) } } : {}),
      }),
    },
    inspect: { name: 'inspect', schema: target, toRequest: (parsed: ParsedTarget) => ({ target: toTarget(parsed), mode: parsed.mode }) },
    list: {
      name: 'list',
      schema: listSchema(settings),
      query: { numeric: ['limit'], booleans: ['includeExpired'] },
      toRequest: (parsed) => parsed,
    },
    sweep: { name: 'sweep', schema: sweepSchema, toRequest: (parsed) => parsed },
    revoke: { name: 'revoke', schema: admin, toRequest: toAdminRequest },
    drain: { name: 'drain', schema: admin, toRequest: toAdminRequest },
    status: { name: 'status', schema: statusSchema, toRequest: () => ({}) },
  } satisfies LockRequests);
}

/** Schemas are built once per settings object (building one costs more than using it). */
const built = new WeakMap<object, LockRequests>();

/** Every kind of request under these settings' limits. */
export function lockRequests(settings: Readonly<LockSettings>): LockRequests {
  let requests = built.get(settings);
  if (!requests) {
    requests = buildRequests(settings);
    built.set(settings, requests);
  }
  return requests;
}

/** Validates raw input (a body, an event's detail, a query) once and answers its typed request; throws ValidationError. */
export function parseRequest<TParsed, TRequest>(kind: RequestKind<TParsed, TRequest>, input: unknown): TRequest {
  return kind.toRequest(parseWith(kind.schema, input));
}

/** Query strings as typed input: repeated `id` (or comma-separated `ids`) become `ids`; the kind's numbers and booleans are read as such. */
export function queryInput(query: URLSearchParams, kind: Pick<RequestKind<unknown, unknown>, 'query'>): Record<string, unknown> {
  const numeric = kind.query?.numeric ?? [];
  const booleans = kind.query?.booleans ?? [];
  const input: Record<string, unknown> = {};
  const ids: string[] = [];
  for (const [name, value] of query) {
    if (name === 'id') ids.push(value);
    else if (name === 'ids') ids.push(...value.split(',').filter((id) => id !== ''));
    else if (numeric.includes(name)) input[name] = /^-?\d+$/.test(value) ? Number(value) : value;
    else if (booleans.includes(name)) input[name] = value === 'true' ? true : value === 'false' ? false : value;
    else input[name] = value;
  }
  if (ids.length > 0) input.ids = ids;
  return input;
}

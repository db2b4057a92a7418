/**
 * Lease tokens: `elk1.<payload>.<secret>[.<mac>]`.
 *
 * The payload names the lease (id, target, mode) so that renew and release need nothing else. The
 * secret is 32 random bytes; the index keeps only a hash of it (the holder's `proof`). When the
 * engine has a signing key, the token also carries a MAC over payload and secret, which lets the
 * engine trust the payload's `hints` (the seq_no/primary_term of the holder's last write) and
 * release a lease it holds alone with one round of conditional deletes.
 */
import { createHmac, createSecretKey, hash, type KeyObject, randomBytes, timingSafeEqual } from 'node:crypto';
import { LeaseTokenMismatchError, ValidationError } from './errors.js';
import { isRegistered, rulesFor, TARGET_FIELDS } from './granularity/index.js';
import type { LockTarget, RequestedMode } from './model.js';
import { type Recipe, recipeOf } from './renewal-recipe.js';
import type { StoredLock } from './store.js';

const PREFIX = 'elk1';
const LEASE_ID = /^[A-Za-z0-9_-]{22}$/;
const SECRET = /^[A-Za-z0-9_-]{43}$/;
const KEY_HASH = /^[A-Za-z0-9_-]{43}$/;

export interface WriteHint {
  docId: string;
  seqNo: number;
  primaryTerm: number;
  /** The lock index's incarnation that (seqNo, primaryTerm) belong to: they repeat in a re-created index. */
  index: string;
  /**
   * Our lease was the only holder after that write and the document need not outlive it (not `lockedBelow`):
   * if the document is unchanged, deleting it releases exactly us.
   */
  sole: boolean;
  /**
   * The document is one a renewal in place can write again without reading it (renewal-recipe.ts):
   * that incarnation's fencing epoch (for a pending fence) and the recipe.
   */
  inPlace?: { epoch: number; recipe: Recipe };
}

export interface LeaseClaims {
  leaseId: string;
  target: LockTarget;
  mode: RequestedMode;
  hints: WriteHint[];
  /** When the lease ends, as the engine computed it at the last grant or renewal. */
  expiresAt?: number;
  /** When it was granted (kept through renewals): for the hold-time metric only, never for a decision. */
  grantedAt?: number;
  /** Acquired with an idempotency key: the work it took on (its hash), whose outcome its release may record. */
  work?: { keyHash: string };
}

export interface DecodedToken extends LeaseClaims {
  secret: string;
  /** True when the engine has a signing key (then the MAC was present and verified, or the token refused). */
  signed: boolean;
}

export interface NewLease {
  leaseId: string;
  secret: string;
  proof: string;
}

// Lease ids and secrets are drawn from a buffer refilled 4 KiB at a time: one system call per 85
// leases instead of two per lease (it was a quarter of the engine's own CPU time per lock cycle).
let entropy = Buffer.alloc(0);
let entropyOffset = 0;
function randomSlice(bytes: number): Buffer {
  if (entropyOffset + bytes > entropy.length) {
    entropy = randomBytes(4096);
    entropyOffset = 0;
  }
  const slice = entropy.subarray(entropyOffset, entropyOffset + bytes);
  entropyOffset += bytes;
  return slice;
}

export function newLease(): NewLease {
  const leaseId = randomSlice(16).toString('base64url');
  const secret = randomSlice(32).toString('base64url');
  return { leaseId, secret, proof: proofOf(leaseId, secret) };
}

/** What the index stores instead of the secret. (One-shot `hash`: no Hash object per lease, a third of createHash's cost.) */
export function proofOf(leaseId: string, secret: string): string {
  return hash('sha256', `${leaseId}.${secret}`, 'base64url');
}

export function proofMatches(stored: string, leaseId: string, secret: string): boolean {
  const expected = Buffer.from(proofOf(leaseId, secret));
  const actual = Buffer.from(stored);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

interface Payload {
  l: string;
  n: string;
  g: LockTarget['granularity'];
  /** The value of the target's one field (its granularity's `field`): ids, or a path. */
  k?: unknown;
  m: 'x' | 's';
  /** Hints: docId, term, seqNo, sole, incarnation, and for a renewal in place [epoch, grantedAt, fence] (the lease's part of the recipe in `o`). */
  h?: Array<[string, number, number, 0 | 1, string] | [string, number, number, 0 | 1, string, [number, number, string | null]]>;
  /** The lease's part of the recipes: owner, request, call, work (0: none). */
  o?: [string, string | null, string | null, string | 0];
  e?: number;
  a?: number;
  w?: string;
}

// An HMAC keyed with raw bytes builds a key object on every call (measured 10.9 µs against 1.6 µs with a kept one).
const keyObjects = new WeakMap<Uint8Array, KeyObject>();
function keyObjectOf(key: Uint8Array): KeyObject {
  let keyObject = keyObjects.get(key);
  if (!keyObject) {
    keyObject = createSecretKey(key);
    keyObjects.set(key, keyObject);
  }
  return keyObject;
}
const mac = (key: Uint8Array, body: string): string => createHmac('sha256', keyObjectOf(key)).update(body).digest('base64url').slice(0, 22);

export function encodeToken(claims: LeaseClaims, secret: string, signingKey?: Uint8Array): string {
  const { target } = claims;
  const payload: Payload = {
    l: claims.leaseId,
    n: target.namespace,
    g: target.granularity,
    m: claims.mode === 'exclusive' ? 'x' : 's',
  };
  const rules = rulesFor(target.granularity);
  const named = rules.field === undefined ? undefined : rules.toFields(target)[rules.field];
  if (named !== undefined) payload.k = named;
  if (claims.expiresAt !== undefined) payload.e = claims.expiresAt;
  if (claims.grantedAt !== undefined) payload.a = claims.grantedAt;
  if (claims.work) payload.w = claims.work.keyHash;
  if (signingKey && claims.hints.length > 0) {
    // The lease's part of the recipes once; a hint whose recipe has another (none should) goes without.
    const first = claims.hints.find((hint) => hint.inPlace)?.inPlace?.recipe;
    if (first) payload.o = [first.owner, first.request, first.call, first.work ?? 0];
    payload.h = claims.hints.map((hint) => {
      const noted: [string, number, number, 0 | 1, string] = [hint.docId, hint.primaryTerm, hint.seqNo, hint.sole ? 1 : 0, hint.index];
      const inPlace = hint.inPlace;
      if (!first || !inPlace || !sameLeasePart(inPlace.recipe, first)) return noted;
      return [...noted, [inPlace.epoch, inPlace.recipe.grantedAt, inPlace.recipe.fence]];
    });
  }
  const body = `${PREFIX}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.${secret}`;
  return signingKey ? `${body}.${mac(signingKey, body)}` : body;
}

const sameLeasePart = (a: Recipe, b: Recipe): boolean => a.owner === b.owner && a.request === b.request && a.call === b.call && a.work === b.work;

const isNullableString = (value: unknown): value is string | null => value === null || typeof value === 'string';

/** The lease's part of the recipes, when well formed. */
function leasePartOf(o: unknown): Omit<Recipe, 'grantedAt' | 'fence'> | undefined {
  if (!Array.isArray(o) || o.length !== 4) return undefined;
  const [owner, request, call, work] = o as unknown[];
  if (!isString(owner) || !isNullableString(request) || !isNullableString(call) || !(work === 0 || isString(work))) return undefined;
  return { owner, request, call, ...(work !== 0 ? { work } : {}) };
}

/** A hint's renewal in place, when the lease's part is there and the hint's part is well formed. */
function inPlaceOf(part: unknown, leasePart: Omit<Recipe, 'grantedAt' | 'fence'> | undefined): WriteHint['inPlace'] {
  if (!leasePart || !Array.isArray(part) || part.length !== 3) return undefined;
  const [epoch, grantedAt, fence] = part as unknown[];
  if (!Number.isSafeInteger(epoch) || !Number.isSafeInteger(grantedAt) || !(fence === null || (isString(fence) && /^\d{1,19}$/.test(fence)))) return undefined;
  return { epoch: epoch as number, recipe: { ...leasePart, grantedAt: grantedAt as number, fence: fence as string | null } };
}

function macMatches(signingKey: Uint8Array, body: string, presented: string): boolean {
  const expected = Buffer.from(mac(signingKey, body));
  const actual = Buffer.from(presented);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

function malformed(reason: string): ValidationError {
  return new ValidationError({
    fields: [{ field: 'leaseToken', rule: 'lease_token', message: `is not a lease token issued by this service (${reason})` }],
  });
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** The target a payload names, if its shape fits its granularity (its content is validated by the engine). */
function targetOf(payload: Payload): LockTarget | undefined {
  if (!isRegistered(payload.g)) return undefined;
  const rules = rulesFor(payload.g);
  if (rules.field === undefined) return payload.k === undefined ? rules.target(payload.n, {}) : undefined;
  const fields = TARGET_FIELDS[rules.field].read(payload.k);
  return fields ? rules.target(payload.n, fields) : undefined;
}

/**
 * Parses the token's structure. Without a signing key the target inside is re-validated by the engine
 * before use, and its work (`w`) is only a name: a record needs the work's claim to name the lease. With
 * a signing key, a token whose MAC is missing or does not verify is refused (LeaseTokenMismatchError).
 */
export function decodeToken(token: string, signingKey?: Uint8Array): DecodedToken {
  const parts = token.split('.');
  if ((parts.length !== 3 && parts.length !== 4) || parts[0] !== PREFIX) throw malformed('wrong format');
  const [, encodedPayload = '', secret = '', presentedMac] = parts;
  if (!SECRET.test(secret)) throw malformed('bad secret');
  let payload: Payload;
  try {
    payload = JSON.parse(Buffer.from(encodedPayload, 'base64url').toString('utf8')) as Payload;
  } catch {
    throw malformed('unreadable payload');
  }
  if (typeof payload !== 'object' || payload === null || !isString(payload.l) || !LEASE_ID.test(payload.l)) throw malformed('bad lease id');
  if (!isString(payload.n) || (payload.m !== 'x' && payload.m !== 's')) throw malformed('bad namespace or mode');
  const target = targetOf(payload);
  if (!target) throw malformed('bad target');
  if (payload.w !== undefined && !(isString(payload.w) && KEY_HASH.test(payload.w))) throw malformed('bad work');

  // With a signing key, every token this service issues carries a MAC: one without it, or whose MAC
  // does not verify, is refused whole (nothing in it is used: not its work, not its hints).
  const signed = signingKey !== undefined;
  if (signingKey && !(presentedMac !== undefined && macMatches(signingKey, `${PREFIX}.${encodedPayload}.${secret}`, presentedMac))) {
    throw new LeaseTokenMismatchError(
      { leaseId: payload.l },
      `The token for lease ${payload.l} was not issued by this service (its signature does not verify)`,
    );
  }
  const leasePart = leasePartOf(payload.o);
  const hints: WriteHint[] =
    signed && Array.isArray(payload.h)
      ? payload.h
          // A hint without its incarnation (older tokens) is dropped: release then takes the verified path.
          .filter((hint) => Array.isArray(hint) && isString(hint[0]) && Number.isInteger(hint[1]) && Number.isInteger(hint[2]) && isString(hint[4]))
          .map(([docId, primaryTerm, seqNo, sole, index, part]) => {
            const inPlace = inPlaceOf(part, leasePart);
            return { docId, primaryTerm, seqNo, sole: sole === 1, index, ...(inPlace ? { inPlace } : {}) };
          })
      : [];
  return {
    leaseId: payload.l,
    target,
    mode: payload.m === 'x' ? 'exclusive' : 'shared',
    hints,
    secret,
    signed,
    ...(signed && Number.isInteger(payload.e) ? { expiresAt: payload.e } : {}),
    ...(Number.isSafeInteger(payload.a) ? { grantedAt: payload.a } : {}),
    ...(payload.w !== undefined ? { work: { keyHash: payload.w } } : {}),
  };
}

/** What a token notes of its holder's last write to a document. */
export function hintFor(lock: StoredLock): WriteHint {
  const recipe = recipeOf(lock);
  return {
    ...(recipe ? { inPlace: { epoch: lock.epoch ?? 0, recipe } } : {}),
    docId: lock.docId,
    seqNo: lock.seqNo,
    primaryTerm: lock.primaryTerm,
    index: lock.index,
    sole: lock.body.holders.length === 1 && lock.body.lockedBelow !== true && !lock.body.queue?.length,
  };
}

/**
 * Several fenced writes in one `_bulk` request. Creates and partial updates need the documents as
 * they are: one realtime `_mget` reads them all first. Every write goes as an `index` action with the
 * token as its external version, so each item is refused on its own when its document carries a
 * newer token. Items on the same document apply in order: an update merges into what the items
 * before it in the same bulk wrote.
 */
import { type Decision, type DocumentState, decideCreate, decideUpdate, stateOf, type Target } from './decide.js';
import { FencedBulkItemError, FencedOutError } from './errors.js';
import { tombstone } from './tombstone.js';
import { currentTokenIn, type DocumentAddress, type FencedWritesClient, isConflict, readDocuments, send } from './transport.js';
import type { FencedWriteResult } from './types.js';
import { type FencingTokenSource, InputCheck } from './validate.js';
import { type FencedRefresh, writeParameters } from './write.js';

interface ItemBase {
  index: string;
  id: string;
  /** This item's token; else the bulk's. */
  fencingToken?: FencingTokenSource;
  routing?: string;
}

export type FencedBulkItem =
  | (ItemBase & { op: 'index' | 'create'; document: object })
  | (ItemBase & { op: 'update' /** The fields to merge in. */; doc: object })
  | (ItemBase & { op: 'delete' });

export type FencedBulkOp = FencedBulkItem['op'];

export interface FencedBulkRequest {
  items: FencedBulkItem[];
  /** The token of every item that gives none of its own. */
  fencingToken?: FencingTokenSource;
  /** The bulk request's refresh. */
  refresh?: FencedRefresh;
}

/** One item's outcome, in the order of the items. A refusal by a newer token is a FencedOutError. */
export type FencedBulkItemResult =
  | (FencedWriteResult & { ok: true; op: FencedBulkOp })
  | { ok: false; op: FencedBulkOp; index: string; id: string; fencingToken: string; error: Error };

export interface FencedBulkResult {
  /** Whether any item failed. */
  errors: boolean;
  items: FencedBulkItemResult[];
}

const OPS: ReadonlySet<string> = new Set(['index', 'create', 'update', 'delete']);

interface Checked {
  item: FencedBulkItem;
  token: string;
  key: string;
}

function check(request: FencedBulkRequest): Checked[] {
  const input = new InputCheck();
  const shared = request.fencingToken === undefined ? undefined : input.token(request.fencingToken, 'fencingToken');
  const items: unknown = request.items;
  if (!Array.isArray(items)) {
    input.issues.push({ field: 'items', rule: 'type', message: 'must be an array of items' });
    input.throwIfAny();
  }
  const checked = (items as FencedBulkItem[]).map((item, position): Checked => {
    const at = `items.${position}`;
    if (typeof item !== 'object' || item === null || !OPS.has((item as { op?: unknown }).op as string)) {
      input.issues.push({ field: `${at}.op`, rule: 'one_of', message: 'must be one of index, create, update, delete' });
      return { item, token: '', key: '' };
    }
    input.name(item.index, `${at}.index`);
    input.name(item.id, `${at}.id`);
    input.name(item.routing, `${at}.routing`, true);
    if (item.op === 'index' || item.op === 'create') input.document(item.document, `${at}.document`);
    if (item.op === 'update') input.document(item.doc, `${at}.doc`);
    const token =
      item.fencingToken !== undefined
        ? input.token(item.fencingToken, `${at}.fencingToken`)
        : request.fencingToken === undefined
          ? input.token(undefined, `${at}.fencingToken`)
          : shared;
    return { item, token: token ?? '', key: JSON.stringify([item.index, item.routing ?? null, item.id]) };
  });
  input.throwIfAny();
  return checked;
}

/** The NDJSON `index` action: the token goes as a JSON number literal, exact at any size (it is a checked decimal string). */
function indexAction(item: FencedBulkItem, token: string): string {
  const routing = item.routing === undefined ? '' : `,"routing":${JSON.stringify(item.routing)}`;
  return `{"index":{"_index":${JSON.stringify(item.index)},"_id":${JSON.stringify(item.id)}${routing},"version":${token},"version_type":"external_gte"}}`;
}

/** Reads the documents that creates and updates need, in one `_mget`: their state by key (a failed read as its error). */
async function readStates(client: FencedWritesClient, checked: Checked[]): Promise<Map<string, DocumentState | Error>> {
  const addresses = new Map<string, DocumentAddress>();
  for (const { item, key } of checked) {
    if ((item.op === 'create' || item.op === 'update') && !addresses.has(key)) addresses.set(key, { index: item.index, id: item.id, routing: item.routing });
  }
  const stored = await readDocuments(client, [...addresses.values()]);
  const states = new Map<string, DocumentState | Error>();
  [...addresses.entries()].forEach(([key, address], position) => {
    const document = stored[position]!;
    states.set(key, document.error ? new FencedBulkItemError({ index: address.index, id: address.id, ...document.error }) : stateOf(document));
  });
  return states;
}

/** What an item writes, or why it does not, given its document's state (read for creates and updates only). */
function decide(item: FencedBulkItem, target: Target, state: DocumentState | Error | undefined): Decision {
  if (item.op === 'delete') return { write: tombstone() };
  if (item.op === 'update') return state instanceof Error ? { refuse: state } : decideUpdate(target, state!, item.doc as Record<string, unknown>);
  if (item.op === 'index') return { write: item.document as Record<string, unknown> };
  return state instanceof Error ? { refuse: state } : decideCreate(target, state!, item.document as Record<string, unknown>);
}

/** Writes the items in one `_bulk` (after one `_mget` when there are creates or updates): each item's outcome, in order. */
export async function fencedBulk(client: FencedWritesClient, request: FencedBulkRequest): Promise<FencedBulkResult> {
  const checked = check(request);
  if (checked.length === 0) return { errors: false, items: [] };
  const states = await readStates(client, checked);

  const outcomes: Array<FencedBulkItemResult | undefined> = [];
  const writes: Array<{ position: number; body: Record<string, unknown> }> = [];
  checked.forEach(({ item, token, key }, position) => {
    const target = { index: item.index, id: item.id, fencingToken: token };
    const state = states.get(key);
    const decision = decide(item, target, state);
    if ('refuse' in decision) {
      outcomes[position] = { ok: false, op: item.op, ...target, error: decision.refuse };
      return;
    }
    writes.push({ position, body: decision.write });
    // What the later items on this document see, if this one lands.
    if (states.has(key) && !(state instanceof Error)) {
      states.set(key, item.op === 'delete' ? { kind: 'deleted', version: token } : { kind: 'live', source: decision.write, hasSource: true, version: token });
    }
  });

  if (writes.length > 0) {
    const lines = writes.flatMap(({ position, body }) => [indexAction(checked[position]!.item, checked[position]!.token), JSON.stringify(body)]);
    const answer = await send(client, {
      method: 'POST',
      path: '/_bulk',
      querystring: writeParameters({ refresh: request.refresh }),
      bulkBody: `${lines.join('\n')}\n`,
    });
    const answered = (answer.body as { items?: unknown } | undefined)?.items;
    if (!Array.isArray(answered) || answered.length !== writes.length) {
      throw new Error(`_bulk answered ${Array.isArray(answered) ? answered.length : 'no'} items for the ${writes.length} sent`);
    }
    writes.forEach(({ position }, n) => {
      outcomes[position] = outcomeOf(checked[position]!, Object.values(answered[n] as object)[0] as BulkAnswerItem);
    });
  }
  const items = outcomes as FencedBulkItemResult[];
  return { errors: items.some((outcome) => !outcome.ok), items };
}

interface BulkAnswerItem {
  status?: number;
  result?: string;
  error?: { type?: string; reason?: string } | string;
}

function outcomeOf({ item, token }: Checked, answer: BulkAnswerItem | undefined): FencedBulkItemResult {
  const target = { op: item.op, index: item.index, id: item.id, fencingToken: token };
  const status = answer?.status;
  if (status !== undefined && status >= 200 && status < 300) {
    const created = answer?.result === 'created';
    const result = item.op === 'delete' ? (created ? 'not_found' : 'deleted') : item.op === 'create' ? 'created' : created ? 'created' : 'updated';
    return { ok: true, ...target, result };
  }
  const error = typeof answer?.error === 'object' ? answer.error : { reason: answer?.error };
  if (isConflict({ statusCode: status, type: error.type })) {
    return { ok: false, ...target, error: new FencedOutError({ ...target, currentToken: currentTokenIn(error.reason) }) };
  }
  return { ok: false, ...target, error: new FencedBulkItemError({ index: item.index, id: item.id, status, type: error.type, reason: error.reason }) };
}

/**
 * Fenced writes to DynamoDB items. Each call is one conditional write: the item keeps the token of
 * its last fenced write in `_fencingToken`, a DynamoDB number (sent as the decimal string: tokens pass
 * 2^53, DynamoDB numbers hold 38 digits and compare exactly), and the write lands only if the item
 * has no token or one not newer than ours (`attribute_not_exists(#t) OR #t <= :ours`). A delete writes
 * a tombstone (the key, the token and `_fencedDeletedAt`), so an older token cannot bring the item
 * back. A refused condition is FencedOutError, with the newer token the item carries
 * (`ReturnValuesOnConditionCheckFailure: ALL_OLD`; read consistently where the service does not give it).
 *
 * The client is yours, typed by shape: the aggregated client of `@aws-sdk/client-dynamodb`
 * (`new DynamoDB(config)`), or anything with its putItem, updateItem and getItem.
 */
import { compareFencingTokens } from '../fencing-token.js';
import { awsErrorName } from './aws-errors.js';
import {
  type CallerExpressions,
  checkCallerExpressions,
  conditionOf,
  FENCED_TOKEN_ATTRIBUTE,
  fencedUpdateExpression,
  reservedMessage,
  TOKEN_NAME,
  TOKEN_VALUE,
  TOMBSTONE_NAME,
} from './dynamodb-expression.js';
import { FencedOutError } from './errors.js';
import { FENCED_TOMBSTONE_FIELD } from './tombstone.js';
import { type FencingTokenSource, InputCheck, TOKEN_LIMITS } from './validate.js';

export { FENCED_TOKEN_ATTRIBUTE } from './dynamodb-expression.js';

/** An attribute value as the SDK's DynamoDB client takes it: `{ S: 'o-1' }`, `{ N: '12' }`, `{ M: { ... } }`. */
export type FencedAttributeValue = object;
/** An item or a key: attribute names to attribute values. */
export type FencedItem = Record<string, FencedAttributeValue>;

/** What every fenced write sends besides the item or the update. */
interface ConditionalWrite {
  TableName: string;
  ConditionExpression: string;
  ExpressionAttributeNames: Record<string, string>;
  ExpressionAttributeValues: FencedItem;
  ReturnValues: 'ALL_OLD';
  ReturnValuesOnConditionCheckFailure: 'ALL_OLD';
}

/**
 * The inputs as the client's methods are declared to take them: loose (every member optional, values
 * any object), so that the SDK's own input types, of whatever version, are assignable to them.
 */
interface LooseInput {
  TableName?: string | undefined;
  Key?: FencedItem | undefined;
  Item?: FencedItem | undefined;
  UpdateExpression?: string | undefined;
  ConditionExpression?: string | undefined;
  ProjectionExpression?: string | undefined;
  ExpressionAttributeNames?: Record<string, string> | undefined;
  ExpressionAttributeValues?: FencedItem | undefined;
  ReturnValues?: string | undefined;
  ReturnValuesOnConditionCheckFailure?: string | undefined;
  ConsistentRead?: boolean | undefined;
}

/** The calls the helpers make: the aggregated `DynamoDB` client of `@aws-sdk/client-dynamodb` has them as they are. */
export interface FencedDynamoDBClient {
  putItem(input: LooseInput): Promise<{ Attributes?: FencedItem | undefined }>;
  updateItem(input: LooseInput): Promise<{ Attributes?: FencedItem | undefined }>;
  getItem(input: LooseInput): Promise<{ Item?: FencedItem | undefined }>;
}

/** Which item, under which token; your own condition, if any, is ANDed with the fence's. */
export interface FencedItemTarget extends CallerExpressions {
  TableName: string;
  /** The item's primary key (partition key, and sort key if the table has one). */
  Key: FencedItem;
  /** The lock's fencing token: the string, or the lock handle itself (anything with `fencingToken`). */
  fencingToken: FencingTokenSource;
}

/** A write that landed. */
export interface FencedItemResult {
  TableName: string;
  Key: FencedItem;
  /** The token it was written with, now the item's `_fencingToken`. */
  fencingToken: string;
  /** `created` or `updated` (put, update: whether a live item was there); `deleted` or `not_found` (delete: whether an item or a tombstone was there). */
  result: 'created' | 'updated' | 'deleted' | 'not_found';
}

/** A target checked: the table, the key (and how errors name it), the token and the caller's expressions. */
interface Checked {
  table: string;
  key: FencedItem;
  keyText: string;
  fencingToken: string;
  caller: CallerExpressions;
}

/** Whether an item (from a get, a query or a scan) is a tombstone left by fencedDeleteItem: treat it as absent. */
export function isFencedTombstoneItem(item: FencedItem | undefined): boolean {
  return item !== undefined && Object.hasOwn(item, FENCED_TOMBSTONE_FIELD);
}

const isAttributeMap = (value: unknown): value is FencedItem =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((each) => typeof each === 'object' && each !== null);

function checkAttributes(input: InputCheck, value: unknown, field: string, nonEmpty: boolean): void {
  if (!isAttributeMap(value) || (nonEmpty && Object.keys(value).length === 0)) {
    input.add(field, 'type', `must be ${nonEmpty ? 'a non-empty' : 'an'} object of attribute values as DynamoDB takes them ({ name: { S: '...' } })`);
    return;
  }
  for (const name of [FENCED_TOKEN_ATTRIBUTE, FENCED_TOMBSTONE_FIELD]) {
    if (Object.hasOwn(value, name)) input.add(`${field}.${name}`, 'reserved', reservedMessage(name));
  }
}

/** The key's attributes as JSON, names sorted: how errors name the item. */
const keyTextOf = (key: FencedItem): string => JSON.stringify(Object.fromEntries(Object.entries(key).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));

function checkTarget(input: InputCheck, target: FencedItemTarget & { UpdateExpression?: unknown }): Checked {
  input.name(target.TableName, 'TableName');
  checkAttributes(input, target.Key, 'Key', true);
  checkCallerExpressions(input, target);
  const fencingToken = input.token(target.fencingToken, 'fencingToken', TOKEN_LIMITS.aws) ?? '';
  const caller = {
    ConditionExpression: target.ConditionExpression,
    ExpressionAttributeNames: target.ExpressionAttributeNames,
    ExpressionAttributeValues: target.ExpressionAttributeValues,
  };
  return { table: target.TableName, key: target.Key, keyText: isAttributeMap(target.Key) ? keyTextOf(target.Key) : '', fencingToken, caller };
}

/** The condition, names and values of a write (the tombstone's placeholder only where the expression uses it: DynamoDB refuses unused ones). */
function conditional(target: Checked, usesTombstoneName = false): ConditionalWrite {
  return {
    TableName: target.table,
    ConditionExpression: conditionOf(target.caller.ConditionExpression),
    ExpressionAttributeNames: {
      ...target.caller.ExpressionAttributeNames,
      [TOKEN_NAME]: FENCED_TOKEN_ATTRIBUTE,
      ...(usesTombstoneName ? { [TOMBSTONE_NAME]: FENCED_TOMBSTONE_FIELD } : {}),
    },
    ExpressionAttributeValues: { ...target.caller.ExpressionAttributeValues, [TOKEN_VALUE]: { N: target.fencingToken } },
    ReturnValues: 'ALL_OLD',
    ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
  };
}

/** The integer a DynamoDB number of an item's token is (DynamoDB may answer large ones in exponent form, `1E+30`). */
function integerText(number: string): string | undefined {
  if (/^(?:0|[1-9][0-9]*)$/.test(number)) return number;
  const exponent = number.match(/^([1-9])(?:\.([0-9]*))?E\+?([0-9]+)$/i);
  if (!exponent) return undefined;
  const digits = `${exponent[1]}${exponent[2] ?? ''}`;
  const zeros = Number(exponent[3]) - (digits.length - 1);
  return zeros < 0 ? undefined : `${digits}${'0'.repeat(zeros)}`;
}

/** The token an item carries (undefined: no item, or an item no fenced write wrote); an Error when it is not a fencing token. */
function tokenOfItem(item: FencedItem | undefined, target: Checked): string | undefined {
  const attribute = item?.[FENCED_TOKEN_ATTRIBUTE] as { N?: unknown } | undefined;
  if (attribute === undefined) return undefined;
  const token = typeof attribute.N === 'string' ? integerText(attribute.N) : undefined;
  if (token === undefined) {
    throw new Error(
      `DynamoDB table ${target.table}, item ${target.keyText}: its ${FENCED_TOKEN_ATTRIBUTE} is ${JSON.stringify(attribute)}, not a fencing token (a non-negative integer number): something other than the fenced write helpers wrote it`,
    );
  }
  return token;
}

/** The item a refused condition found: in the error (ALL_OLD), else read now, consistently. */
async function itemAtRefusal(client: FencedDynamoDBClient, target: Checked, error: unknown): Promise<FencedItem | undefined> {
  const carried = (error as { Item?: unknown }).Item;
  if (isAttributeMap(carried)) return carried;
  const read = await client.getItem({
    TableName: target.table,
    Key: target.key,
    ConsistentRead: true,
    ProjectionExpression: TOKEN_NAME,
    ExpressionAttributeNames: { [TOKEN_NAME]: FENCED_TOKEN_ATTRIBUTE },
  });
  return read.Item;
}

/**
 * Sends the write: the item's attributes before it (undefined when there was none), or the refusal.
 * A refused condition with a newer token on the item is FencedOutError; without your own condition
 * the fence is the only one that can refuse, so it is FencedOutError too. Else your condition
 * refused: the SDK's ConditionalCheckFailedException, as it came.
 */
async function send(
  client: FencedDynamoDBClient,
  target: Checked,
  write: () => Promise<{ Attributes?: FencedItem | undefined }>,
): Promise<FencedItem | undefined> {
  try {
    return (await write()).Attributes;
  } catch (error) {
    if (awsErrorName(error) !== 'ConditionalCheckFailedException') throw error;
    const current = tokenOfItem(await itemAtRefusal(client, target, error), target);
    const newer = current !== undefined && compareFencingTokens(current, target.fencingToken) > 0;
    if (!newer && target.caller.ConditionExpression !== undefined) throw error;
    throw new FencedOutError(
      { sink: 'dynamodb', index: target.table, id: target.keyText, fencingToken: target.fencingToken, currentToken: newer ? current : undefined },
      { cause: error },
    );
  }
}

const landed = (target: Checked, result: FencedItemResult['result']): FencedItemResult => ({
  TableName: target.table,
  Key: target.key,
  fencingToken: target.fencingToken,
  result,
});

const tokenAttribute = (target: Checked): FencedItem => ({ [FENCED_TOKEN_ATTRIBUTE]: { N: target.fencingToken } });

/**
 * Writes the whole item (`Item`, with `Key`'s attributes) under the token, replacing what is there, a
 * tombstone included. FencedOutError when the item carries a newer token.
 */
export async function fencedPutItem(client: FencedDynamoDBClient, write: FencedItemTarget & { Item: FencedItem }): Promise<FencedItemResult> {
  const input = new InputCheck();
  const target = checkTarget(input, write);
  checkAttributes(input, write.Item, 'Item', false);
  if (isAttributeMap(write.Item) && isAttributeMap(write.Key)) {
    for (const [name, value] of Object.entries(write.Key)) {
      if (Object.hasOwn(write.Item, name) && JSON.stringify(write.Item[name]) !== JSON.stringify(value)) {
        input.add(`Item.${name}`, 'key_mismatch', `differs from Key.${name}: the item is named by Key (Item may leave the key out)`);
      }
    }
  }
  input.throwIfAny();
  const item = { ...write.Item, ...target.key, ...tokenAttribute(target) };
  const before = await send(client, target, () => client.putItem({ ...conditional(target), Item: item }));
  return landed(target, before === undefined || isFencedTombstoneItem(before) ? 'created' : 'updated');
}

/**
 * Applies your `UpdateExpression` (with your names and values) under the token, in one UpdateItem
 * that also sets the token and removes a tombstone's mark. As UpdateItem does, it creates the item
 * when there is none; a tombstone counts as none. To require a live item, add your own condition on
 * a non-key attribute every live item has (`attribute_exists(#status)`): a tombstone has only the
 * key, the token and the mark. Your expressions may not name `_fencingToken` or `_fencedDeletedAt`.
 * FencedOutError when the item carries a newer token.
 */
export async function fencedUpdateItem(client: FencedDynamoDBClient, write: FencedItemTarget & { UpdateExpression: string }): Promise<FencedItemResult> {
  const input = new InputCheck();
  const target = checkTarget(input, write);
  if (typeof write.UpdateExpression !== 'string' || write.UpdateExpression.trim() === '')
    input.add('UpdateExpression', 'required', 'must be a non-empty string');
  input.throwIfAny();
  const before = await send(client, target, () =>
    client.updateItem({ ...conditional(target, true), Key: target.key, UpdateExpression: fencedUpdateExpression(write.UpdateExpression) }),
  );
  return landed(target, before === undefined || isFencedTombstoneItem(before) ? 'created' : 'updated');
}

/**
 * Deletes the item under the token by putting a tombstone in its place: the key, the token and
 * `_fencedDeletedAt` (ISO time), so that an older token stays refused however late it comes (a real
 * delete would leave nothing to compare with). FencedOutError when the item carries a newer token.
 * `result`: `deleted` when an item or a tombstone was there, `not_found` otherwise (the tombstone is
 * written either way).
 */
export async function fencedDeleteItem(client: FencedDynamoDBClient, target: FencedItemTarget): Promise<FencedItemResult> {
  const input = new InputCheck();
  const checked = checkTarget(input, target);
  input.throwIfAny();
  const tombstone = { ...checked.key, ...tokenAttribute(checked), [FENCED_TOMBSTONE_FIELD]: { S: new Date().toISOString() } };
  const before = await send(client, checked, () => client.putItem({ ...conditional(checked), Item: tombstone }));
  return landed(checked, before === undefined ? 'not_found' : 'deleted');
}

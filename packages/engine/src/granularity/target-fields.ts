/**
 * What the engine knows of each target field, whichever granularity names its targets with it: how
 * a value of unknown shape (a lease token's) reads as the field, and which value names a single key.
 */
import type { RawTargetFields, TargetField } from './rules.js';

interface FieldReading {
  /** The fields that `value` names, if it has this field's shape. */
  read(value: unknown): RawTargetFields | undefined;
  /** The fields that name one lock document by its key (a queued waiter's single-key target). */
  ofKey(key: string): RawTargetFields;
}

const isString = (value: unknown): value is string => typeof value === 'string';

export const TARGET_FIELDS: { readonly [F in TargetField]: FieldReading } = {
  ids: { read: (value) => (Array.isArray(value) && value.every(isString) ? { ids: value } : undefined), ofKey: (key) => ({ ids: [key] }) },
  path: { read: (value) => (isString(value) ? { path: value } : undefined), ofKey: (key) => ({ path: key }) },
};

/** The fields, in the order requests check them. */
export const TARGET_FIELD_NAMES = Object.keys(TARGET_FIELDS) as TargetField[];

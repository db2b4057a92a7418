/**
 * A partial update's merge, done on the client (the servers' update API needs scripting for a
 * condition on the token, and Elastic's minimal distribution has none): as Elasticsearch merges an
 * update's `doc`, objects merge key by key, anything else (arrays, null, scalars) replaces. A key
 * whose value is `undefined` is left as it is (JSON has no undefined: the server never sees it).
 */

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function mergeDocument(base: Record<string, unknown>, patch: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(patch)) {
    if (value === undefined) continue;
    const before = merged[key];
    const next = isObject(value) && isObject(before) && Object.hasOwn(merged, key) ? mergeDocument(before, value) : value;
    // defineProperty: a key named __proto__ (JSON.parse makes it an own key) stays a key.
    Object.defineProperty(merged, key, { value: next, enumerable: true, writable: true, configurable: true });
  }
  return merged;
}

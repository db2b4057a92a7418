/** Acquire requests by granularity, for tests that name many of them. */
export const docs = (namespace: string, ids: string[], owner: string, extra: Record<string, unknown> = {}) => ({
  namespace,
  granularity: 'document' as const,
  ids,
  owner,
  ...extra,
});

export const tree = (namespace: string, path: string, owner: string, extra: Record<string, unknown> = {}) => ({
  namespace,
  granularity: 'tree' as const,
  path,
  owner,
  ...extra,
});

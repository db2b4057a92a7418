/**
 * The audit record of an operator's revoke or drain: a document of its own in the lock index, written
 * before the change it records (so no revoke goes unrecorded; a record whose change then failed
 * records the attempt). The sweeper deletes it after settings.admin.auditRetentionMs.
 */
import { randomUUID } from 'node:crypto';
import { auditDocId } from '../doc-id.js';
import { StoreUnavailableError } from '../errors.js';
import { describeTarget } from '../granularity/index.js';
import type { RevocationRecord } from '../model.js';
import type { AdminRequest } from '../requests.js';
import type { EngineContext } from './context.js';

export async function recordAudit(context: EngineContext, action: RevocationRecord['action'], request: AdminRequest): Promise<RevocationRecord> {
  const at = context.settings.now();
  const record: RevocationRecord = {
    action,
    target: request.target,
    by: request.by,
    reason: request.reason,
    at,
    keepUntil: at + context.settings.admin.auditRetentionMs,
  };
  const docId = auditDocId(request.target.namespace, `${at}-${randomUUID()}`);
  const [outcome] = await context.store.write([
    {
      kind: 'create',
      docId,
      body: {
        namespace: request.target.namespace,
        granularity: request.target.granularity,
        key: docId,
        lockId: docId,
        holders: [],
        minExpiresAt: record.keepUntil,
        updatedAt: at,
        revocation: record,
      },
    },
  ]);
  if (!outcome?.ok) {
    if (outcome?.reason === 'error') throw outcome.error;
    throw new StoreUnavailableError(
      {
        operation: `record the ${action}`,
      },
      `the audit record of the ${action} of ${describeTarget(request.target)} was not written (${outcome?.reason ?? 'no answer'}); nothing was changed`,
    );
  }
  return record;
}

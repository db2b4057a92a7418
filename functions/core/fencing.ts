/**
 * Fencing tokens come from Elasticsearch itself: the (_primary_term, _seq_no) of the write that
 * granted the lease. With one primary shard that pair only grows, across every key, release,
 * takeover and primary promotion, so a later grant on a key always carries a larger number.
 * It resets only if the lock index is deleted and created again.
 */
const SEQ_NO_SPAN = 1e12;
const MAX_PRIMARY_TERM = Math.floor(Number.MAX_SAFE_INTEGER / SEQ_NO_SPAN);

export function fencingToken(primaryTerm: number, seqNo: number): number {
  if (!Number.isInteger(primaryTerm) || primaryTerm < 1 || primaryTerm > MAX_PRIMARY_TERM) {
    throw new RangeError(`primary term ${primaryTerm} is outside the encodable range 1..${MAX_PRIMARY_TERM}`);
  }
  if (!Number.isInteger(seqNo) || seqNo < 0 || seqNo >= SEQ_NO_SPAN) {
    throw new RangeError(`sequence number ${seqNo} is outside the encodable range 0..${SEQ_NO_SPAN - 1}`);
  }
  return primaryTerm * SEQ_NO_SPAN + seqNo;
}

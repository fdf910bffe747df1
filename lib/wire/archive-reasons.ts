/** Why a message ended in the archive queue. Machine-readable; also sent as its own attribute. */
export const ARCHIVE_REASONS = [
  'exhausted',
  'timed-out',
  'unrecoverable',
  'invalid-payload',
  'malformed',
  'unknown-task',
  'id-conflict',
  'dependency-failed',
  'bad-dependency',
  'no-subscriber',
  'bad-payload-ref',
  'expired',
] as const;
export type ArchiveReason = (typeof ARCHIVE_REASONS)[number];

/**
 * Reasons for messages that never ran as a job: they could not be decoded, named a task this
 * version does not have, carried the id of another job (another task or payload), were an event
 * no task on their queue subscribes to, or carried a claim check this version may not or cannot
 * read (another bucket or prefix, a missing or changed object). Their job record, if any, is their
 * own, keyed by their SQS message id.
 */
export const REJECTION_REASONS: readonly ArchiveReason[] = ['malformed', 'unknown-task', 'id-conflict', 'no-subscriber', 'bad-payload-ref'];

export function isRejection(reason: ArchiveReason): boolean {
  return REJECTION_REASONS.includes(reason);
}

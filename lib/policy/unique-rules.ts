/**
 * The `unique` rule's decisions, with no I/O: whether a job that found its task's key held joins
 * the holder, takes the key over, or is no duplicate of it. lib/settle/unique-holds.ts asks the
 * jobs table and acts on them.
 */
import type { JobRecord, JobState, UniqueHold, UniqueTake } from '../track/job-record';

/**
 * How long a holder with no job record yet still counts as live: the time between its publisher
 * taking the key and its job's first record (the send and the `queued` write after it). A holder
 * with no record after this is a publish that never finished, and the key is taken over.
 */
export const UNIQUE_RECORD_GRACE_MS = 5 * 60_000;

export type HoldVerdict = 'join' | 'take-over' | 'not-a-duplicate';

/**
 * What a job (`take`) does about the hold it found: `join` it while its holder is in one of the
 * `states` (or, with no record yet, took the key less than {@link UNIQUE_RECORD_GRACE_MS} ago);
 * `take-over` a holder that has ended, or never recorded; `not-a-duplicate` when the holder was
 * published after this job's own window had ended (this job waited long in its queue, and the key
 * was free again by the time the holder came).
 */
export function holdVerdict(
  take: Pick<UniqueTake, 'from' | 'until' | 'now'>,
  hold: UniqueHold,
  holder: Pick<JobRecord, 'state'> | undefined,
  states: readonly JobState[],
): HoldVerdict {
  if (take.until <= hold.from) return 'not-a-duplicate';
  if (holder) return states.includes(holder.state) ? 'join' : 'take-over';
  return take.now - hold.takenAt < UNIQUE_RECORD_GRACE_MS ? 'join' : 'take-over';
}

import type { Random } from '../random';
import type { TaskOutcome } from '../run/executor-types';
import { retryDelaySeconds } from '../tasks/backoff';
import type { TaskDefinition } from '../tasks/task';
import type { ArchiveReason } from '../wire/archive-reasons';

/** What an attempt's outcome means for its job: done, another attempt after a delay, the archive, or cancelled. */
export type Verdict =
  | { readonly kind: 'succeeded' }
  | { readonly kind: 'retry'; readonly seconds: number }
  | { readonly kind: 'archive'; readonly reason: ArchiveReason }
  | { readonly kind: 'cancelled' };

/**
 * The table from an attempt's outcome to its job's next step. Pure: the backoff's jitter comes from
 * `random`.
 *
 * | outcome                        | attempts left | verdict                        |
 * | ------------------------------ | ------------- | ------------------------------ |
 * | cancelled (an operator's cancel) | any         | cancelled (no retry)           |
 * | succeeded                      | any           | succeeded                      |
 * | failed: unrecoverable          | any           | archive `unrecoverable`        |
 * | failed: invalid payload        | any           | archive `invalid-payload`      |
 * | failed (error, crash), timed out | yes         | retry after the backoff        |
 * | failed (error, crash)          | no            | archive `exhausted`            |
 * | timed out                      | no            | archive `timed-out`            |
 */
export function decide(
  outcome: TaskOutcome,
  attempt: number,
  def: Pick<TaskDefinition, 'maxRetries' | 'backoff'>,
  random: Random,
): Verdict {
  if (outcome.status === 'cancelled') return { kind: 'cancelled' };
  if (outcome.status === 'succeeded') return { kind: 'succeeded' };
  if (outcome.status === 'failed' && outcome.kind === 'unrecoverable') return { kind: 'archive', reason: 'unrecoverable' };
  if (outcome.status === 'failed' && outcome.kind === 'invalid-payload') return { kind: 'archive', reason: 'invalid-payload' };
  if (attempt < def.maxRetries + 1) return { kind: 'retry', seconds: retryDelaySeconds(attempt, def.backoff, random) };
  return { kind: 'archive', reason: outcome.status === 'timed-out' ? 'timed-out' : 'exhausted' };
}

import type { RateLimitScope } from '../errors';
import { MAX_VISIBILITY_SECONDS } from '../layout/sqs-limits';
import type { Random } from '../random';
import type { StepPark, TaskOutcome } from '../run/executor-types';
import { retryDelaySeconds } from '../tasks/backoff';
import type { TaskDefinition } from '../tasks/task';
import type { ArchiveReason } from '../wire/archive-reasons';

/** What an attempt's outcome means for its job: done, another attempt after a delay, the archive, or cancelled. */
export type Verdict =
  | { readonly kind: 'succeeded' }
  | { readonly kind: 'retry'; readonly seconds: number }
  /**
   * The body asked (RetryAfterError) to run again in `seconds`: no attempt used. `rateLimited`: it
   * was a RateLimitedError, whose scope the dispatcher paused for as long.
   */
  | { readonly kind: 'retry-after'; readonly seconds: number; readonly rateLimited?: RateLimitScope }
  | { readonly kind: 'archive'; readonly reason: ArchiveReason }
  | { readonly kind: 'cancelled' }
  /** The body parked its job at a step (a sleep, a token wait, a continuation): no attempt used. */
  | { readonly kind: 'park'; readonly park: StepPark };

/**
 * The table from an attempt's outcome to its job's next step. Pure: the backoff's jitter comes from
 * `random`.
 *
 * | outcome                        | attempts left | verdict                        |
 * | ------------------------------ | ------------- | ------------------------------ |
 * | cancelled (an operator's cancel) | any         | cancelled (no retry)           |
 * | succeeded                      | any           | succeeded                      |
 * | parked at a step               | any           | park (sleep, wait, continue)   |
 * | failed: unrecoverable          | any           | archive `unrecoverable`        |
 * | failed: invalid payload        | any           | archive `invalid-payload`      |
 * | failed: retry-after or rate-limited, counted¹ | any | retry-after the asked time |
 * | failed: retry-after, not counted | yes         | retry after the asked time     |
 * | failed (error, crash), timed out | yes         | retry after the backoff        |
 * | failed (error, crash)          | no            | archive `exhausted`            |
 * | timed out                      | no            | archive `timed-out`            |
 *
 * Attempts left counts attempts used: claims (`attempt`) less the job's retry-after re-runs so far.
 * ¹ Counted: the job's record counts its re-runs (`retryAfters` given, tracking `full`) and fewer
 * than the task's `retry.maxRetryAfters` were taken; past that a RetryAfterError is an ordinary
 * failure (the backoff, an attempt). Not counted (no record): a re-run at the asked time, an attempt.
 */
export function decide(
  outcome: TaskOutcome,
  attempt: number,
  def: Pick<TaskDefinition, 'maxRetries' | 'backoff' | 'retry'>,
  random: Random,
  retryAfters?: number,
): Verdict {
  if (outcome.status === 'cancelled') return { kind: 'cancelled' };
  if (outcome.status === 'succeeded') return { kind: 'succeeded' };
  if (outcome.status === 'parked') return { kind: 'park', park: outcome.park };
  if (outcome.status === 'failed' && outcome.kind === 'unrecoverable') return { kind: 'archive', reason: 'unrecoverable' };
  if (outcome.status === 'failed' && outcome.kind === 'invalid-payload') return { kind: 'archive', reason: 'invalid-payload' };
  const asks = outcome.status === 'failed' && (outcome.kind === 'retry-after' || outcome.kind === 'rate-limited');
  const asked = asks ? retryAfterSeconds(outcome.retryAfterMs) : undefined;
  if (asked !== undefined && retryAfters !== undefined && retryAfters < def.retry.maxRetryAfters) {
    const scope = outcome.status === 'failed' && outcome.kind === 'rate-limited' ? (outcome.pauseScope ?? 'task') : undefined;
    return { kind: 'retry-after', seconds: asked, ...(scope ? { rateLimited: scope } : {}) };
  }
  const used = attempt - (retryAfters ?? 0);
  if (used < def.maxRetries + 1) return { kind: 'retry', seconds: asked ?? retryDelaySeconds(used, def.backoff, random) };
  return { kind: 'archive', reason: outcome.status === 'timed-out' ? 'timed-out' : 'exhausted' };
}

/** A RetryAfterError's wait as a visibility: whole seconds, rounded up, within SQS's 12 hours. */
export function retryAfterSeconds(ms: number | undefined): number {
  return Math.min(MAX_VISIBILITY_SECONDS, Math.ceil(Math.max(0, ms ?? 0) / 1000));
}

/**
 * What an operator does to one job from its page (the dashboard's job page): retry it from the
 * archive, by the same replay as `taskworker archive replay` (lib/operate/operator.ts).
 */
import type { RetryResult } from './answers';
import { type OperatorContext, replayArchived } from './operator';

export type { RetryResult } from './answers';

/**
 * Retries an archived job: its archived message goes back to its queue and the job to `queued` with
 * its attempts reset — `replayArchived` for this one job, so it costs what the archive walk costs
 * (the archive's messages are received and made visible again up to the job's).
 *
 * @example
 * const result = await retryJob(ctx, 'charge-42');
 * if (result.outcome === 'retried') console.log(`back in ${result.queue}`);
 */
export async function retryJob(ctx: OperatorContext, jobId: string): Promise<RetryResult> {
  const record = await ctx.jobs.get(jobId);
  if (!record) return { outcome: 'unknown' };
  if (record.state !== 'archived') return { outcome: 'not-archived', record };
  const replay = await replayArchived(ctx, { jobId }, 1);
  const skipped = replay.skipped[0];
  if (replay.replayed === 0) return skipped ? { outcome: 'skipped', why: skipped.why, record } : { outcome: 'not-in-archive', record };
  return { outcome: 'retried', queue: record.queue, record: (await ctx.jobs.get(jobId)) ?? record };
}

/**
 * What an operator does to one job from its page (the dashboard's job page): retry it from the
 * archive, by the same replay as `taskworker archive replay` (lib/operate/archive.ts); run a
 * delayed job now, by the sweep's own path (lib/settle/parked-sends.ts).
 */
import { DUE_GATED_STATES } from '../policy/job-rules';
import { silentLogger } from '../ports';
import { sendParked } from '../settle/parked-sends';
import { envelopeWithout } from '../wire/envelope';
import type { RetryResult, RunNowResult } from './answers';
import { replayArchived } from './archive';
import type { OperatorContext } from './operator-context';

export type { RetryResult, RunNowResult } from './answers';

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

/**
 * Runs a job parked until later now: its record is made due now with its body's `runAt` left out
 * (one conditional write, so a sweep that sends it meanwhile sends it due), then the sweep's own
 * step sends it — lease, send, hand over — so two senders never both send it and a crash between
 * leaves it parked and due for the next sweep. A job published with a delay of 15 minutes or less
 * (`announced`) cannot be: its message waits in SQS, which cannot bring a delayed message forward.
 * A job its body parked at a step runs now too: a sleep ends early, a token wait as if timed out (`null`).
 *
 * @example
 * const result = await runJobNow(ctx, 'report-2026-12');
 * if (result.outcome === 'announced') console.log(`runs at ${new Date(result.record.runAt ?? 0).toISOString()}`);
 */
export async function runJobNow(ctx: OperatorContext, jobId: string): Promise<RunNowResult> {
  const record = await ctx.jobs.get(jobId);
  if (!record) return { outcome: 'unknown' };
  if (!DUE_GATED_STATES.includes(record.state)) return { outcome: 'not-scheduled', record };
  if (record.announced) return { outcome: 'announced', record };
  const parked = await ctx.jobs.parkedJob(jobId);
  const now = ctx.clock.now();
  const due = parked && { ...parked, runAt: now, body: envelopeWithout(parked.body, 'runAt') };
  if (!parked || !due || !(await ctx.jobs.bringForward(parked, due.body, now))) {
    // Not parked as read: a sweep holds it (its due time is near), or it moved on.
    const current = (await ctx.jobs.get(jobId)) ?? record;
    if (!DUE_GATED_STATES.includes(current.state)) return { outcome: 'not-scheduled', record: current };
    return current.announced ? { outcome: 'announced', record: current } : { outcome: 'sweeping', record: current };
  }
  const sent = await sendParked({ jobs: ctx.jobs, queues: ctx.queues, urls: ctx.urls, clock: ctx.clock, logger: silentLogger }, [due], now);
  const after = (await ctx.jobs.get(jobId)) ?? record;
  return sent.sent === 1 ? { outcome: 'sent', queue: parked.queue, record: after } : { outcome: 'due', record: after };
}

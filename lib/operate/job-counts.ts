/**
 * How many jobs each state holds, for the dashboard's tabs (as bull-board and Flower open with),
 * each counted from what answers it without a scan of the jobs table:
 * - `retrying`, `scheduled`, `waiting`, `archived`, `cancelled`: the sparse per-queue index, read up
 *   to a cap (DynamoDB bills a count by the items it reads, so the cap bounds the cost);
 * - `running`: the live workers' last beats (lib/operate/running.ts);
 * - `queued`: SQS's approximate number of visible messages (untracked queues' included);
 * - `succeeded`: today's counter in the stats table (a record is not indexed when it succeeds, so
 *   the count of every succeeded job would be a scan).
 */

import { INDEXED_STATES } from '../policy/job-rules';
import { utcDay } from '../policy/stat-sums';
import { JOB_STATES, type JobState } from '../track/job-record';
import type { JobCounts, StateCount } from './answers';
import type { OperatorContext } from './operator-context';
import { runningJobs } from './running';

export type { CountSource, JobCounts, StateCount } from './answers';

/** The most jobs an `index` count reads per queue and state. */
export const COUNT_CAP = 200;

/**
 * Every job state's count on `queues`, in the order of `JOB_STATES`.
 *
 * @example
 * const { states } = await countJobStates(ctx, ['default']);
 */
export async function countJobStates(ctx: OperatorContext, queues: readonly string[], cap = COUNT_CAP): Promise<JobCounts> {
  const day = utcDay(ctx.clock.now());
  const indexed = (state: JobState) => async (): Promise<StateCount> => {
    // Per queue, so each queue's share stops at the cap (the list is newest first across them).
    const counts = await Promise.all(queues.map(async (queue) => (await ctx.jobs.list({ state, queues: [queue], limit: cap + 1 })).length));
    return { state, count: counts.reduce((n, c) => n + Math.min(c, cap), 0), atLeast: counts.some((c) => c > cap), source: 'index' };
  };
  // Every state (tsc holds the table to JOB_STATES).
  const counters: Record<JobState, () => Promise<StateCount>> = {
    queued: async () => {
      const depths = await Promise.all(queues.map((q) => ctx.queues.depth(ctx.urls.queues[q] as string)));
      return { state: 'queued', count: depths.reduce((n, d) => n + d.visible, 0), atLeast: false, source: 'queue' };
    },
    running: async () => {
      if (!ctx.workers) return { state: 'running', count: null, atLeast: false, source: 'workers' };
      const running = await runningJobs({ workers: ctx.workers, jobs: ctx.jobs, clock: ctx.clock }, { queues });
      return { state: 'running', count: running.jobs.length, atLeast: running.uncarried > 0, source: 'workers' };
    },
    succeeded: async () => {
      const days = await Promise.all(queues.map((q) => ctx.stats.get(q, day)));
      return { state: 'succeeded', count: days.reduce((n, d) => n + (d?.counters.succeeded ?? 0), 0), atLeast: false, source: 'today' };
    },
    retrying: indexed('retrying'),
    archived: indexed('archived'),
    scheduled: indexed('scheduled'),
    cancelled: indexed('cancelled'),
    waiting: indexed('waiting'),
    deduplicated: indexed('deduplicated'),
    sleeping: indexed('sleeping'),
    'waiting-token': indexed('waiting-token'),
    'waiting-event': indexed('waiting-event'),
    'waiting-key': indexed('waiting-key'),
  };
  // A state the index holds is counted from it, whatever the table above says.
  const states = await Promise.all(JOB_STATES.map((state) => (INDEXED_STATES.includes(state) ? indexed(state) : counters[state])()));
  return { day, cap, states };
}

/**
 * Running jobs without a scan of the jobs table and without a write of their own: the jobs the live
 * dispatcher invocations held at their last beat (the worker registry, beaten every 15 s), each
 * confirmed running against its record now. A job started since its worker's last beat shows at the
 * next one; a beat names only the ids that fit its 1 KB item (`held` counts the rest).
 *
 * Why not an index: a `running` (or `succeeded`) entry in the sparse per-queue index would be an
 * index write on every claim and another on every completion — on every job's hot path — where
 * today the common path (claimed, then succeeded) writes none.
 */
import type { Clock } from '../clock';
import type { JobRecord } from '../track/job-record';
import type { JobReader } from '../track/job-stores';
import { type WorkerRegistry, workerStatus } from '../track/worker-registry';

export interface RunningJobs {
  /** Confirmed running now, on the queues asked for, newest start first. */
  readonly jobs: readonly JobRecord[];
  /** Jobs the live workers said they held beyond the ids their beats carried: not listed, their queues unknown. */
  readonly uncarried: number;
}

/**
 * The running jobs of `queues` (and `task`) the live workers hold, read with one registry listing and
 * one batched read of the jobs they name.
 *
 * @example
 * const { jobs, uncarried } = await runningJobs({ workers, jobs: store, clock: systemClock }, { queues: ['default'] });
 */
export async function runningJobs(
  ctx: { readonly workers: WorkerRegistry; readonly jobs: JobReader; readonly clock: Clock },
  filter: { readonly queues: readonly string[]; readonly task?: string },
): Promise<RunningJobs> {
  const now = ctx.clock.now();
  const live = (await ctx.workers.list()).filter((w) => workerStatus(w, now) === 'live');
  const ids = [...new Set(live.flatMap((w) => w.jobs))];
  const records = ids.length > 0 ? await ctx.jobs.getMany(ids) : [];
  const started = (r: JobRecord) => r.lastStartedAt ?? r.updatedAt;
  return {
    jobs: records
      .filter((r) => r.state === 'running' && filter.queues.includes(r.queue) && (filter.task === undefined || r.task === filter.task))
      .sort((a, b) => started(b) - started(a)),
    uncarried: live.reduce((n, w) => n + Math.max(0, w.held - w.jobs.length), 0),
  };
}

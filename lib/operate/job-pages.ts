/** `jobs list` and the dashboard's job lists: jobs by state, a page at a time, with a cursor. */
import { TaskworkerError } from '../errors';
import { listedFromIndex, listedSucceeded } from '../policy/job-rules';
import type { JobRecord, JobState } from '../track/job-record';
import type { OperatorContext } from './operator-context';
import { runningJobs } from './running';

export interface JobsPageQuery {
  readonly state: JobState;
  readonly queues: readonly string[];
  readonly task?: string;
  readonly limit: number;
  /** From the previous page's `next`. */
  readonly cursor?: string;
}

export interface JobsPage {
  readonly jobs: readonly JobRecord[];
  /** Where the next page starts; absent on the last page. */
  readonly next?: string;
  /**
   * The state has no index: the jobs are the first a table scan found (sorted, but not the newest
   * of the table), and there are no further pages.
   */
  readonly scanned?: boolean;
  /**
   * Running jobs: those the live workers held at their last beat, confirmed running now, newest
   * start first, without a scan (lib/operate/running.ts); `running` of them in all (the page shows
   * the newest `limit`), and `uncarried` more the beats had no room to name. No further pages.
   */
  readonly fromWorkers?: { readonly running: number; readonly uncarried: number };
}

/** What a page cursor carries: the oldest update time shown, and the jobs shown with exactly that time. */
interface PageMark {
  readonly at: number;
  readonly ids: readonly string[];
}

/** Thrown for a page cursor this server did not make. */
export class BadCursorError extends TaskworkerError {
  constructor(cursor: string) {
    super(`cursor ${JSON.stringify(cursor.slice(0, 40))} is not one this list handed out`);
    this.name = 'BadCursorError';
  }
}

function readCursor(cursor: string): PageMark {
  try {
    const mark = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as PageMark;
    if (Number.isFinite(mark.at) && Array.isArray(mark.ids) && mark.ids.every((id) => typeof id === 'string')) return mark;
  } catch {
    // reported below
  }
  throw new BadCursorError(cursor);
}

/**
 * One page of jobs in a state, newest update first. A page ends at an update time and the next
 * starts at that same time minus the jobs already shown, so jobs updated in the same millisecond
 * are neither skipped nor shown twice. Running jobs come from the live workers' beats, newest start
 * first ({@link JobsPage.fromWorkers}); the other states without an index (queued, succeeded on a
 * queue that does not list them, and running without a worker registry) give one page of what a
 * scan found first ({@link JobsPage.scanned}).
 */
export async function listJobsPage(ctx: OperatorContext, q: JobsPageQuery): Promise<JobsPage> {
  if (q.state === 'running' && ctx.workers) {
    const running = await runningJobs({ workers: ctx.workers, jobs: ctx.jobs, clock: ctx.clock }, q);
    return { jobs: running.jobs.slice(0, q.limit), fromWorkers: { running: running.jobs.length, uncarried: running.uncarried } };
  }
  if (!listedFromIndex(listedSucceeded(ctx.config.queues), q.state, q.queues)) {
    const jobs = await ctx.jobs.list({
      state: q.state,
      queues: q.queues,
      ...(q.task !== undefined ? { task: q.task } : {}),
      limit: q.limit,
    });
    return { jobs, scanned: true };
  }
  const mark = q.cursor === undefined ? undefined : readCursor(q.cursor);
  const shown = new Set(mark?.ids ?? []);
  const found = await ctx.jobs.list({
    state: q.state,
    queues: q.queues,
    ...(q.task !== undefined ? { task: q.task } : {}),
    limit: q.limit + shown.size + 1,
    ...(mark ? { updatedAtMost: mark.at } : {}),
  });
  const fresh = found.filter((job) => !shown.has(job.jobId));
  const jobs = fresh.slice(0, q.limit);
  const last = jobs.at(-1);
  if (fresh.length <= q.limit || !last) return { jobs };
  const sameTime = jobs.filter((job) => job.updatedAt === last.updatedAt).map((job) => job.jobId);
  const ids = last.updatedAt === mark?.at ? [...shown, ...sameTime] : sameTime;
  return { jobs, next: Buffer.from(JSON.stringify({ at: last.updatedAt, ids } satisfies PageMark)).toString('base64url') };
}

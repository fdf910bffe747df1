/**
 * Operations on many jobs at once (`taskworker jobs bulk`): cancel the jobs a filter selects that
 * have not ended (queued, retrying, parked, waiting; running ones only when asked, as a stop
 * request), replay the archived messages it selects to their queues, or delete them from the
 * archive. A dry run counts what a run would act on and shows a sample, acting on nothing; a run
 * acts at most `ratePerSecond` times a second, says how far it got as it goes, and is logged (who,
 * when, the filter, the counts) in the version's operations log. Resumable by running it again:
 * every action takes its job out of what the filter selects (cancelled jobs are no longer in an
 * open state; a replayed or deleted message is no longer in the archive), so a second run picks up
 * what the first did not reach.
 */
import { hostname, userInfo } from 'node:os';
import type { Clock } from '../clock';
import { TaskworkerError } from '../errors';
import type { JobRecord } from '../track/job-record';
import type { OperationEntry } from '../track/operation-log';
import type { ArchiveRecord } from '../wire/archive-record';
import { type BulkAction, type BulkFilter, type BulkItem, type BulkResult, CANCELLABLE_STATES, OPEN_STATES } from './answers';
import { type ArchiveFilter, countArchived, deleteArchived, listArchived, replayArchived } from './archive';
import { cancelJob, flowDepsOf, listTaggedPage } from './flow-commands';
import type { OperatorContext } from './operator-context';

export { type BulkAction, type BulkFilter, type BulkItem, type BulkResult, CANCELLABLE_STATES, OPEN_STATES } from './answers';

export const BULK_ACTIONS: readonly BulkAction[] = ['cancel', 'replay', 'delete'];

export interface BulkOptions {
  readonly dryRun?: boolean;
  /** At most this many actions a second. @defaultValue unlimited */
  readonly ratePerSecond?: number;
  /** At most this many actions (or, dry, counted). @defaultValue {@link BULK_LIMIT} */
  readonly limit?: number;
  /** Who asks, for the operations log (a user or role name). */
  readonly who: string;
  /** Called after each action with the count done so far and the count the run found to act on (when known). */
  readonly onProgress?: (done: number, of: number | undefined) => void;
}

/** Who runs an operation, for the operations log: TASKWORKER_OPERATOR, else the local user at this host. */
export function operatorName(): string {
  return process.env.TASKWORKER_OPERATOR ?? `${userInfo().username}@${hostname()}`;
}

/** The most a bulk operation acts on (or counts) unless asked for fewer. */
export const BULK_LIMIT = 100_000;
const SAMPLE = 5;

/** A bulk request that cannot be run as asked; names the field. */
export class BulkRequestError extends TaskworkerError {
  readonly field: string;
  constructor(field: string, value: unknown, expected: string) {
    super(`${field} ${JSON.stringify(value)}: expected ${expected}`);
    this.name = 'BulkRequestError';
    this.field = field;
  }
}

/** Checks that `filter` fits `action`: cancel reads job records, replay and delete the archive. */
export function checkBulkFilter(action: BulkAction, filter: BulkFilter, queues: readonly string[]): void {
  if (!BULK_ACTIONS.includes(action)) throw new BulkRequestError('action', action, BULK_ACTIONS.join(', '));
  if (filter.queue !== undefined && !queues.includes(filter.queue))
    throw new BulkRequestError('--queue', filter.queue, `one of ${queues.join(', ')}`);
  if (filter.since !== undefined && filter.until !== undefined && filter.since >= filter.until)
    throw new BulkRequestError(
      '--since',
      new Date(filter.since).toISOString(),
      `a time before --until ${new Date(filter.until).toISOString()}`,
    );
  if (action === 'cancel') {
    if (filter.reason !== undefined)
      throw new BulkRequestError('--reason', filter.reason, 'no --reason for cancel (archived jobs have ended)');
    if (filter.state !== undefined && !CANCELLABLE_STATES.includes(filter.state))
      throw new BulkRequestError('--state', filter.state, `one of ${CANCELLABLE_STATES.join(', ')}`);
  } else {
    for (const [field, value] of [
      ['--state', filter.state],
      ['--tag', filter.tag],
      ['--key', filter.key],
    ] as const) {
      if (value !== undefined)
        throw new BulkRequestError(
          field,
          value,
          `no ${field} for ${action} (it selects archived messages by --reason, --task, --queue and time)`,
        );
    }
  }
}

/**
 * Runs (or, `dryRun`, counts) one bulk operation; a run is logged in `ctx.operations`. The same
 * filter counts the same messages a dashboard archive filter counts (both walk the archive with
 * {@link ArchiveFilter}).
 */
export async function runBulk(ctx: OperatorContext, action: BulkAction, filter: BulkFilter, options: BulkOptions): Promise<BulkResult> {
  checkBulkFilter(
    action,
    filter,
    ctx.config.queues.map((q) => q.name),
  );
  const limit = options.limit ?? BULK_LIMIT;
  if (!Number.isInteger(limit) || limit < 1) throw new BulkRequestError('--limit', limit, 'a whole number of at least 1');
  if (options.ratePerSecond !== undefined && !(options.ratePerSecond > 0))
    throw new BulkRequestError('--rate', options.ratePerSecond, 'a number of actions a second above 0');
  const startedAt = ctx.clock.now();
  const dryRun = options.dryRun === true;
  const outcome =
    action === 'cancel'
      ? await bulkCancel(ctx, filter, limit, dryRun, options)
      : await bulkArchive(ctx, action, filter, limit, dryRun, options);
  const result: BulkResult = { action, filter, dryRun, ...outcome, startedAt, endedAt: ctx.clock.now() };
  if (!dryRun && ctx.operations) {
    const entry: OperationEntry = {
      at: startedAt,
      who: options.who,
      action: `bulk ${action}`,
      filter: { ...filter },
      matched: result.matched,
      done: result.done,
      skipped: result.skipped.length,
      ...(options.ratePerSecond !== undefined ? { ratePerSecond: options.ratePerSecond } : {}),
      seconds: Math.round((result.endedAt - startedAt) / 100) / 10,
    };
    await ctx.operations.record(entry);
  }
  return result;
}

type Outcome = Pick<BulkResult, 'matched' | 'capped' | 'done' | 'skipped' | 'sample'>;

/**
 * Spaces actions `1 / ratePerSecond` apart from the first: before each, waits until the run's
 * count so far fits the rate. Without a rate it never waits.
 */
export function pacer(clock: Clock, ratePerSecond: number | undefined): () => Promise<void> {
  if (ratePerSecond === undefined) return async () => {};
  let startedAt: number | undefined;
  let done = 0;
  return async () => {
    const now = clock.now();
    startedAt ??= now;
    const due = startedAt + (done * 1000) / ratePerSecond;
    done += 1;
    if (due > now) await clock.sleep(due - now);
  };
}

async function bulkArchive(
  ctx: OperatorContext,
  action: 'replay' | 'delete',
  filter: BulkFilter,
  limit: number,
  dryRun: boolean,
  options: BulkOptions,
): Promise<Outcome> {
  const archiveFilter: ArchiveFilter = {
    ...(filter.reason !== undefined ? { reason: filter.reason } : {}),
    ...(filter.task !== undefined ? { task: filter.task } : {}),
    ...(filter.queue !== undefined ? { queue: filter.queue } : {}),
    ...(filter.since !== undefined ? { since: filter.since } : {}),
    ...(filter.until !== undefined ? { until: filter.until } : {}),
  };
  const sampled = await listArchived(ctx, archiveFilter, SAMPLE);
  const sample = sampled.map((m) => archivedItem(m.messageId, m.record));
  const counted = await countArchived(ctx, archiveFilter, limit);
  if (dryRun) return { matched: counted.count, capped: counted.capped, done: 0, skipped: [], sample };
  const pace = pacer(ctx.clock, options.ratePerSecond);
  const progress = (done: number) => options.onProgress?.(done, counted.count);
  const acted =
    action === 'replay'
      ? await replayArchived(ctx, archiveFilter, limit, progress, pace)
      : { replayed: await deleteArchived(ctx, archiveFilter, limit, progress, pace), skipped: [] };
  return {
    matched: counted.count,
    capped: counted.capped,
    done: acted.replayed,
    skipped: acted.skipped.map((s) => ({ id: s.messageId, why: s.why })),
    sample,
  };
}

function archivedItem(id: string, record: ArchiveRecord | undefined): BulkItem {
  return {
    id: record?.jobId ?? id,
    ...(record?.task !== undefined ? { task: record.task } : {}),
    ...(record ? { queue: record.queue, what: record.reason, at: record.archivedAt } : {}),
  };
}

/** The open jobs the filter selects, newest first per source, each once, at most `limit`. */
async function selectJobs(ctx: OperatorContext, filter: BulkFilter, limit: number): Promise<{ jobs: JobRecord[]; capped: boolean }> {
  const states = filter.state !== undefined ? [filter.state] : OPEN_STATES;
  const queues = filter.queue !== undefined ? [filter.queue] : ctx.config.queues.map((q) => q.name);
  const fits = (job: JobRecord) =>
    states.includes(job.state) &&
    queues.includes(job.queue) &&
    (filter.task === undefined || job.task === filter.task) &&
    (filter.key === undefined || job.key === filter.key) &&
    (filter.tag === undefined || (job.tags ?? []).includes(filter.tag)) &&
    (filter.since === undefined || (job.publishedAt ?? 0) >= filter.since) &&
    (filter.until === undefined || (job.publishedAt ?? 0) < filter.until);
  const found = new Map<string, JobRecord>();
  const take = (jobs: readonly JobRecord[]) => {
    for (const job of jobs) if (fits(job) && !found.has(job.jobId)) found.set(job.jobId, job);
  };
  if (filter.tag !== undefined) {
    // The tag index lists a tag's jobs in every state: no scan.
    let cursor: string | undefined;
    do {
      const page = await listTaggedPage(ctx.jobs, filter.tag, 500, cursor);
      take(page.jobs);
      cursor = page.next;
    } while (cursor !== undefined && found.size <= limit);
  } else {
    // Indexed states (retrying, scheduled, waiting) are queried per queue; the others (queued,
    // running) are read by a scan of the jobs table, which a dry run's output says.
    for (const state of states) {
      take(await ctx.jobs.list({ state, queues, ...(filter.task !== undefined ? { task: filter.task } : {}), limit: limit + 1 }));
      if (found.size > limit) break;
    }
  }
  const jobs = [...found.values()];
  return { jobs: jobs.slice(0, limit), capped: jobs.length > limit };
}

async function bulkCancel(
  ctx: OperatorContext,
  filter: BulkFilter,
  limit: number,
  dryRun: boolean,
  options: BulkOptions,
): Promise<Outcome> {
  const { jobs, capped } = await selectJobs(ctx, filter, limit);
  const sample = jobs.slice(0, SAMPLE).map((j) => ({
    id: j.jobId,
    task: j.task,
    queue: j.queue,
    what: j.state,
    ...(j.publishedAt !== undefined ? { at: j.publishedAt } : {}),
  }));
  if (dryRun) return { matched: jobs.length, capped, done: 0, skipped: [], sample };
  const deps = flowDepsOf(ctx);
  const pace = pacer(ctx.clock, options.ratePerSecond);
  const skipped: { id: string; why: string }[] = [];
  let done = 0;
  for (const job of jobs) {
    await pace();
    const result = await cancelJob(deps, job.jobId, ctx.config.queues);
    if (result.outcome === 'cancelled' || result.outcome === 'requested') done += 1;
    else skipped.push({ id: job.jobId, why: result.outcome === 'unknown' ? 'no record any more' : `it is ${result.record.state} now` });
    options.onProgress?.(done, jobs.length);
  }
  return { matched: jobs.length, capped, done, skipped, sample };
}

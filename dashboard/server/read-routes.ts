/** The API's reads (GETs): a version's meta, status, throughput, history, workers and events; its jobs, one job, a flow and the archive. */
import { countArchived, listArchived, shownArchived } from '../../lib/operate/archive';
import { listEvents } from '../../lib/operate/events';
import { flowOf, jobRelations, listTaggedPage, tagProblem } from '../../lib/operate/flow-commands';
import { countJobStates } from '../../lib/operate/job-counts';
import { JobLogsUnavailableError, jobLogs } from '../../lib/operate/job-logs';
import { listJobsPage } from '../../lib/operate/job-pages';
import { keyView, keyViewProblem } from '../../lib/operate/keys';
import type { OperatorContext } from '../../lib/operate/operator-context';
import { lookUpJob } from '../../lib/operate/rejections';
import { statsHistory, throughput, versionStatus } from '../../lib/operate/version-status';
import { listWorkers } from '../../lib/operate/worker-views';
import { taskStatsKey, utcDay } from '../../lib/policy/stat-sums';
import { JOB_STATES, type JobRecord, type JobState } from '../../lib/track/job-record';
import { ARCHIVE_REASONS } from '../../lib/wire/archive-reasons';
import { describeError } from './request-guard';
import { archiveFilter, integerParam, RequestError } from './request-params';
import type { RouteContext } from './route-context';

/** The largest kept result the job page shows in full; a larger one is named with its size (`jobs wait ID --json` prints it). */
export const PAGE_RESULT_BYTES = 1024 * 1024;

/**
 * The record with a result the dispatcher kept in S3 read back into `result` (up to
 * {@link PAGE_RESULT_BYTES}; one GetObject): the page shows it as it shows a small one. One that
 * cannot be read leaves the record as it is, with why in `resultUnread`.
 */
async function withStoredResult(ctx: OperatorContext, job: JobRecord): Promise<{ job: JobRecord; resultUnread?: string }> {
  const ref = job.resultRef;
  if (!ref || job.result !== undefined || !ctx.readStoredResult) return { job };
  if (ref.bytes > PAGE_RESULT_BYTES) return { job, resultUnread: `${ref.bytes} bytes: more than the page shows` };
  try {
    return { job: { ...job, result: JSON.stringify(await ctx.readStoredResult(ref)) } };
  } catch (error) {
    return { job, resultUnread: error instanceof Error ? error.message : String(error) };
  }
}

/** Registers the reads of a version as a whole: what the page needs first, the overview, a queue's history, the workers and the events. */
export function registerVersionReads({ route, context, queueNames, options }: RouteContext): void {
  route('/api/meta', async (query) => {
    const ctx = await context(query.version);
    const tasks = await options.tasks();
    return {
      app: options.app,
      version: ctx.version,
      versions: [...new Set([options.defaultVersion, ...(await options.versions())])].sort(),
      readOnly: options.readOnly,
      local: options.dispatchers !== undefined,
      states: JOB_STATES,
      reasons: ARCHIVE_REASONS,
      queues: ctx.config.queues.map((q) => ({
        name: q.name,
        priority: q.priority,
        slaSeconds: q.slaSeconds,
        tracking: q.tracking,
        maxReceiveCount: q.maxReceiveCount,
      })),
      tasks: tasks.map((t) => ({ name: t.name, queue: t.queue, maxRetries: t.maxRetries, validates: t.validate !== undefined })),
    };
  });

  route('/api/status', async (query) => {
    const ctx = await context(query.version);
    const status = await versionStatus(ctx);
    const dispatchers = options.dispatchers?.();
    // CloudWatch is an extra: a refusal (no permission) leaves the overview working without it.
    const invocations = options.invocations
      ? await options.invocations(ctx.version).catch((error: unknown) => ({ unavailable: describeError(error) }))
      : undefined;
    return {
      ...status,
      now: ctx.clock.now(),
      ...(dispatchers ? { localDispatchers: dispatchers } : {}),
      ...(invocations ? { invocations } : {}),
    };
  });

  route('/api/throughput', async (query) => {
    const ctx = await context(query.version);
    return throughput(ctx, integerParam('minutes', query.minutes, 60, 1, 180));
  });

  route('/api/history', async (query) => {
    const ctx = await context(query.version);
    const key = query.task ? taskStatsKey(query.task) : (queueNames(ctx, query.queue ?? '?')[0] as string);
    return statsHistory(ctx, key, integerParam('days', query.days, 14, 1, 90));
  });

  route('/api/workers', async (query) => {
    const ctx = await context(query.version);
    if (!ctx.workers) return { now: ctx.clock.now(), live: 0, vanished: 0, workers: [] };
    return listWorkers({ workers: ctx.workers, jobs: ctx.jobs, clock: ctx.clock });
  });

  // `taskworker events`: subscribers from the task definitions (as the publish form's), counts from the version's stats.
  route('/api/events', async (query) => {
    const ctx = await context(query.version);
    return listEvents(ctx.config, ctx.version, await options.tasks(), ctx.stats, ctx.clock.now());
  });
}

/** Registers the reads of jobs: a page of a state's (or a tag's), the tabs' counts, one job, its flow, and the archive. */
export function registerJobReads({ route, context, queueNames }: RouteContext): void {
  route('/api/jobs', async (query) => {
    const ctx = await context(query.version);
    const state = query.state ?? 'archived';
    if (!(JOB_STATES as readonly string[]).includes(state))
      throw new RequestError(`state ${JSON.stringify(state)}: expected one of ${JOB_STATES.join(', ')}`);
    const { task, cursor, tag } = query;
    if (tag) {
      const problem = tagProblem(tag);
      if (problem) throw new RequestError(`tag ${JSON.stringify(tag.slice(0, 80))}: ${problem}`);
      return listTaggedPage(ctx.jobs, tag, integerParam('limit', query.limit, 25, 1, 200), cursor || undefined);
    }
    return listJobsPage(ctx, {
      state: state as JobState,
      queues: queueNames(ctx, query.queue),
      ...(task ? { task } : {}),
      limit: integerParam('limit', query.limit, 25, 1, 200),
      ...(cursor ? { cursor } : {}),
    });
  });

  // The job id travels as a query or body field, not a path segment: ids may hold `/`, `?`, `#`, `%`.
  route('/api/job', async (query) => {
    const ctx = await context(query.version);
    const id = query.id;
    if (!id) throw new RequestError('id: required');
    const { job, filed } = await lookUpJob(ctx.jobs, id);
    // Messages that carried the id but never ran as it: listed apart from the id's own record.
    const filedUnderMessageIds = filed.length > 0 ? { filedUnderMessageIds: filed } : {};
    if (!job) {
      if (filed.length > 0) return filedUnderMessageIds;
      throw new RequestError(
        `no job ${id} in version ${ctx.version} (unknown id, expired by its retention, or its queue is not tracked)`,
        404,
      );
    }
    // An archived job's payload is in the archive (whole: the one its record keeps may be none, or cut); redacted as its task says.
    const [[archived], relations] = await Promise.all([
      job.state === 'archived' ? (await listArchived(ctx, { jobId: job.jobId }, 1)).map(shownArchived) : [],
      jobRelations(ctx.jobs, job),
    ]);
    const inFlow = relations.dependencies !== undefined || relations.dependents !== undefined;
    return {
      ...(await withStoredResult(ctx, job)),
      ...(archived ? { archived } : {}),
      ...(inFlow ? { relations } : {}),
      ...filedUnderMessageIds,
    };
  });

  route('/api/job/logs', async (query) => {
    const ctx = await context(query.version);
    const id = query.id;
    if (!id) throw new RequestError('id: required');
    if (!ctx.jobLogs) throw new RequestError(new JobLogsUnavailableError(ctx.version).message, 404);
    return jobLogs(ctx, id);
  });

  route('/api/flow', async (query) => {
    const ctx = await context(query.version);
    const id = query.id;
    if (!id) throw new RequestError('id: required');
    const flow = await flowOf(ctx.jobs, id);
    if (!flow) throw new RequestError(`no job ${id} in version ${ctx.version}`, 404);
    return flow;
  });

  route('/api/key', async (query) => {
    const ctx = await context(query.version);
    const task = query.task ?? '';
    const key = query.key ?? '';
    const problem = keyViewProblem(task, key);
    if (problem) throw new RequestError(problem);
    return keyView(ctx, task, key);
  });

  route('/api/jobs/counts', async (query) => {
    const ctx = await context(query.version);
    return countJobStates(ctx, queueNames(ctx, query.queue));
  });

  route('/api/archive', async (query) => {
    const ctx = await context(query.version);
    return (await listArchived(ctx, archiveFilter(query), integerParam('limit', query.limit, 50, 1, 500))).map(shownArchived);
  });

  route('/api/archive/count', async (query) => {
    const ctx = await context(query.version);
    return countArchived(ctx, archiveFilter(query));
  });

  route('/api/bulk/log', async (query) => {
    const ctx = await context(query.version);
    const day = query.day ?? utcDay(ctx.clock.now());
    if (!/^\d{4}-\d{2}-\d{2}$/.test(day)) throw new RequestError(`day ${JSON.stringify(day)}: expected YYYY-MM-DD`);
    return ctx.operations ? ctx.operations.day(day) : [];
  });
}

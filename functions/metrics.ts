import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { DispatcherObserver } from '../lib/dispatch/dispatcher-deps';
import { type BatchReport, type DispatcherSummary, isFailedAttempt, type JobReport } from '../lib/settle/report';
import {
  archivedMetric,
  INVOCATION_METRICS,
  JOB_METRICS,
  METRIC_DIMENSIONS,
  METRICS_NAMESPACE,
  outcomeMetric,
} from '../lib/wire/metric-names';

export interface DispatcherMetricsOptions {
  /** Reads `TASKWORKER_VERSION`, `POWERTOOLS_SERVICE_NAME`, `POWERTOOLS_METRICS_NAMESPACE`. @defaultValue process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** A ready Powertools instance (tests); its namespace, service and default dimensions are kept. */
  readonly metrics?: Metrics;
  /** Distinct task dimension values before further ones are reported as `(other)`. @defaultValue 100 */
  readonly maxTaskValues?: number;
}

export interface DispatcherMetrics {
  readonly metrics: Metrics;
  /** Emits the EMF documents of each settled batch at once (an invocation lasts minutes). */
  readonly observer: DispatcherObserver;
  /** Stores the invocation's totals (empty receives, …); the `logMetrics` middleware flushes them. */
  recordInvocation(summary: DispatcherSummary): void;
}

/** Task dimension of messages that named no registered task (malformed, unknown task). */
export const UNREGISTERED_TASK = '(unregistered)';
/** Task dimension once `maxTaskValues` distinct tasks have been seen. */
export const OTHER_TASK = '(other)';

/**
 * The dispatcher's CloudWatch metrics as EMF (Powertools Metrics): per queue, and per queue and
 * task, the outcome of every job of a settled batch, its wait and run time; per invocation the
 * receive counts. Each settled batch gives one document per queue and one per queue and task.
 * Names live in `lib/wire/metric-names.ts`, where the stack's alarms read them.
 *
 * @example
 * ```ts
 * const { observer, recordInvocation } = createDispatcherMetrics({ env: { TASKWORKER_VERSION: 'v1' } });
 * observer.onBatch({ queue: 'default', settleRetries: 0, jobs: [{ messageId: 'm1', task: 'send-email', outcome: 'succeeded', attempt: 1 }] });
 * ```
 */
export function createDispatcherMetrics(options: DispatcherMetricsOptions = {}): DispatcherMetrics {
  const env = options.env ?? process.env;
  const metrics =
    options.metrics ??
    new Metrics({
      namespace: env.POWERTOOLS_METRICS_NAMESPACE ?? METRICS_NAMESPACE,
      serviceName: env.POWERTOOLS_SERVICE_NAME ?? 'taskworker',
      defaultDimensions: { [METRIC_DIMENSIONS.version]: env.TASKWORKER_VERSION ?? 'unknown' },
    });
  const maxTaskValues = options.maxTaskValues ?? 100;
  const seenTasks = new Set<string>();

  // Task names come from messages: only registered names may become dimension values, and
  // only so many of them, or a publisher could mint custom metrics (and their cost) at will.
  const taskDimension = (job: JobReport): string => {
    if (job.task === undefined || job.reason === 'malformed' || job.reason === 'unknown-task') return UNREGISTERED_TASK;
    if (!seenTasks.has(job.task)) {
      if (seenTasks.size >= maxTaskValues) return OTHER_TASK;
      seenTasks.add(job.task);
    }
    return job.task;
  };

  /** One EMF document: the jobs' metrics under the default dimensions (service, version) plus these. */
  const publish = (dimensions: Readonly<Record<string, string>>, jobs: readonly JobReport[]): void => {
    for (const [name, value] of Object.entries(dimensions)) metrics.addDimension(name, value);
    for (const [name, count] of jobCounts(jobs)) metrics.addMetric(name, MetricUnit.Count, count);
    for (const job of jobs) {
      if (job.waitMs !== undefined) metrics.addMetric(JOB_METRICS.waitTime, MetricUnit.Milliseconds, job.waitMs);
      if (job.runMs !== undefined) metrics.addMetric(JOB_METRICS.runTime, MetricUnit.Milliseconds, job.runMs);
    }
    metrics.publishStoredMetrics();
  };

  const onBatch = (report: BatchReport): void => {
    if (report.jobs.length === 0) return;
    const byTask = new Map<string, JobReport[]>();
    for (const job of report.jobs) {
      const task = taskDimension(job);
      byTask.set(task, [...(byTask.get(task) ?? []), job]);
    }
    // Per queue, then per queue and task: separate documents, as one document's dimension sets
    // would all carry every metric value and cannot both hold `queue` without Powertools warnings.
    publish({ [METRIC_DIMENSIONS.queue]: report.queue }, report.jobs);
    for (const [task, jobs] of byTask) publish({ [METRIC_DIMENSIONS.queue]: report.queue, [METRIC_DIMENSIONS.task]: task }, jobs);
  };

  return {
    metrics,
    observer: { onBatch },
    recordInvocation(summary) {
      metrics.addMetric(INVOCATION_METRICS.selections, MetricUnit.Count, summary.selections);
      metrics.addMetric(INVOCATION_METRICS.receives, MetricUnit.Count, summary.receives);
      metrics.addMetric(INVOCATION_METRICS.emptyReceives, MetricUnit.Count, summary.emptyReceives);
      metrics.addMetric(INVOCATION_METRICS.loopErrors, MetricUnit.Count, summary.errors);
    },
  };
}

/** Count metrics of a group of jobs; only non-zero counts are emitted. */
function jobCounts(jobs: readonly JobReport[]): Map<string, number> {
  const counts = new Map<string, number>();
  const add = (name: string) => counts.set(name, (counts.get(name) ?? 0) + 1);
  for (const job of jobs) {
    // One whose record write failed is counted when its message comes back (lib/settle/report.ts).
    if (!job.unrecorded) add(outcomeMetric(job.outcome));
    if (isFailedAttempt(job)) add(JOB_METRICS.failed);
    if (job.outcome === 'archived' && !job.unrecorded) add(archivedMetric(job.reason ?? 'exhausted'));
    if (timedOut(job)) add(JOB_METRICS.timedOut);
    if (job.unsettled) add(JOB_METRICS.unsettled);
    if (job.hook === 'failed' || job.hook === 'skipped') add(JOB_METRICS.hookFailures);
  }
  return counts;
}

/** A run stopped at its time limit: the report says so, or the job was archived as `timed-out`. */
function timedOut(job: JobReport): boolean {
  return (job as { readonly timedOut?: boolean }).timedOut === true || job.reason === 'timed-out';
}

/** Calls every observer; one that throws does not keep the others from seeing the batch. */
export function combineObservers(...observers: ReadonlyArray<DispatcherObserver | undefined>): DispatcherObserver {
  const present = observers.filter((o): o is DispatcherObserver => o !== undefined);
  const each = (call: (observer: DispatcherObserver) => void) => {
    let failure: unknown;
    for (const observer of present) {
      try {
        call(observer);
      } catch (error) {
        failure ??= error;
      }
    }
    if (failure !== undefined) throw failure;
  };
  return {
    onBatch: (report) => each((o) => o.onBatch(report)),
    onBatchStart: (start) => each((o) => o.onBatchStart?.(start)),
  };
}

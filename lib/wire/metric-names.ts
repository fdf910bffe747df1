import type { ArchiveReason } from './archive-reasons';

/**
 * Names of the dispatcher's CloudWatch metrics, shared by the emitter (`functions/metrics.ts`,
 * EMF through Powertools Metrics) and the CDK stack's alarms and dashboard, so the two cannot
 * drift apart. Pure data: no AWS SDK, no Powertools.
 *
 * Every metric carries the dimensions `service` (the config's `app`) and `version`. Job metrics
 * are emitted twice: with `queue`, and with `queue` + `task`.
 *
 * @example
 * ```ts
 * import { JOB_METRICS, METRICS_NAMESPACE } from './metric-names';
 * const name = `${METRICS_NAMESPACE}/${JOB_METRICS.succeeded}`; // 'Taskworker/JobsSucceeded'
 * ```
 */
export const METRICS_NAMESPACE = 'Taskworker';

export const METRIC_DIMENSIONS = { service: 'service', version: 'version', queue: 'queue', task: 'task' } as const;

/** Per queue (and per queue and task), one value per job of a settled batch. */
export const JOB_METRICS = {
  /** The task ran and succeeded. */
  succeeded: outcomeMetric('succeeded'),
  /** The task ran (or failed validation) and did not succeed: retried or archived as a failure. */
  failed: 'JobsFailed',
  /** A failed attempt left for a later retry (visibility backoff). */
  retried: outcomeMetric('retried'),
  /** Sent to the archive queue, for any reason; per reason see {@link archivedMetric}. */
  archived: outcomeMetric('archived'),
  /** The run was stopped at its time limit (then retried or archived). */
  timedOut: 'JobsTimedOut',
  /** Received but not started (no time left in the invocation): handed back with visibility 0. */
  released: outcomeMetric('released'),
  /** The settle call for the outcome still failed after retries: the message will come back. */
  unsettled: 'JobsUnsettled',
  /** A lifecycle hook threw, overran its time limit, or had no time left to run. */
  hookFailures: 'HookFailures',
  /** Publish → start, milliseconds. */
  waitTime: 'WaitTime',
  /** Run time of the task, milliseconds. */
  runTime: 'RunTime',
} as const;

/** Per invocation (dimensions `service`, `version` only), from the returned summary. */
export const INVOCATION_METRICS = {
  selections: 'Selections',
  receives: 'Receives',
  /** Receives that returned no message: the cost of polling idle queues. */
  emptyReceives: 'EmptyReceives',
  /** Failed receive/settle calls the loop logged and carried on from. */
  loopErrors: 'LoopErrors',
} as const;

/** Metric counting one job outcome, e.g. `succeeded` → `JobsSucceeded`, `duplicate` → `JobsDuplicate`. */
export function outcomeMetric(outcome: string): string {
  return `Jobs${pascal(outcome)}`;
}

/** Metric counting archives for one reason, e.g. `timed-out` → `ArchivedTimedOut`. */
export function archivedMetric(reason: ArchiveReason): string {
  return `Archived${pascal(reason)}`;
}

function pascal(words: string): string {
  return words
    .split(/[^a-zA-Z0-9]+/)
    .filter((w) => w.length > 0)
    .map((w) => w[0]?.toUpperCase() + w.slice(1))
    .join('');
}

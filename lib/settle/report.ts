import { emptyHistogram, type Histogram, mergeHistogram, recordValue } from '../policy/histogram';
import { emptyDuration, utcDay, withSample } from '../policy/stat-sums';
import type { SerializedError } from '../run/executor-types';
import type { QueueDayStats, StatCounter } from '../track/stats-store';
import type { ArchiveReason } from '../wire/archive-reasons';

/**
 * How one received message left the dispatcher's hands. `duplicate`: the job had already
 * finished, so the message was deleted unrun. `deferred`: another live worker holds the job; the
 * message returns when that lease ends. `stale`: this worker's lease was taken over while it ran,
 * so its outcome was rejected and the message left to the new owner. `scheduled`: its `runAt` was
 * ahead, so it was parked in the jobs table (or sent again, delayed by the seconds left) and the message deleted.
 * `cancelled`: an operator cancelled it while it ran; it ended `cancelled` and its message was deleted.
 * `split`: an event with several subscribers on the queue: one job message was sent for each, and
 * the event's message deleted (a message with one subscriber runs as that subscriber's job).
 */
export type JobOutcome =
  | 'succeeded'
  | 'retried'
  | 'archived'
  | 'released'
  | 'duplicate'
  | 'deferred'
  | 'stale'
  | 'scheduled'
  | 'cancelled'
  | 'split';

export interface JobReport {
  readonly messageId: string;
  readonly jobId?: string;
  readonly task?: string;
  readonly outcome: JobOutcome;
  readonly reason?: ArchiveReason;
  readonly attempt: number;
  /** Publish → start, ms (only for tasks that started). */
  readonly waitMs?: number;
  readonly runMs?: number;
  /** The run was stopped at its time limit. */
  readonly timedOut?: boolean;
  /** A `retried` job whose body asked to run again later (RetryAfterError): no attempt used, not a failure. */
  readonly retryAfter?: boolean;
  /** Of those, one whose body was rate limited (RateLimitedError): its scope was paused. */
  readonly rateLimited?: boolean;
  /** True when the settle call for this outcome still failed after retries (the message will come back). */
  readonly unsettled?: boolean;
  /**
   * Its outcome's job-record write failed after retries: the outcome did not happen. The message is
   * left to come back and the job runs (or is taken over) again, so the stats and metrics count it
   * as unsettled only, never under its outcome: the later delivery counts that once.
   */
  readonly unrecorded?: boolean;
  /** Near its redrive limit the message was replaced by a fresh copy instead of being handed back. */
  readonly requeued?: boolean;
  /** Why a retried or archived job failed: the task's error, or why its message was rejected. */
  readonly error?: SerializedError;
  /** Deferred by a fleet-wide limit (the task's or the queue's): it waits, using no attempt. */
  readonly limited?: boolean;
  /** Deferred by a rate limit's pause of this scope (`task:…`, `key:…`, `queue:…`): it waits until the pause ends, using no attempt. */
  readonly heldBy?: string;
  /**
   * A `scheduled` job its body parked at a step: asleep, waiting for a token, or continuing in a new
   * invocation; or (`key`, a `deferred` one) a job over its key's concurrency, parked in its key's line.
   */
  readonly parked?: 'sleep' | 'token' | 'event' | 'continue' | 'key';
  /** A batch task's job: the call it ran in (its size; `first` on one item per call, for counting calls). */
  readonly call?: { readonly size: number; readonly first: boolean };
  /** Its lifecycle hooks (lib/settle/run-hooks.ts): all ran, one failed or overran, or no time was left for them. */
  readonly hook?: 'ran' | 'failed' | 'skipped';
}

/**
 * Whether a report is a failed attempt: this delivery ran the task (or its `validate`) and it did
 * not succeed. A job archived without running now (malformed, unknown task, id conflict, attempts
 * lost with their workers) is not one. The one rule the stats table and the metrics count by.
 */
export function isFailedAttempt(job: JobReport): boolean {
  return job.runMs !== undefined && !job.retryAfter && (job.outcome === 'retried' || job.outcome === 'archived');
}

/** One batch, reported once it is settled; observers (metrics, local progress) consume these. */
export interface BatchReport {
  readonly queue: string;
  readonly jobs: readonly JobReport[];
  /** Per-entry retries the settle calls needed. */
  readonly settleRetries: number;
}

export interface QueueSummary {
  received: number;
  succeeded: number;
  retried: number;
  released: number;
  duplicate: number;
  deferred: number;
  stale: number;
  scheduled: number;
  cancelled: number;
  split: number;
  unsettled: number;
  hookFailures: number;
  archived: Partial<Record<ArchiveReason, number>>;
  wait: Histogram;
  run: Histogram;
}

/** What a dispatcher invocation did; returned by the Lambda handler and mergeable across invocations. */
export interface DispatcherSummary {
  selections: number;
  receives: number;
  emptyReceives: number;
  errors: number;
  queues: Record<string, QueueSummary>;
  /** Set when the invocation ended early for lack of work (its idle exit): the fleet is scaling in. */
  endedIdle?: boolean;
  /** Set when the invocation stopped because the process's resident set passed `dispatcher.rssLimitMb`. */
  memoryStop?: { readonly rssMb: number; readonly limitMb: number };
}

export function emptySummary(): DispatcherSummary {
  return { selections: 0, receives: 0, emptyReceives: 0, errors: 0, queues: {} };
}

function queueSummary(summary: DispatcherSummary, queue: string): QueueSummary {
  let q = summary.queues[queue];
  if (!q) {
    q = {
      received: 0,
      succeeded: 0,
      retried: 0,
      released: 0,
      duplicate: 0,
      deferred: 0,
      stale: 0,
      scheduled: 0,
      cancelled: 0,
      split: 0,
      unsettled: 0,
      hookFailures: 0,
      archived: {},
      wait: emptyHistogram(),
      run: emptyHistogram(),
    };
    summary.queues[queue] = q;
  }
  return q;
}

export function addBatch(summary: DispatcherSummary, report: BatchReport): void {
  const q = queueSummary(summary, report.queue);
  for (const job of report.jobs) {
    q.received += 1;
    if (job.unsettled) q.unsettled += 1;
    if (job.hook === 'failed' || job.hook === 'skipped') q.hookFailures += 1;
    if (job.unrecorded) {
      // Counted when its message comes back and the outcome is recorded.
    } else if (job.outcome === 'archived') {
      const reason = job.reason ?? 'exhausted';
      q.archived[reason] = (q.archived[reason] ?? 0) + 1;
    } else {
      q[job.outcome] += 1;
    }
    if (job.waitMs !== undefined) recordValue(q.wait, job.waitMs);
    if (job.runMs !== undefined) recordValue(q.run, job.runMs);
  }
}

export function mergeSummary(into: DispatcherSummary, from: DispatcherSummary): void {
  into.selections += from.selections;
  into.receives += from.receives;
  into.emptyReceives += from.emptyReceives;
  into.errors += from.errors;
  for (const [name, src] of Object.entries(from.queues)) {
    const q = queueSummary(into, name);
    for (const key of [
      'received',
      'succeeded',
      'retried',
      'released',
      'duplicate',
      'deferred',
      'stale',
      'scheduled',
      'cancelled',
      'split',
      'unsettled',
      'hookFailures',
    ] as const)
      q[key] += src[key] ?? 0;
    for (const [reason, n] of Object.entries(src.archived) as Array<[ArchiveReason, number]>)
      q.archived[reason] = (q.archived[reason] ?? 0) + n;
    mergeHistogram(q.wait, src.wait);
    mergeHistogram(q.run, src.run);
  }
}

export function archivedTotal(q: QueueSummary): number {
  return Object.values(q.archived).reduce((a, n) => a + (n ?? 0), 0);
}

/**
 * What a queue's day in the stats table has not yet counted of what a summary of the same batches
 * counts, one `<what> <in the stats> of <in the summary>` each (`retried 2 of 4`); empty once it has
 * caught up. Both count a report alike ({@link addBatch}, {@link statsOfBatch}): succeeded and
 * archived once per job, retried once per failed attempt that was retried. But each dispatcher
 * writes its stats coalesced, up to `STATS_FLUSH_MS` (lib/invocation/stats-buffer.ts) after a batch
 * (or at its invocation's end), so stats read right after the last batch trail the summary.
 */
export function statsBehind(summary: QueueSummary | undefined, day: QueueDayStats | undefined): string[] {
  if (!summary) return [];
  const counted: Array<[string, number, number]> = [
    ['succeeded', day?.counters.succeeded ?? 0, summary.succeeded],
    ['retried', day?.counters.retried ?? 0, summary.retried],
    ...(Object.entries(summary.archived) as Array<[ArchiveReason, number]>).map(([reason, n]): [string, number, number] => [
      `archived ${reason}`,
      day?.archived[reason] ?? 0,
      n,
    ]),
  ];
  return counted.filter(([, stats, ran]) => stats < ran).map(([what, stats, ran]) => `${what} ${stats} of ${ran}`);
}

/** What one settled batch adds to its queue's day: the single ADD the dispatcher writes. */
export function statsOfBatch(report: BatchReport, now: number): QueueDayStats {
  const counters: Partial<Record<StatCounter, number>> = {};
  const archived: Partial<Record<ArchiveReason, number>> = {};
  const bump = <K extends string>(into: Partial<Record<K, number>>, key: K) => {
    into[key] = (into[key] ?? 0) + 1;
  };
  let wait = emptyDuration();
  let run = emptyDuration();
  for (const job of report.jobs) {
    if (job.waitMs !== undefined) wait = withSample(wait, job.waitMs);
    if (job.runMs !== undefined) run = withSample(run, job.runMs);
    if (job.timedOut) bump(counters, 'timedOut');
    if (job.call) {
      bump(counters, 'batched');
      if (job.call.first) bump(counters, 'batches');
    }
    if (isFailedAttempt(job)) bump(counters, 'failed');
    if (job.unrecorded) continue;
    switch (job.outcome) {
      case 'succeeded':
        bump(counters, 'succeeded');
        break;
      case 'retried':
        bump(counters, job.rateLimited ? 'rateLimited' : job.retryAfter ? 'retryAfter' : 'retried');
        break;
      case 'archived':
        bump(archived, job.reason ?? 'exhausted');
        break;
      case 'duplicate':
        bump(counters, 'duplicates');
        break;
      case 'released':
        bump(counters, 'released');
        break;
      case 'scheduled':
        bump(counters, 'scheduled');
        break;
      case 'deferred':
        // Held back by a fleet-wide limit, or by a rate limit's pause; a job leased elsewhere is not counted.
        if (job.limited) bump(counters, 'deferred');
        if (job.heldBy !== undefined) bump(counters, 'rateLimitHeld');
        break;
      case 'cancelled':
        bump(counters, 'cancelled');
        break;
      case 'split':
        bump(counters, 'split');
        break;
      case 'stale':
        break;
    }
  }
  return { queue: report.queue, day: utcDay(now), counters, archived, wait, run };
}

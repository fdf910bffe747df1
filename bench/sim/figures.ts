/**
 * A selector's figures as `npm run bench:selectors -- --json` records them (one cell of a workload,
 * all its seeds pooled): bench/selectors.ts writes these, and test/unit/bench-tables.test.ts runs
 * one cell again and compares it with what bench/results/selectors.json holds.
 */
import type { RunFigures } from './run';

export interface QueueOut {
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  readonly published: number;
  readonly overSla: number;
  readonly heldP99: number;
}

export interface SelectorOut {
  readonly queues: Readonly<Record<string, QueueOut>>;
  readonly sqsRequestsPerTask: number;
  /** Requests that took no message (empty receives, GetQueueAttributes checks), per minute, whole fleet: what looking for work costs. */
  readonly idleRequestsPerMinute: number;
  readonly requestsPerMinute: number;
  readonly requests: Readonly<Record<string, number>>;
  readonly tasks: number;
  readonly duplicateRuns: number;
}

export function selectorOut(r: RunFigures): SelectorOut {
  const minutes = r.requestsPerMinute > 0 ? Object.values(r.requests).reduce((a, n) => a + n, 0) / r.requestsPerMinute : 1;
  return {
    queues: Object.fromEntries(
      r.queues.map((q) => [
        q.queue,
        { p50: q.p50, p99: q.p99, max: q.max, published: q.published, overSla: q.overSla, heldP99: q.heldP99 },
      ]),
    ),
    sqsRequestsPerTask: r.sqsRequestsPerTask,
    idleRequestsPerMinute: Math.round(((r.emptyReceives + (r.requests.depth ?? 0)) / minutes) * 10) / 10,
    requestsPerMinute: r.requestsPerMinute,
    requests: r.requests,
    tasks: r.tasks,
    duplicateRuns: r.duplicateRuns,
  };
}

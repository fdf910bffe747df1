/**
 * Jobs started, succeeded and archived per queue and minute: what the overview charts over the
 * last hour (Flower's and bull-board's opening view). Pure: keys and arithmetic, no AWS SDK.
 */
import type { MinuteCounts } from '../track/stats-store';

/** Per queue, one {@link MinuteCounts} per minute of `minutes` (oldest first; 0s where nothing happened). */
export interface Throughput {
  /** Where the counts come from: CloudWatch's metrics (AWS) or the stats table's minute counters. */
  readonly source: 'cloudwatch' | 'stats';
  /** UTC minutes, `YYYY-MM-DDTHH:MM`, oldest first. */
  readonly minutes: readonly string[];
  readonly queues: Readonly<Record<string, readonly MinuteCounts[]>>;
}

/**
 * Jobs started, succeeded and archived per queue and minute from the platform's metrics (CloudWatch:
 * the dispatcher's EMF metrics), for the given UTC minutes (`YYYY-MM-DDTHH:MM`, oldest first).
 */
export type MetricsThroughput = (query: {
  readonly service: string;
  readonly version: string;
  readonly queues: readonly string[];
  readonly minutes: readonly string[];
}) => Promise<Record<string, MinuteCounts[]>>;

export const NO_COUNTS: MinuteCounts = { started: 0, succeeded: 0, archived: 0 };

/** How long a minute counter is kept in the stats table (TTL): the chart shows an hour. */
export const MINUTE_RETENTION_SECONDS = 24 * 3600;

/** The UTC minute of an instant, `YYYY-MM-DDTHH:MM` (no stats day key has this shape). */
export function minuteKey(ms: number): string {
  return new Date(ms).toISOString().slice(0, 16);
}

/** The `count` minutes up to and including the one `now` is in, oldest first. */
export function lastMinutes(now: number, count: number): string[] {
  const current = Math.floor(now / 60_000) * 60_000;
  return Array.from({ length: count }, (_, i) => minuteKey(current - (count - 1 - i) * 60_000));
}

export function addCounts(a: MinuteCounts, b: Partial<MinuteCounts>): MinuteCounts {
  return { started: a.started + (b.started ?? 0), succeeded: a.succeeded + (b.succeeded ?? 0), archived: a.archived + (b.archived ?? 0) };
}

/**
 * What a settled batch adds to its queue's minutes: each job that ran counts as started in the
 * minute it started (settle time less its run time), and as succeeded or archived in the minute it
 * settled (not one whose record write failed: it comes back). Minutes with nothing are left out. (A batch report, typed by what is read, so the
 * dashboard's page can import this module without the settle stage.)
 */
export function minutesOfBatch(
  report: {
    readonly jobs: ReadonlyArray<{
      readonly runMs?: number | undefined;
      readonly outcome: string;
      readonly unrecorded?: boolean | undefined;
    }>;
  },
  now: number,
): Map<string, MinuteCounts> {
  const out = new Map<string, MinuteCounts>();
  const bump = (minute: string, what: Partial<MinuteCounts>) => out.set(minute, addCounts(out.get(minute) ?? NO_COUNTS, what));
  for (const job of report.jobs) {
    if (job.runMs !== undefined) bump(minuteKey(now - job.runMs), { started: 1 });
    if (job.unrecorded) continue; // its outcome did not happen (lib/settle/report.ts)
    if (job.outcome === 'succeeded') bump(minuteKey(now), { succeeded: 1 });
    if (job.outcome === 'archived') bump(minuteKey(now), { archived: 1 });
  }
  return out;
}

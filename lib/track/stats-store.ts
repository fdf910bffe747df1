/**
 * The stats table's model: a queue's (or a task's) day of counters and durations, and the store
 * that adds to it. The arithmetic on these sums is in lib/policy/stat-sums.ts.
 */
import type { ArchiveReason } from '../wire/archive-reasons';

/** Counter names of the stats table. */
export const STAT_COUNTERS = [
  'succeeded',
  'failed',
  'retried',
  /** Runs that asked to run again later (RetryAfterError): not failures, and not in `retried`. */
  'retryAfter',
  /** Runs that were rate limited (RateLimitedError): their scope paused; not failures, not in `retried` nor `retryAfter`. */
  'rateLimited',
  /** Receives of jobs a rate limit's pause held back until it ends (each handed back, no attempt used). */
  'rateLimitHeld',
  'timedOut',
  /** Batch tasks' calls (`runBatch`), and the jobs run in them: `batched / batches` is the calls' mean size. */
  'batches',
  'batched',
  'duplicates',
  'released',
  'scheduled',
  'deferred',
  'cancelled',
  /** Event messages turned into one job per subscriber on their queue. */
  'split',
] as const;
export type StatCounter = (typeof STAT_COUNTERS)[number];

/** Sums of a set of durations, mergeable by addition (count, sum, sum of squares, qless buckets). */
export interface DurationStats {
  readonly count: number;
  /** ms */
  readonly sum: number;
  /** ms² — with sum and count gives the variance without storing samples. */
  readonly sumSquares: number;
  /** qless bucket (s0..s59, m1..m59, h1..h23, d1..d30) → count. */
  readonly buckets: Readonly<Record<string, number>>;
}

/** One queue's activity on one UTC day, or a delta to add to it. */
export interface QueueDayStats {
  readonly queue: string;
  /** YYYY-MM-DD (UTC) */
  readonly day: string;
  readonly counters: Readonly<Partial<Record<StatCounter, number>>>;
  readonly archived: Readonly<Partial<Record<ArchiveReason, number>>>;
  readonly wait: DurationStats;
  readonly run: DurationStats;
  /** A task's day only: its attributed share of what the dispatchers spent (lib/policy/cost-attribution.ts). */
  readonly cost?: TaskCost;
}

export interface StatsStore {
  /** Adds a delta atomically (one write). */
  add(delta: QueueDayStats, expiresAt: number): Promise<void>;
  get(queue: string, day: string): Promise<QueueDayStats | undefined>;
  /**
   * Adds to a queue's counters of one UTC minute (`YYYY-MM-DDTHH:MM`, lib/policy/throughput.ts)
   * atomically (one small write, kept `expiresAt`); the overview's throughput where CloudWatch is not.
   */
  addMinute?(queue: string, minute: string, counts: MinuteCounts, expiresAt: number): Promise<void>;
  /** A queue's counters of the given minutes (eventually consistent); a minute with none is left out. */
  minutes?(queue: string, minutes: readonly string[]): Promise<Record<string, MinuteCounts>>;
}

/** A task's attributed usage (a day's total, or a batch's delta); fractional, mergeable by addition. */
export interface TaskCost {
  /** Billed Lambda time × memory, MB·ms (÷ 1024 ÷ 1000 = GB-seconds). */
  readonly lambdaMbMs: number;
  readonly sqsRequests: number;
  readonly writeUnits: number;
}

/** Jobs started, succeeded and archived on one queue in one UTC minute (lib/policy/throughput.ts). */
export interface MinuteCounts {
  readonly started: number;
  readonly succeeded: number;
  readonly archived: number;
}

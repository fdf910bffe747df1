import type { ArchiveReason } from '../archive';
import type { SerializedError } from '../executor/types';

/**
 * A job's lifecycle. Terminal states never change again: a later delivery of a finished job is
 * recorded as a `skipped-duplicate` history entry and does not run.
 *
 *   (published) queued ──claim──▶ running ──▶ succeeded
 *                  │                 ├──▶ retrying ──claim──▶ running …
 *                  │                 └──▶ archived (exhausted, timed-out, unrecoverable, invalid-payload)
 *                  └───────────────────────▶ archived (malformed, unknown-task; nothing ran)
 *   running with an expired lease ──claim (takeover)──▶ running (attempt + 1)
 */
export const JOB_STATES = ['queued', 'running', 'retrying', 'succeeded', 'archived'] as const;
export type JobState = (typeof JOB_STATES)[number];

/** What can happen to a job, as its history records it. */
export type HistoryWhat = 'queued' | 'started' | 'took-over' | 'succeeded' | 'retrying' | 'archived' | 'skipped-duplicate';

export interface HistoryEntry {
  readonly what: HistoryWhat;
  /** Epoch ms. */
  readonly when: number;
  readonly worker?: string;
  readonly attempt?: number;
  readonly detail?: string;
}

export interface JobRecord {
  readonly jobId: string;
  readonly task: string;
  readonly queue: string;
  readonly version: string;
  readonly state: JobState;
  /** Runs started (claims), the authoritative attempt count. */
  readonly attempt: number;
  readonly reason?: ArchiveReason;
  readonly publishedAt?: number;
  readonly firstStartedAt?: number;
  readonly lastStartedAt?: number;
  readonly finishedAt?: number;
  readonly updatedAt: number;
  readonly leaseOwner?: string;
  readonly leaseUntil?: number;
  /** The `claimId` of the claim that holds the lease. */
  readonly leaseClaim?: string;
  readonly lastError?: SerializedError;
  /** The task's return value as JSON, when it was small enough to keep. */
  readonly result?: string;
  readonly history: readonly HistoryEntry[];
}

/** Identity of a job as a delivery reveals it. */
export interface JobRef {
  readonly jobId: string;
  readonly task: string;
  readonly queue: string;
  readonly version: string;
  readonly publishedAt: number;
}

export interface ClaimRequest extends JobRef {
  readonly workerId: string;
  readonly now: number;
  /** Epoch ms until which the claim holds unless extended by a heartbeat. */
  readonly leaseUntil: number;
  /**
   * Unique to this claim request, kept on the record while the lease lasts. It is how a store
   * tells the SDK's retry of this very claim after a lost answer (ours) from another delivery of
   * the same job claimed by the same worker at the same instant (two copies in one batch: a duplicate).
   * Without it a claim that finds the job running is never taken as ours.
   */
  readonly claimId?: string;
}

/**
 * A claim's answer. `claimed` carries the fencing token (the new attempt number): completions
 * and heartbeats must present it. `finished` means the job already ended; `leased` that another
 * live worker holds it.
 */
export type ClaimResult =
  | { readonly outcome: 'claimed'; readonly token: number; readonly record: JobRecord }
  | { readonly outcome: 'finished'; readonly record: JobRecord }
  | { readonly outcome: 'leased'; readonly record: JobRecord };

/** How an attempt ended, as written by the worker that holds the token. */
export interface Completion {
  readonly jobId: string;
  readonly token: number;
  readonly state: 'succeeded' | 'retrying' | 'archived';
  readonly reason?: ArchiveReason;
  readonly error?: SerializedError;
  readonly result?: string;
  readonly workerId: string;
  readonly now: number;
  /** For retries: when the next attempt becomes possible (epoch ms), for the history. */
  readonly retryAt?: number;
}

/** A failure recorded without a claim (tracking mode `failures`, or messages that never ran). */
export interface FailureRecord extends JobRef {
  readonly state: 'retrying' | 'archived';
  readonly attempt: number;
  readonly reason?: ArchiveReason;
  readonly error: SerializedError;
  readonly workerId: string;
  readonly now: number;
}

export interface JobQuery {
  readonly state: JobState;
  /** Queues to search (retrying and archived jobs are indexed per queue). */
  readonly queues: readonly string[];
  readonly task?: string;
  readonly limit: number;
}

/**
 * The jobs table, in domain words. Every transition is conditional on the state it comes from;
 * completions and heartbeats are conditional on the fencing token, so a stale worker whose
 * lease was taken over cannot overwrite the newer outcome.
 */
export interface JobStore {
  /** Records a job published through the library. False if the id already exists (nothing changed). */
  recordQueued(job: JobRef, now: number): Promise<boolean>;
  claim(request: ClaimRequest): Promise<ClaimResult>;
  /** Heartbeat: extends the lease if the token still holds it. */
  extendLease(jobId: string, token: number, leaseUntil: number, now: number): Promise<boolean>;
  /** Ends an attempt. False when the token no longer holds the job (the outcome was rejected). */
  complete(completion: Completion, claimed: JobRecord): Promise<boolean>;
  recordFailure(failure: FailureRecord): Promise<void>;
  recordDuplicate(jobId: string, workerId: string, now: number): Promise<void>;
  get(jobId: string): Promise<JobRecord | undefined>;
  list(query: JobQuery): Promise<JobRecord[]>;
  /** Puts a finished (archived) job back to `queued` with its attempts reset, for replay. */
  resetForReplay(jobId: string, now: number): Promise<void>;
}

/** Counter names of the stats table. */
export const STAT_COUNTERS = ['succeeded', 'failed', 'retried', 'timedOut', 'duplicates', 'released'] as const;
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
}

export interface StatsStore {
  /** Adds a delta atomically (one write). */
  add(delta: QueueDayStats, expiresAt: number): Promise<void>;
  get(queue: string, day: string): Promise<QueueDayStats | undefined>;
}

/**
 * What the operator's actions answer, with nothing that needs Node: the CLI prints these, the
 * dashboard's server sends them and its page reads them (dashboard/api-types.ts).
 */

import type { JobLogEntry } from '../track/job-logs';
import type { JobRecord, JobState } from '../track/job-record';
import type { JobFate, WorkerPlace, WorkerUsage } from '../track/worker-registry';
import type { ArchiveReason } from '../wire/archive-reasons';

/** A record filed under a message id because of its envelope, and why it is filed there (lib/operate/rejections.ts). */
export interface FiledRejection {
  /** The SQS message id the record is kept under (`jobs show` it for its full record). */
  readonly messageId: string;
  readonly reason: JobRecord['reason'];
  /** Why the message never ran as the job it named, in words. */
  readonly why: string;
  readonly record: JobRecord;
}

/**
 * A job's record as `taskworker jobs show --json` prints it: the jobs table's record, with its
 * result as the value the task returned rather than the JSON text the table keeps.
 */
export type ShownJob = Omit<JobRecord, 'result'> & {
  /**
   * The task's return value, parsed. Absent when it returned nothing, when the dispatcher kept it
   * in S3 (over 1 KB: `resultRef` names the object and its size in bytes; `jobs wait ID --json`
   * reads it), or when it was too large to keep (`resultBytes` says its size).
   */
  readonly result?: unknown;
};

/**
 * What `taskworker jobs show ID --json` prints: one shape whether ID names a job, only messages
 * that carried ID and were refused, both, or nothing (then the command also exits 1 and says so on
 * stderr).
 *
 * @example
 * ```ts
 * const answer = JSON.parse(stdout) as JobShowAnswer;
 * if (answer.job?.state === 'succeeded') console.log(answer.job.result);
 * for (const refused of answer.filedUnderMessageIds) console.log(refused.messageId, refused.why);
 * ```
 */
export interface JobShowAnswer {
  /** The id asked for. */
  readonly id: string;
  /** The release version looked in. */
  readonly version: string;
  /** ID's own job; null when it has none (unknown id, expired by its retention, never run as a job, or its queue is not tracked). */
  readonly job: ShownJob | null;
  /** What the job waits for and what waits for it, with their states; absent when there is no job or it is in no flow. */
  readonly relations?: JobRelations;
  /**
   * Messages that carried ID and never ran as that job (unknown task, id conflict, malformed, a
   * refused Celery message), each kept under its own SQS message id, with why: listed apart from
   * `job`, never merged into it. Empty when there are none.
   */
  readonly filedUnderMessageIds: readonly FiledRejection[];
}

/** A related job's state; `unknown` when it has no record (not published yet, or expired). */
export type RelatedState = JobState | 'unknown';

/** What a replay from the archive did. */
export interface ReplayResult {
  readonly replayed: number;
  /** Matching messages that could not be replayed, with why. */
  readonly skipped: ReadonlyArray<{ messageId: string; why: string }>;
}

export interface RedriveResult {
  readonly queue: string;
  readonly messages: number;
  /** `move-task`: SQS moved them (StartMessageMoveTask); `client`: this process did (receive, send, delete). */
  readonly via?: 'move-task' | 'client';
  /** Why the move task was not used, when the client moved them. */
  readonly moveTaskError?: string;
  readonly taskHandle?: string;
  readonly status?: string;
}

/** A job as a flow shows it: its id and where it stands (`unknown`: no record, e.g. not yet published or expired). */
export interface RelatedJob {
  readonly jobId: string;
  readonly state: RelatedState;
  readonly task?: string;
  readonly reason?: ArchiveReason;
}

/**
 * One side of a job's relations (what it waits for, or what waits for it): how many there are, how
 * many were read, their states counted over those read, and the first of them by name. A fan-in of
 * 100,000 members is read only up to a bound: `read` says how far.
 */
export interface RelatedJobs {
  readonly total: number;
  readonly read: number;
  /** State → jobs in it, over the `read` first. */
  readonly counts: Readonly<Partial<Record<RelatedState, number>>>;
  /** The first few, in the order the job names them. */
  readonly jobs: readonly RelatedJob[];
}

/** A job's dependencies and dependents, with their states (`jobs show`, the dashboard's job page). */
export interface JobRelations {
  readonly dependencies?: RelatedJobs & {
    /** From the job's own count: every dependency has ended. */
    readonly complete: boolean;
    /** The first dependency the count saw fail, if any. */
    readonly firstFailure?: string;
  };
  readonly dependents?: RelatedJobs;
}

/**
 * The jobs connected to one job through dependencies, both ways and transitively (the whole flow it
 * belongs to), read up to a bound: how many are in each state, and each one read.
 */
export interface FlowView {
  readonly root: string;
  /** Jobs read (the root included), breadth first from the root. */
  readonly jobs: ReadonlyArray<RelatedJob & { readonly depth: number }>;
  readonly counts: Readonly<Partial<Record<RelatedState, number>>>;
  /** False when the walk stopped at its bound: more jobs are connected than were read. */
  readonly complete: boolean;
  /** The links between the jobs read: `[dependency, dependent]` (the dependent waits for the dependency). */
  readonly edges: ReadonlyArray<readonly [string, string]>;
}

/** What `jobs cancel --flow` did: the jobs it cancelled, and those it found but could not cancel (running, ended). */
export interface FlowCancelResult {
  readonly root: string;
  readonly cancelled: readonly string[];
  readonly notCancelled: ReadonlyArray<{ readonly jobId: string; readonly state: JobState }>;
  /** The root has no record. */
  readonly unknown: boolean;
  /** False when the walk stopped at its bound. */
  readonly complete: boolean;
}

/** A dispatcher invocation in `taskworker workers` and the dashboard's workers page (lib/operate/worker-views.ts). */
export interface WorkerView {
  /** The invocation: `<workerId>@<startedAt>`. */
  readonly id: string;
  /** What its claims write as a job's `leaseOwner`. */
  readonly workerId: string;
  readonly role: string;
  readonly place: WorkerPlace;
  readonly status: 'live' | 'vanished';
  readonly startedAt: number;
  readonly deadline: number;
  readonly heardAt: number;
  /** Its selector's shares at its last selection in this invocation (absent before one, and for a doorbell invocation, which selects nothing). */
  readonly weights?: Readonly<Record<string, number>>;
  /** When that selection was (epoch ms). */
  readonly weightsAt?: number;
  /** Its process's resident set against `dispatcher.rssLimitMb` and CPU since its previous beat, at its last beat (absent in a shared process). */
  readonly usage?: WorkerUsage;
  /**
   * Live: the jobs of its last beat that its record still shows running under its lease. Vanished:
   * every job of its last beat, with what became of it.
   */
  readonly jobs: readonly JobFate[];
  /** Jobs its last beat said it held beyond those the item had room for. */
  readonly moreJobs: number;
}

export interface WorkersView {
  readonly now: number;
  readonly live: number;
  readonly vanished: number;
  /** Live ones first, each group newest first. */
  readonly workers: readonly WorkerView[];
}

/**
 * What counted a state's jobs for the dashboard's tabs, each without a scan: `index` the sparse
 * per-queue index (up to a cap); `workers` the live workers' last beats (the jobs they held);
 * `queue` SQS's approximate count of visible messages; `today` the stats table's counter of the
 * UTC day.
 */
export type CountSource = 'index' | 'workers' | 'queue' | 'today';

export interface StateCount {
  readonly state: JobState;
  /** How many; null where nothing counts it without a scan (no worker registry). */
  readonly count: number | null;
  /** At least `count`: the index count stopped at its cap, or workers held jobs their beats had no room to name. */
  readonly atLeast: boolean;
  readonly source: CountSource;
}

/** Every job state's count on some queues (lib/operate/job-counts.ts). */
export interface JobCounts {
  /** The UTC day a `today` count is of. */
  readonly day: string;
  /** An `index` count reads at most this many jobs per queue. */
  readonly cap: number;
  readonly states: readonly StateCount[];
}

/**
 * What retrying one archived job did (lib/operate/job-actions.ts): `retried`, its archived message
 * back in its queue with its attempts reset; `not-archived`, the job is in another state;
 * `not-in-archive`, its message is no longer there (replayed already, or past the archive's
 * retention); `skipped`, the replay left it, saying why; `unknown`, no such job.
 */
export type RetryResult =
  | { readonly outcome: 'retried'; readonly queue: string; readonly record: JobRecord }
  | { readonly outcome: 'not-archived'; readonly record: JobRecord }
  | { readonly outcome: 'not-in-archive'; readonly record: JobRecord }
  | { readonly outcome: 'skipped'; readonly why: string; readonly record: JobRecord }
  | { readonly outcome: 'unknown' };

/**
 * What running a delayed job now did (lib/operate/job-actions.ts): `sent`, its message is in its
 * queue now; `due`, it was made due now but its send failed, so the next sweep sends it (within a
 * minute); `sweeping`, a sweep holds it, sending it for its due time (15 minutes away or nearer);
 * `announced`, its message waits in SQS (delayed up to 15 minutes), which cannot be brought forward
 * — it runs at its due time; `not-scheduled`, it is in another state (or moved on meanwhile);
 * `unknown`, no such job.
 */
export type RunNowResult =
  | { readonly outcome: 'sent'; readonly queue: string; readonly record: JobRecord }
  | { readonly outcome: 'due'; readonly record: JobRecord }
  | { readonly outcome: 'sweeping'; readonly record: JobRecord }
  | { readonly outcome: 'announced'; readonly record: JobRecord }
  | { readonly outcome: 'not-scheduled'; readonly record: JobRecord }
  | { readonly outcome: 'unknown' };

/** The states a bulk cancel takes by default: every job not ended, not running. */
export const OPEN_STATES: readonly JobState[] = [
  'queued',
  'retrying',
  'scheduled',
  'waiting',
  'sleeping',
  'waiting-token',
  'waiting-event',
  'waiting-key',
];
/** The states a bulk cancel may be asked for (`running`: each is asked to stop, as `jobs cancel` does). */
export const CANCELLABLE_STATES: readonly JobState[] = [...OPEN_STATES, 'running'];

/** What `jobs bulk` (lib/operate/bulk.ts) acts with. */
export type BulkAction = 'cancel' | 'replay' | 'delete';

export interface BulkFilter {
  /** Jobs (or archived messages) of this task. */
  readonly task?: string;
  /** Jobs (or archived messages) of this queue. */
  readonly queue?: string;
  /** cancel: jobs in this state. @defaultValue every state of {@link OPEN_STATES} */
  readonly state?: JobState;
  /** cancel: jobs with this tag (read from the tag index, without a scan). */
  readonly tag?: string;
  /** cancel: jobs with this key. */
  readonly key?: string;
  /** replay and delete: messages archived for this reason. */
  readonly reason?: ArchiveReason;
  /** Epoch ms, inclusive: published at or after (cancel), archived at or after (replay, delete). */
  readonly since?: number;
  /** Epoch ms, exclusive: published before (cancel), archived before (replay, delete). */
  readonly until?: number;
}

/** One job or archived message a bulk operation selected. */
export interface BulkItem {
  readonly id: string;
  readonly task?: string;
  readonly queue?: string;
  /** The job's state (cancel) or the archive's reason (replay, delete). */
  readonly what?: string;
  /** Published (cancel) or archived (replay, delete) at, epoch ms. */
  readonly at?: number;
}

export interface BulkResult {
  readonly action: BulkAction;
  readonly filter: BulkFilter;
  readonly dryRun: boolean;
  /** What the filter selected (counted up to the limit). */
  readonly matched: number;
  /** The count stopped at the limit: more match. */
  readonly capped: boolean;
  /** Acted on (0 in a dry run). */
  readonly done: number;
  /** Selected but not acted on, with why (a job that ended meanwhile, a send that failed). */
  readonly skipped: ReadonlyArray<{ readonly id: string; readonly why: string }>;
  /** The first few selected, for a dry run's "these". */
  readonly sample: readonly BulkItem[];
  readonly startedAt: number;
  readonly endedAt: number;
}

/** A job's log lines as `jobs logs` and the job page read them (lib/operate/job-logs.ts). */
export interface JobLogs {
  readonly jobId: string;
  /** Where the lines were read (dev's log file, or CloudWatch Logs' group). */
  readonly where: string;
  /** Epoch ms bounds of what was read. */
  readonly from: number;
  readonly to: number;
  /** The job has ended (its record is in a final state): no more lines will come. */
  readonly ended: boolean;
  readonly lines: readonly JobLogEntry[];
}

/** One key of a task: what holds it and who waits. */
export interface KeyView {
  readonly task: string;
  readonly key: string;
  /** Its per-key limit (`limits.per: 'key'`), when the key has an item: running of the limit, waiting parked. */
  readonly limit?: { readonly running: number; readonly waiting: number; readonly concurrency?: number };
  /**
   * Its order (`ordered: true`), when the key has been numbered: the last number taken, the number
   * whose turn it is, how many numbered jobs have not ended (`last − next + 1`), and since when its
   * turn has found no job (a gap, skipped after a grace).
   */
  readonly order?: { readonly last: number; readonly next: number; readonly pending: number; readonly gapSince?: number };
  /** Jobs waiting in the key's lines, in the order they will run: each with its place (its number, in an order). */
  readonly line: ReadonlyArray<{ readonly jobId: string; readonly place: number; readonly number?: number; readonly state?: JobState }>;
}

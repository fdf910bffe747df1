/**
 * The dashboard's JSON API, typed once: every route the server answers, what the page sends it and
 * what comes back, as JSON carries it (a NaN arrives as null, an undefined field not at all). The
 * server (`server/server.ts`) registers its routes from {@link API_ROUTES} and tsc holds each
 * answer to {@link Api}; the page (`page/api.ts`) asks by the same paths and gets the same types
 * back; the route test (test/unit/ui-server.test.ts) checks the server's real answers against
 * `api-shapes.ts`, the run-time half of this table.
 *
 * The page compiles this file (its tsconfig has no Node types): it imports types only, and only
 * from modules that compile without Node (`lib/track/job-record`, `lib/operate/answers`, the answer
 * types of `lib/operate/events`), never anything that runs on Node. Where the operator's answers
 * are declared here as the wire carries them, tsc checks that the server's values fit them.
 */

import type {
  BulkAction,
  BulkFilter,
  BulkResult,
  FlowCancelResult,
  FlowView,
  JobCounts,
  JobLogs,
  JobRelations,
  KeyView,
  RedriveResult,
  ReplayResult,
  RetryResult,
  RunNowResult,
  WorkersView,
} from '../lib/operate/answers';
import type { EventsView } from '../lib/operate/events';
import type { FiledRejection } from '../lib/operate/rejections';
import type { OperationEntry } from '../lib/track/operation-log';

export type {
  BulkAction,
  BulkResult,
  CountSource,
  FlowCancelResult,
  FlowView,
  JobCounts,
  JobRelations,
  RedriveResult,
  RelatedJob,
  RelatedJobs,
  RelatedState,
  ReplayResult,
  RetryResult,
  RunNowResult,
  StateCount,
  WorkersView,
  WorkerView,
} from '../lib/operate/answers';

export type { EventsView, SubscriberView } from '../lib/operate/events';

import type { Throughput } from '../lib/policy/throughput';
import type { CancelResult, JobRecord, JobState, TokenCompletion } from '../lib/track/job-record';
import type { QueueDayStats } from '../lib/track/stats-store';
import type { ArchiveReason } from '../lib/wire/archive-reasons';
import type { ArchiveRecord } from '../lib/wire/archive-record-shape';

export type { EventRef } from '../lib/wire/event-ref';
export type { CancelResult, JobRecord, QueueDayStats, Throughput };

/** The header a state-changing request carries the per-process token in. */
export const TOKEN_HEADER = 'x-taskworker-token';

/** The `<meta>` names in the page's shell: the token the page sends, and whether the dashboard is read-only. */
export const PAGE_META = { token: 'taskworker-token', mode: 'taskworker-mode' } as const;

/** Every answer other than 2xx: one sentence naming what was wrong. */
export interface ApiErrorBody {
  readonly error: string;
}

// ---------------------------------------------------------------- requests
// Type aliases, not interfaces: the page passes them where a record of query values is expected.

/** Which release version to read or act on; the one the dashboard started with when absent. */
export type VersionQuery = { readonly version?: string | undefined };

export type ThroughputQuery = VersionQuery & {
  /** 1..180, 60 when absent. */
  readonly minutes?: number | undefined;
};

export type HistoryQuery = VersionQuery & {
  /** A queue's days; `task` instead reads a task's. */
  readonly queue?: string | undefined;
  readonly task?: string | undefined;
  /** 1..90, 14 when absent. */
  readonly days?: number | undefined;
};

export type JobsQuery = VersionQuery & {
  /** A {@link JobState}; `archived` when absent. A string here: the page takes it from its URL, the server checks it. */
  readonly state?: string | undefined;
  readonly queue?: string | undefined;
  readonly task?: string | undefined;
  /** 1..200, 25 when absent. */
  readonly limit?: number | undefined;
  /** The previous page's `next`. */
  readonly cursor?: string | undefined;
  /** A tag's jobs in every state, newest first, from the tag index (state, queue and task are then not read). */
  readonly tag?: string | undefined;
};

/** The tabs' counts: every state's jobs on one queue, or on all when absent (the task filter is the list's only). */
export type JobCountsQuery = VersionQuery & { readonly queue?: string | undefined };

/** The job id travels as a query field, not a path segment: ids may hold `/`, `?`, `#`, `%`. */
export type JobQuery = VersionQuery & { readonly id: string };

/** One key of a task (`keys show`): the key as a query field, for the same reason as a job id. */
export type KeyQuery = VersionQuery & { readonly task: string; readonly key: string };

export type ArchiveQuery = VersionQuery & {
  /** An {@link ArchiveReason}; checked by the server. */
  readonly reason?: string | undefined;
  readonly task?: string | undefined;
  /** 1..500, 50 when absent. */
  readonly limit?: number | undefined;
};

export type ArchiveCountQuery = Omit<ArchiveQuery, 'limit'>;

export type ReplayRequest = VersionQuery & {
  readonly reason?: string | undefined;
  readonly task?: string | undefined;
  /** Only these archived messages. */
  readonly messageIds?: readonly string[];
  /** At most this many (1..100000, 10000 when absent). */
  readonly limit?: number;
};

/**
 * A bulk operation (`taskworker jobs bulk`, lib/operate/bulk.ts): the action, its filter, and
 * whether it only counts (`dryRun`: the page's confirm step names the count it gives).
 */
export type BulkRequest = VersionQuery &
  Partial<Readonly<Record<keyof BulkFilter, string | number>>> & {
    readonly action: BulkAction;
    readonly dryRun?: boolean;
    /** At most this many actions a second. */
    readonly ratePerSecond?: number;
    /** At most this many actions. */
    readonly limit?: number;
  };

export type BulkLogQuery = VersionQuery & {
  /** YYYY-MM-DD (UTC). @defaultValue today */
  readonly day?: string;
};

export type RedriveRequest = VersionQuery & {
  /** Every queue's dead-letter queue when absent. */
  readonly queue?: string | undefined;
};

export type CancelRequest = VersionQuery & { readonly id: string };

/** Retries an archived job: its archived message back to its queue, attempts reset (`archive replay` of that one job). */
export type RetryRequest = VersionQuery & { readonly id: string };

/** Runs a job parked until later now: made due now and sent to its queue by the sweep's path. */
export type RunNowRequest = VersionQuery & { readonly id: string };
/**
 * A token's completion as lib/settle/step-tokens.ts answers it (spelled out here: that module runs on
 * Node, this file is read by the page too): completed (and sent), or refused saying why.
 */
export type TokenResult =
  | { readonly outcome: 'completed'; readonly jobId: string; readonly sent: boolean }
  | Exclude<TokenCompletion, { readonly outcome: 'completed' }>;
/** A token a job waits for (`ctx.step.waitForToken`) and the value it resumes with (JSON; none: `null`). */
export type TokenRequest = VersionQuery & { readonly token: string; readonly value?: unknown };

/** Pauses or resumes a queue, or sets or resets its priority and SLA over the config (`taskworker queues …`). */
export type QueueControlRequest = VersionQuery & {
  readonly queue: string;
  readonly action: 'pause' | 'resume' | 'set' | 'reset';
  /**
   * With `set`: 1..100. A string is what an operator typed that is not a number: the server
   * checks it as it checks a number and names it in its refusal.
   */
  readonly priority?: number | string;
  /** With `set`: seconds, 1..1209600 (a string as for `priority`). */
  readonly slaSeconds?: number | string;
};

/** A queue's controls after the change. */
export interface QueueControlResult {
  readonly queue: string;
  readonly revision: number;
  readonly control: Pick<
    QueueStatus,
    'priority' | 'configuredPriority' | 'slaSeconds' | 'configuredSlaSeconds' | 'overridden' | 'pausedAt'
  >;
  readonly trigger?: { readonly switched: number } | { readonly error: string };
}

/** Cancels the job and every job waiting for it, transitively. */
export type FlowCancelRequest = VersionQuery & { readonly id: string };

export type PublishRequest = VersionQuery & {
  readonly task: string;
  /** The task's own queue when absent. */
  readonly queue?: string;
  readonly payload?: unknown;
  /** 0..the longest schedule. */
  readonly delaySeconds?: number;
  readonly appData?: unknown;
};

// ---------------------------------------------------------------- answers

/** The dashboard and the version shown: what every page is drawn from. */
export interface Meta {
  readonly app: string;
  readonly version: string;
  /** The versions the picker offers. */
  readonly versions: readonly string[];
  readonly readOnly: boolean;
  /** Against a running `taskworker dev`, not AWS. */
  readonly local: boolean;
  readonly states: readonly JobState[];
  readonly reasons: readonly ArchiveReason[];
  readonly queues: readonly QueueSummary[];
  readonly tasks: readonly TaskSummary[];
}

export interface QueueSummary {
  readonly name: string;
  readonly priority: number;
  readonly slaSeconds: number;
  /** The queue's tracking mode: full, failures or off. */
  readonly tracking: string;
  readonly maxReceiveCount: number;
}

export interface TaskSummary {
  readonly name: string;
  readonly queue: string;
  readonly maxRetries: number;
  /** The task has a `validate`: the publish form's payload is checked by it. */
  readonly validates: boolean;
}

/** Local dispatcher processes of a running `taskworker dev`. */
export interface LocalDispatchers {
  readonly pid: number;
  readonly alive: number;
  readonly died: number;
}

/** On AWS: the dispatcher function's recent invocations (CloudWatch). */
export interface RecentInvocationCounts {
  readonly functionName: string;
  readonly minutes: number;
  readonly invocations: number;
  readonly errors: number;
  readonly maxConcurrent: number;
  /** Never set here: lets the page tell the two answers apart by `unavailable`. */
  readonly unavailable?: never;
}

export interface QueueStatus {
  readonly queue: string;
  /** The priority in force: an operator's override (`overridden`), else the config's. */
  readonly priority: number;
  readonly configuredPriority: number;
  /** The SLA in force, and the config's (seconds). */
  readonly configuredSlaSeconds: number;
  /** The fields an operator set over the config (`taskworker queues set`). */
  readonly overridden: ReadonlyArray<'priority' | 'slaSeconds'>;
  /** Epoch ms since when it is paused; absent when it is not. */
  readonly pausedAt?: number;
  readonly depth: { readonly visible: number; readonly inFlight: number; readonly delayed: number };
  readonly deadLetter: number;
  /** Seconds; absent where CloudWatch is not available. */
  readonly oldestAgeSeconds?: number | undefined;
  readonly slaSeconds: number;
  /** Today's wait (publish → start), ms; null when nothing started today (the operator's NaN: JSON has none). */
  readonly waitP50Ms: number | null;
  readonly waitP99Ms: number | null;
  /** Absent before the queue's first activity of the day. */
  readonly today?: QueueDayStats | undefined;
}

/** The overview: `taskworker status` of the version, and what runs it. */
export interface Status {
  readonly version: string;
  /** YYYY-MM-DD (UTC) the counters are of. */
  readonly day: string;
  readonly queues: readonly QueueStatus[];
  readonly archive: number;
  /** Nothing visible, in flight or delayed on any queue. */
  readonly drained: boolean;
  /** Rate-limit pauses in force (RateLimitedError): scope (`task:…`, `key:…`, `queue:…`) and epoch ms it ends, soonest first. */
  readonly rateLimits: readonly { readonly scope: string; readonly until: number }[];
  /** The server's clock, epoch ms. */
  readonly now: number;
  readonly localDispatchers?: LocalDispatchers;
  /** CloudWatch is an extra: when it refuses, why, and the rest of the overview still answers. */
  readonly invocations?: RecentInvocationCounts | { readonly unavailable: string };
}

export interface JobsPage {
  readonly jobs: readonly JobRecord[];
  /** Where the next page starts; absent on the last page. */
  readonly next?: string;
  /** The state has no index: one page of what a table scan found first, no further pages. */
  readonly scanned?: boolean;
  /**
   * Running jobs, from the live workers' last beats (every 15 s), confirmed running now: `running`
   * in all (the page lists the newest first), `uncarried` more the beats had no room to name. No further pages.
   */
  readonly fromWorkers?: { readonly running: number; readonly uncarried: number };
}

/** The archive record a message carries beside its body (SQS message attributes, read back): the wire format's one definition. */
export type ArchiveRecordView = ArchiveRecord;

export interface ArchivedMessage {
  readonly messageId: string;
  /** Absent for a message that reached the archive without one. */
  readonly record?: ArchiveRecordView | undefined;
  /** The envelope as it was archived (JSON text): an archived job's payload is here. */
  readonly body: string;
}

/** A job, and for an archived one its archived message (the jobs table keeps a payload's digest, not the payload). */
export interface JobView {
  /** The id's own record; absent when it has none but messages that carried it were archived (`filedUnderMessageIds`). */
  readonly job?: JobRecord;
  /**
   * Messages that carried the id and never ran as that job (unknown task, id conflict, malformed),
   * each kept under its own message id, with why: shown apart from `job`, never merged into it.
   */
  readonly filedUnderMessageIds?: readonly FiledRejection[];
  readonly archived?: ArchivedMessage;
  /** What the job waits for and what waits for it, with their states (absent for a job in no flow). */
  readonly relations?: JobRelations;
  /**
   * Why a result the dispatcher kept in S3 (`job.resultRef`) is not in `job.result`: over the page's
   * 1 MiB, or the read failed (what S3 said). Read, it is in `job.result` like a small one.
   */
  readonly resultUnread?: string;
}

export interface ArchiveCount {
  readonly count: number;
  /** The count stopped at its cap: there are at least `count`. */
  readonly capped: boolean;
}

export interface Published {
  readonly jobId: string;
  readonly messageId: string;
  readonly queue: string;
  /** For a job published to run later: when it may start, epoch ms. */
  readonly runAt?: number;
}

// ---------------------------------------------------------------- the table

/** One route: its method, what it is sent (a GET's query, a POST's JSON body) and what it answers with 2xx. */
interface Route<M extends 'GET' | 'POST', Sent, Answer> {
  readonly method: M;
  readonly request: Sent;
  readonly response: Answer;
}

/** Every route of the dashboard's JSON API, by path. */
export interface Api {
  readonly '/api/meta': Route<'GET', VersionQuery, Meta>;
  readonly '/api/status': Route<'GET', VersionQuery, Status>;
  /** A queue's (or a task's) days, oldest first; days without activity are left out. */
  readonly '/api/history': Route<'GET', HistoryQuery, readonly QueueDayStats[]>;
  readonly '/api/jobs': Route<'GET', JobsQuery, JobsPage>;
  /** Every state's count for the jobs page's tabs, each from what counts it without a scan (lib/operate/job-counts.ts). */
  readonly '/api/jobs/counts': Route<'GET', JobCountsQuery, JobCounts>;
  readonly '/api/job': Route<'GET', JobQuery, JobView>;
  /** The flow a job belongs to: the jobs linked to it both ways, transitively, read up to a bound. */
  readonly '/api/flow': Route<'GET', JobQuery, FlowView>;
  /** One key of a task (`taskworker keys show`): its limit, its order, the jobs waiting in its line. */
  readonly '/api/key': Route<'GET', KeyQuery, KeyView>;
  /** The job's log lines (`jobs logs`): its body's `ctx.log` and `console`, and the dispatcher's lines naming it. */
  readonly '/api/job/logs': Route<'GET', JobQuery, JobLogs>;
  readonly '/api/archive': Route<'GET', ArchiveQuery, readonly ArchivedMessage[]>;
  readonly '/api/archive/count': Route<'GET', ArchiveCountQuery, ArchiveCount>;
  /** An archived job back to its queue, attempts reset: `archive replay` of that one job. */
  readonly '/api/job/retry': Route<'POST', RetryRequest, RetryResult>;
  readonly '/api/archive/replay': Route<'POST', ReplayRequest, ReplayResult>;
  readonly '/api/dlq/redrive': Route<'POST', RedriveRequest, readonly RedriveResult[]>;
  /** Cancel, replay or delete many jobs by filter, or (dryRun) count them; a run is logged. */
  readonly '/api/bulk': Route<'POST', BulkRequest, BulkResult>;
  /** A day's bulk operations: who ran which, on what, how many. */
  readonly '/api/bulk/log': Route<'GET', BulkLogQuery, readonly OperationEntry[]>;
  readonly '/api/job/cancel': Route<'POST', CancelRequest, CancelResult>;
  readonly '/api/job/run-now': Route<'POST', RunNowRequest, RunNowResult>;
  /** `taskworker tokens complete`: the waiting job resumes with the value; a second completion is refused naming the first. */
  readonly '/api/token/complete': Route<'POST', TokenRequest, TokenResult>;
  readonly '/api/flow/cancel': Route<'POST', FlowCancelRequest, FlowCancelResult>;
  readonly '/api/publish': Route<'POST', PublishRequest, Published>;
  readonly '/api/queue/control': Route<'POST', QueueControlRequest, QueueControlResult>;
  /** The dispatcher invocations working now and those that vanished, with their jobs checked against the jobs table. */
  readonly '/api/workers': Route<'GET', VersionQuery, WorkersView>;
  /** Jobs started, succeeded and archived per queue and minute (CloudWatch on AWS, the stats table's minute counters locally). */
  readonly '/api/throughput': Route<'GET', ThroughputQuery, Throughput>;
  /**
   * `taskworker events`: the events the app emits and those it receives from other apps, each with
   * its subscriber tasks in this app, their queues and today's counts (lib/operate/events.ts).
   */
  readonly '/api/events': Route<'GET', VersionQuery, EventsView>;
}

export type ApiPath = keyof Api;
export type GetPath = { [P in ApiPath]: Api[P]['method'] extends 'GET' ? P : never }[ApiPath];
export type PostPath = Exclude<ApiPath, GetPath>;
export type ApiRequest<P extends ApiPath> = Api[P]['request'];
export type ApiResponse<P extends ApiPath> = Api[P]['response'];

/** The table's routes and methods at run time: what the server registers, and what the route test holds it to. */
export const API_ROUTES: { readonly [P in ApiPath]: Api[P]['method'] } = {
  '/api/meta': 'GET',
  '/api/status': 'GET',
  '/api/history': 'GET',
  '/api/jobs': 'GET',
  '/api/jobs/counts': 'GET',
  '/api/job': 'GET',
  '/api/flow': 'GET',
  '/api/key': 'GET',
  '/api/job/logs': 'GET',
  '/api/archive': 'GET',
  '/api/archive/count': 'GET',
  '/api/job/retry': 'POST',
  '/api/archive/replay': 'POST',
  '/api/dlq/redrive': 'POST',
  '/api/bulk': 'POST',
  '/api/bulk/log': 'GET',
  '/api/job/cancel': 'POST',
  '/api/job/run-now': 'POST',
  '/api/token/complete': 'POST',
  '/api/flow/cancel': 'POST',
  '/api/publish': 'POST',
  '/api/queue/control': 'POST',
  '/api/workers': 'GET',
  '/api/throughput': 'GET',
  '/api/events': 'GET',
};

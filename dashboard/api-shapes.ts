/**
 * The run-time half of the shared API table (`api-types.ts`): for every route, a check of the JSON
 * it answers. tsc holds each check to the table's type (a field checked as another type than the
 * table gives it, a missing required field, or a field the type does not have, fails to compile),
 * so the checks follow the table; the route test runs them on the server's real answers, so the
 * server's JSON follows the table too — including what tsc cannot see: what JSON does to a value
 * (NaN becomes null, undefined disappears) and a value the server casts.
 *
 * Not imported by the page: its bundle would carry checks the route test already makes.
 */

import type { SubscriberView } from '../lib/operate/events';
import type { FiledRejection } from '../lib/operate/rejections';
import type { JobLogEntry } from '../lib/track/job-logs';
import { type HistoryWhat, JOB_STATES, type JobRecord } from '../lib/track/job-record';
import type { MinuteCounts, QueueDayStats, TaskCost } from '../lib/track/stats-store';
import { ARCHIVE_REASONS } from '../lib/wire/archive-reasons';
import type { EventRef } from '../lib/wire/event-ref';
import type {
  ApiPath,
  ApiResponse,
  ArchivedMessage,
  ArchiveRecordView,
  CountSource,
  JobRelations,
  QueueStatus,
  RelatedJob,
  RelatedJobs,
  RelatedState,
  ReplayResult,
  StateCount,
  WorkerView,
} from './api-types';

/** A check of one JSON value: the problems found, each naming where (`at`). */
export interface Shape<T> {
  (value: unknown, at: string): string[];
  /** Never set: ties the check to the type it checks, so tsc refuses it where another type is declared. */
  readonly checks?: T;
}

const shown = (value: unknown) => (value === undefined ? 'nothing' : JSON.stringify(value));

function primitive<T>(name: string, test: (value: unknown) => boolean): Shape<T> {
  return (value, at) => (test(value) ? [] : [`${at}: expected ${name}, got ${shown(value)}`]);
}

export const string: Shape<string> = primitive('a string', (v) => typeof v === 'string');
export const number: Shape<number> = primitive('a number', (v) => typeof v === 'number');
export const boolean: Shape<boolean> = primitive('a boolean', (v) => typeof v === 'boolean');

/** One of the given values (a union of literals, as `JOB_STATES` lists them). */
export function member<const V extends string>(values: readonly V[]): Shape<V> {
  return primitive(`one of ${values.join(', ')}`, (v) => (values as readonly unknown[]).includes(v));
}

/** The value, or null (a number the server had as NaN: JSON has no NaN). */
export function orNull<T>(shape: Shape<T>): Shape<T | null> {
  return (value, at) => (value === null ? [] : shape(value, at));
}

/** A field JSON may leave out (an optional field, or one the server had as undefined). */
export function optional<T>(shape: Shape<T>): Shape<T | undefined> {
  return (value, at) => (value === undefined ? [] : shape(value, at));
}

/** A list, every item checked. */
export function array<T>(item: Shape<T>): Shape<readonly T[]> {
  return (value, at) =>
    Array.isArray(value) ? value.flatMap((v, i) => item(v, `${at}[${i}]`)) : [`${at}: expected a list, got ${shown(value)}`];
}

/** A pair (a JSON list of exactly two), each checked. */
export function pair<A, B>(first: Shape<A>, second: Shape<B>): Shape<readonly [A, B]> {
  return (value, at) =>
    Array.isArray(value) && value.length === 2
      ? [...first(value[0], `${at}[0]`), ...second(value[1], `${at}[1]`)]
      : [`${at}: expected a pair, got ${shown(value)}`];
}

/** An object used as a map: every value checked (the keys are the data's, not the type's). */
export function record<T>(item: Shape<T>): Shape<Readonly<Record<string, T>>> {
  return (value, at) =>
    isObject(value) ? Object.entries(value).flatMap(([k, v]) => item(v, `${at}.${k}`)) : [`${at}: expected an object, got ${shown(value)}`];
}

/** Any of the shapes (a union); the problems of the closest one when none fits. */
export function oneOf<A extends readonly unknown[]>(...shapes: { readonly [I in keyof A]: Shape<A[I]> }): Shape<A[number]> {
  return (value, at) => {
    const found = shapes.map((shape) => shape(value, at));
    return found.some((problems) => problems.length === 0) ? [] : found.reduce((a, b) => (b.length < a.length ? b : a));
  };
}

type RequiredKeys<T> = { [K in keyof T]-?: Pick<T, K> extends Required<Pick<T, K>> ? K : never }[keyof T];
type OptionalKeys<T> = Exclude<keyof T, RequiredKeys<T>>;

/** Checks of an object's fields: every required field of T, any of its optional ones, none it does not have. */
export type Fields<T> = { readonly [K in RequiredKeys<T>]: Shape<T[K]> } & { readonly [K in OptionalKeys<T>]?: Shape<T[K]> };

/** An object of type T (given explicitly: the check is written against the type, not inferred from itself). */
export function object<T>(fields: Fields<NoInfer<T>>): Shape<T> {
  return (value, at) =>
    isObject(value)
      ? Object.entries(fields as Record<string, Shape<unknown>>).flatMap(([name, shape]) => shape(value[name], `${at}.${name}`))
      : [`${at}: expected an object, got ${shown(value)}`];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------- the answers' parts

/** Every {@link HistoryWhat} (the model has the type, not a list): tsc refuses a missing or unknown one. */
const HISTORY: Readonly<Record<HistoryWhat, true>> = {
  queued: true,
  started: true,
  'took-over': true,
  succeeded: true,
  retrying: true,
  'retry-after': true,
  'rate-limited': true,
  archived: true,
  'skipped-duplicate': true,
  scheduled: true,
  waiting: true,
  released: true,
  'handed-back': true,
  cancelled: true,
  'cancel-requested': true,
  deduplicated: true,
  sleeping: true,
  'waiting-token': true,
  'token-completed': true,
  'waiting-event': true,
  'event-received': true,
  'waiting-key': true,
};

const durations = object<QueueDayStats['wait']>({ count: number, sum: number, sumSquares: number, buckets: record(number) });

const dayStats = object<QueueDayStats>({
  queue: string,
  day: string,
  counters: record(number),
  archived: record(number),
  wait: durations,
  run: durations,
  cost: optional(object<TaskCost>({ lambdaMbMs: number, sqsRequests: number, writeUnits: number })),
});

const jobRecord = object<JobRecord>({
  jobId: string,
  task: string,
  queue: string,
  version: string,
  state: member(JOB_STATES),
  attempt: number,
  retryAfters: optional(number),
  updatedAt: number,
  reason: optional(member(ARCHIVE_REASONS)),
  publishedAt: optional(number),
  finishedAt: optional(number),
  runAt: optional(number),
  result: optional(string),
  resultBytes: optional(number),
  resultRef: optional(
    object<NonNullable<JobRecord['resultRef']>>({ bucket: string, key: string, bytes: number, sha256: optional(string) }),
  ),
  lastError: optional(object<NonNullable<JobRecord['lastError']>>({ type: string, message: string, stack: optional(string) })),
  history: array(
    object<JobRecord['history'][number]>({ what: member(Object.keys(HISTORY) as HistoryWhat[]), when: number, attempt: optional(number) }),
  ),
  dependsOn: optional(array(string)),
  awaits: optional(number),
  memberOf: optional(object<NonNullable<JobRecord['memberOf']>>({ id: string, size: number, index: number })),
  onDependencyFailure: optional(member(['fail', 'ignore'])),
  dependents: optional(array(object<NonNullable<JobRecord['dependents']>[number]>({ id: string, index: number, size: number }))),
  tags: optional(array(string)),
  key: optional(string),
  payload: optional(string),
  duplicateOf: optional(string),
  cancelRequestedAt: optional(number),
  progress: optional(string),
  progressAt: optional(number),
  steps: optional(
    array(object<NonNullable<JobRecord['steps']>[number]>({ name: string, result: optional(string), attempt: number, at: number })),
  ),
  event: optional(object<EventRef>({ id: string, name: string, source: optional(string), emittedAt: number })),
});

const relatedState = member<RelatedState>([...JOB_STATES, 'unknown']);

const relatedJobFields = { jobId: string, state: relatedState, task: optional(string), reason: optional(member(ARCHIVE_REASONS)) };

const relatedJob = object<RelatedJob>(relatedJobFields);

const relatedFields = { total: number, read: number, counts: record(number), jobs: array(relatedJob) };

const relatedJobs = object<RelatedJobs>(relatedFields);

const relations = object<JobRelations>({
  dependencies: optional(
    object<NonNullable<JobRelations['dependencies']>>({ ...relatedFields, complete: boolean, firstFailure: optional(string) }),
  ),
  dependents: optional(relatedJobs),
});

const archiveRecord = object<ArchiveRecordView>({
  reason: member(ARCHIVE_REASONS),
  detail: string,
  attempts: number,
  queue: string,
  messageId: string,
  sentTimestamp: number,
  archivedAt: number,
  workerId: string,
  task: optional(string),
  jobId: optional(string),
  errorType: optional(string),
  redact: optional(array(string)),
});

const archivedMessage = object<ArchivedMessage>({ messageId: string, body: string, record: optional(archiveRecord) });

const queueStatus = object<QueueStatus>({
  queue: string,
  priority: number,
  configuredPriority: number,
  configuredSlaSeconds: number,
  overridden: array(member(['priority', 'slaSeconds'])),
  pausedAt: optional(number),
  depth: object<QueueStatus['depth']>({ visible: number, inFlight: number, delayed: number }),
  deadLetter: number,
  slaSeconds: number,
  oldestAgeSeconds: optional(number),
  waitP50Ms: orNull(number),
  waitP99Ms: orNull(number),
  today: optional(dayStats),
});

const replayResult = object<ReplayResult>({
  replayed: number,
  skipped: array(object<ReplayResult['skipped'][number]>({ messageId: string, why: string })),
});

type CancelAnswer = ApiResponse<'/api/job/cancel'>;
type RetryAnswer = ApiResponse<'/api/job/retry'>;
type RunNowAnswer = ApiResponse<'/api/job/run-now'>;
type TokenAnswer = ApiResponse<'/api/token/complete'>;
type ControlAnswer = ApiResponse<'/api/queue/control'>;
type StatusAnswer = ApiResponse<'/api/status'>;
type WorkersAnswer = ApiResponse<'/api/workers'>;
type EventsAnswer = ApiResponse<'/api/events'>;

const subscriber = object<SubscriberView>({
  task: string,
  queue: string,
  today: optional(object<NonNullable<SubscriberView['today']>>({ succeeded: number, retried: number, archived: number })),
});

// ---------------------------------------------------------------- the table

/** Every route's answer, checked: one entry per route of the table (tsc refuses a missing or extra one). */
export const API_SHAPES: { readonly [P in ApiPath]: Shape<ApiResponse<P>> } = {
  '/api/meta': object<ApiResponse<'/api/meta'>>({
    app: string,
    version: string,
    versions: array(string),
    readOnly: boolean,
    local: boolean,
    states: array(member(JOB_STATES)),
    reasons: array(member(ARCHIVE_REASONS)),
    queues: array(
      object<ApiResponse<'/api/meta'>['queues'][number]>({
        name: string,
        priority: number,
        slaSeconds: number,
        tracking: string,
        maxReceiveCount: number,
      }),
    ),
    tasks: array(
      object<ApiResponse<'/api/meta'>['tasks'][number]>({ name: string, queue: string, maxRetries: number, validates: boolean }),
    ),
  }),
  '/api/status': object<StatusAnswer>({
    version: string,
    day: string,
    queues: array(queueStatus),
    archive: number,
    drained: boolean,
    rateLimits: array(object<StatusAnswer['rateLimits'][number]>({ scope: string, until: number })),
    now: number,
    localDispatchers: optional(object<NonNullable<StatusAnswer['localDispatchers']>>({ pid: number, alive: number, died: number })),
    invocations: optional(
      oneOf(
        object<Exclude<NonNullable<StatusAnswer['invocations']>, { unavailable: string }>>({
          functionName: string,
          minutes: number,
          invocations: number,
          errors: number,
          maxConcurrent: number,
        }),
        object<{ readonly unavailable: string }>({ unavailable: string }),
      ),
    ),
  }),
  '/api/history': array(dayStats),
  '/api/throughput': object<ApiResponse<'/api/throughput'>>({
    source: member(['cloudwatch', 'stats']),
    minutes: array(string),
    queues: record(array(object<MinuteCounts>({ started: number, succeeded: number, archived: number }))),
  }),
  '/api/jobs': object<ApiResponse<'/api/jobs'>>({
    jobs: array(jobRecord),
    next: optional(string),
    scanned: optional(boolean),
    fromWorkers: optional(object<NonNullable<ApiResponse<'/api/jobs'>['fromWorkers']>>({ running: number, uncarried: number })),
  }),
  '/api/jobs/counts': object<ApiResponse<'/api/jobs/counts'>>({
    day: string,
    cap: number,
    states: array(
      object<StateCount>({
        state: member(JOB_STATES),
        count: orNull(number),
        atLeast: boolean,
        source: member<CountSource>(['index', 'workers', 'queue', 'today']),
      }),
    ),
  }),
  '/api/job': object<ApiResponse<'/api/job'>>({
    job: optional(jobRecord),
    archived: optional(archivedMessage),
    relations: optional(relations),
    resultUnread: optional(string),
    filedUnderMessageIds: optional(
      array(object<FiledRejection>({ messageId: string, reason: optional(member(ARCHIVE_REASONS)), why: string, record: jobRecord })),
    ),
  }),
  '/api/key': object<ApiResponse<'/api/key'>>({
    task: string,
    key: string,
    limit: optional(
      object<NonNullable<ApiResponse<'/api/key'>['limit']>>({ running: number, waiting: number, concurrency: optional(number) }),
    ),
    order: optional(
      object<NonNullable<ApiResponse<'/api/key'>['order']>>({ last: number, next: number, pending: number, gapSince: optional(number) }),
    ),
    line: array(
      object<ApiResponse<'/api/key'>['line'][number]>({
        jobId: string,
        place: number,
        number: optional(number),
        state: optional(member(JOB_STATES)),
      }),
    ),
  }),
  '/api/flow': object<ApiResponse<'/api/flow'>>({
    root: string,
    jobs: array(object<ApiResponse<'/api/flow'>['jobs'][number]>({ ...relatedJobFields, depth: number })),
    counts: record(number),
    complete: boolean,
    edges: array(pair(string, string)),
  }),
  '/api/job/logs': object<ApiResponse<'/api/job/logs'>>({
    jobId: string,
    where: string,
    from: number,
    to: number,
    ended: boolean,
    lines: array(
      object<JobLogEntry>({
        time: string,
        level: string,
        message: string,
        source: member(['task', 'dispatcher']),
        attempt: optional(number),
        fields: record((_value: unknown, _at: string) => []),
      }),
    ),
  }),
  '/api/archive': array(archivedMessage),
  '/api/archive/count': object<ApiResponse<'/api/archive/count'>>({ count: number, capped: boolean }),
  '/api/archive/replay': replayResult,
  '/api/job/retry': oneOf(
    object<Extract<RetryAnswer, { outcome: 'retried' }>>({ outcome: member(['retried']), queue: string, record: jobRecord }),
    object<Extract<RetryAnswer, { outcome: 'not-archived' }>>({ outcome: member(['not-archived']), record: jobRecord }),
    object<Extract<RetryAnswer, { outcome: 'not-in-archive' }>>({ outcome: member(['not-in-archive']), record: jobRecord }),
    object<Extract<RetryAnswer, { outcome: 'skipped' }>>({ outcome: member(['skipped']), why: string, record: jobRecord }),
    object<Extract<RetryAnswer, { outcome: 'unknown' }>>({ outcome: member(['unknown']) }),
  ),
  '/api/dlq/redrive': array(
    object<ApiResponse<'/api/dlq/redrive'>[number]>({
      queue: string,
      messages: number,
      via: optional(member(['move-task', 'client'])),
      status: optional(string),
    }),
  ),
  '/api/bulk': object<ApiResponse<'/api/bulk'>>({
    action: member(['cancel', 'replay', 'delete']),
    filter: object<ApiResponse<'/api/bulk'>['filter']>({
      task: optional(string),
      queue: optional(string),
      state: optional(member(JOB_STATES)),
      tag: optional(string),
      key: optional(string),
      reason: optional(member(ARCHIVE_REASONS)),
      since: optional(number),
      until: optional(number),
    }),
    dryRun: boolean,
    matched: number,
    capped: boolean,
    done: number,
    skipped: array(object<ApiResponse<'/api/bulk'>['skipped'][number]>({ id: string, why: string })),
    sample: array(
      object<ApiResponse<'/api/bulk'>['sample'][number]>({
        id: string,
        task: optional(string),
        queue: optional(string),
        what: optional(string),
        at: optional(number),
      }),
    ),
    startedAt: number,
    endedAt: number,
  }),
  '/api/bulk/log': array(
    object<ApiResponse<'/api/bulk/log'>[number]>({
      at: number,
      who: string,
      action: string,
      filter: record(oneOf(string, number)),
      matched: number,
      done: number,
      skipped: number,
      ratePerSecond: optional(number),
      seconds: number,
    }),
  ),
  '/api/job/cancel': oneOf(
    object<Extract<CancelAnswer, { outcome: 'cancelled' }>>({ outcome: member(['cancelled']), record: jobRecord }),
    object<Extract<CancelAnswer, { outcome: 'requested' }>>({ outcome: member(['requested']), record: jobRecord }),
    object<Extract<CancelAnswer, { outcome: 'not-scheduled' }>>({ outcome: member(['not-scheduled']), record: jobRecord }),
    object<Extract<CancelAnswer, { outcome: 'unknown' }>>({ outcome: member(['unknown']) }),
  ),
  '/api/job/run-now': oneOf(
    object<Extract<RunNowAnswer, { outcome: 'sent' }>>({ outcome: member(['sent']), queue: string, record: jobRecord }),
    object<Extract<RunNowAnswer, { outcome: 'due' }>>({ outcome: member(['due']), record: jobRecord }),
    object<Extract<RunNowAnswer, { outcome: 'sweeping' }>>({ outcome: member(['sweeping']), record: jobRecord }),
    object<Extract<RunNowAnswer, { outcome: 'announced' }>>({ outcome: member(['announced']), record: jobRecord }),
    object<Extract<RunNowAnswer, { outcome: 'not-scheduled' }>>({ outcome: member(['not-scheduled']), record: jobRecord }),
    object<Extract<RunNowAnswer, { outcome: 'unknown' }>>({ outcome: member(['unknown']) }),
  ),
  '/api/token/complete': oneOf(
    object<Extract<TokenAnswer, { outcome: 'completed' }>>({ outcome: member(['completed']), jobId: string, sent: boolean }),
    object<Extract<TokenAnswer, { outcome: 'completed-already' }>>({
      outcome: member(['completed-already']),
      jobId: string,
      completedAt: number,
      value: optional(string),
    }),
    object<Extract<TokenAnswer, { outcome: 'not-waiting' }>>({
      outcome: member(['not-waiting']),
      jobId: string,
      state: member(JOB_STATES),
    }),
    object<Extract<TokenAnswer, { outcome: 'unknown' }>>({ outcome: member(['unknown']) }),
  ),
  '/api/flow/cancel': object<ApiResponse<'/api/flow/cancel'>>({
    root: string,
    cancelled: array(string),
    notCancelled: array(object<ApiResponse<'/api/flow/cancel'>['notCancelled'][number]>({ jobId: string, state: member(JOB_STATES) })),
    unknown: boolean,
    complete: boolean,
  }),
  '/api/publish': object<ApiResponse<'/api/publish'>>({ jobId: string, messageId: string, queue: string, runAt: optional(number) }),
  '/api/queue/control': object<ControlAnswer>({
    queue: string,
    revision: number,
    control: object<ControlAnswer['control']>({
      priority: number,
      configuredPriority: number,
      slaSeconds: number,
      configuredSlaSeconds: number,
      overridden: array(member(['priority', 'slaSeconds'])),
      pausedAt: optional(number),
    }),
    trigger: optional(oneOf(object<{ switched: number }>({ switched: number }), object<{ error: string }>({ error: string }))),
  }),
  '/api/workers': object<WorkersAnswer>({
    now: number,
    live: number,
    vanished: number,
    workers: array(
      object<WorkerView>({
        id: string,
        workerId: string,
        role: string,
        place: object<WorkerView['place']>({ function: optional(string), requestId: optional(string), container: optional(string) }),
        status: member(['live', 'vanished']),
        startedAt: number,
        deadline: number,
        heardAt: number,
        weights: optional(record(number)),
        weightsAt: optional(number),
        jobs: array(
          object<WorkerView['jobs'][number]>({
            jobId: string,
            state: string,
            task: optional(string),
            queue: optional(string),
            leaseOwner: optional(string),
            heldByWorker: boolean,
            fate: string,
          }),
        ),
        moreJobs: number,
      }),
    ),
  }),
  '/api/events': object<EventsAnswer>({
    version: string,
    emits: array(object<EventsAnswer['emits'][number]>({ name: string, description: optional(string), subscribers: array(subscriber) })),
    receives: array(
      object<EventsAnswer['receives'][number]>({ app: string, version: string, name: string, subscribers: array(subscriber) }),
    ),
  }),
};

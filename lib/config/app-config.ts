import { ConfigError } from '../errors';
import { HOOK_NAMES, type JobHooks } from '../hook-types';
import { MAX_LAMBDA_TIMEOUT_SECONDS } from '../layout/aws-limits';
import { DEFAULT_OFFLOAD_ABOVE_BYTES } from '../layout/payloads';
import { deadLetterQueueName, MAX_QUEUE_RETENTION_SECONDS } from '../layout/queues';
import {
  MAX_BATCH_ENTRIES,
  MAX_QUEUE_NAME_CHARS,
  MAX_RETENTION_SECONDS,
  MAX_VISIBILITY_SECONDS,
  SQS_MESSAGE_LIMIT_BYTES,
} from '../layout/sqs-limits';
import {
  type EventDeclaration,
  type EventDeclarationInput,
  resolveEvents,
  resolveSubscriberAccounts,
  resolveSubscriptions,
  type SubscriptionConfig,
  type SubscriptionInput,
} from './event-config';
import { type Limits, resolveLimits } from './limit-config';
import { resolveSchedules, type ScheduleConfig, type ScheduleInput } from './schedule-config';

/** Names of the built-in queue selectors. */
export const SELECTOR_NAMES = ['sla-aware', 'reduced-lottery', 'reduced-lottery-gqa', 'lottery', 'strict', 'round-robin'] as const;
export type SelectorName = (typeof SELECTOR_NAMES)[number];

/**
 * Where task bodies run. `threads` (default): each in a pool thread, terminated `killGraceMs` after
 * its limit, which stops even a CPU-bound loop. `inline`: on the dispatcher's own thread, without
 * the hop to a thread (BENCHMARKS.md: about 1.6× the no-op throughput); the AbortSignal still
 * fires at the limit, but a body that ignores it cannot be stopped, and a CPU-bound one stalls the
 * loop, its heartbeats and every other task. For trusted, cooperative, I/O-bound tasks only.
 */
export const ISOLATION_MODES = ['threads', 'inline'] as const;
export type IsolationMode = (typeof ISOLATION_MODES)[number];

/** How much a queue's jobs are recorded in DynamoDB: the cost the user chooses per queue. */
export const TRACKING_MODES = ['full', 'failures', 'off'] as const;
/**
 * - `full`: a claim before every run (duplicate deliveries never run twice) and every transition.
 * - `failures`: a record only for retries and archives; no claim.
 * - `off`: no job records (stats are still kept).
 */
export type TrackingMode = (typeof TRACKING_MODES)[number];

/** One priority queue, as written in the config file. */
export interface QueueConfigInput {
  /** Queue name inside the app, e.g. `high_priority`. Lowercase letters, digits, `_`. */
  readonly name: string;
  /** 1..100, higher wins the lottery more often. */
  readonly priority: number;
  /** Messages per receive, 1..10. @defaultValue 10 */
  readonly batchSize?: number;
  /** Visibility timeout in seconds, 1..43200. Every task on this queue must fit in it. @defaultValue 60 */
  readonly visibilityTimeoutSeconds?: number;
  /** Long-poll wait for receives on this queue, 0..20 s. @defaultValue 1 */
  readonly longPollSeconds?: number;
  /** Receives on this queue per selection (Kale's num_iterations), 1..100. @defaultValue 5 */
  readonly iterations?: number;
  /** Receives before SQS moves a message to the DLQ, 1..1000. Must exceed every task's attempts. @defaultValue 10 */
  readonly maxReceiveCount?: number;
  /** Target wait (publish → start) in seconds; alarms and the SLA-aware selector use it. @defaultValue 60 */
  readonly slaSeconds?: number;
  /** Message retention in seconds, 60..1123200 (13 days): the DLQ keeps 14 days, and must outlast it. @defaultValue 345600 */
  readonly retentionSeconds?: number;
  /** Job records kept for this queue's jobs. @defaultValue 'full' */
  readonly tracking?: TrackingMode;
  /**
   * Succeeded jobs carry the jobs table's state index key, so `jobs list --state succeeded` and the
   * dashboard's succeeded tab list them newest first, page after page, without a scan. It costs one
   * index write per succeeded job (its record's size in write units: 1 for a record under 1 KB;
   * `npm run bench:tracking` measures it), spread over {@link SUCCEEDED_INDEX_SHARDS} index keys per
   * queue so no key runs hot. Only on a `full` queue (the others keep no record of a success).
   * @defaultValue true when `tracking` is `full`
   */
  readonly listSucceeded?: boolean;
  /**
   * What starts a dispatcher when a message arrives in an idle version. `doorbell`: an SQS trigger
   * on this queue invokes the doorbell function at once (within a second; the trigger's pollers
   * cost about what Lambda's own SQS trigger costs idle); every task on the queue must then fit one
   * doorbell invocation (see lib/invocation/doorbell.ts). `schedule`: the next minute's scheduled
   * dispatcher (up to a minute late, no pollers). See {@link WAKE_UP_MODES}.
   * @defaultValue 'doorbell' when `slaSeconds` is under 120, else 'schedule'
   */
  readonly wakeUp?: WakeUpMode;
  /** Fleet-wide limits for all the queue's jobs together (lib/track/fleet-limits.ts). */
  readonly limits?: Limits;
  /**
   * The message formats this queue's dispatchers read: `taskworker` (envelope v1) and, for a
   * migration, `celery` (Celery's protocol v2 as its SQS transport sends it, lib/wire/celery.ts).
   * A Celery message on a queue that does not accept it is archived, naming this setting.
   * `taskworker` is always among them: a Celery job's retried, delayed and archived copies are envelopes.
   * @defaultValue ['taskworker']
   */
  readonly accept?: readonly MessageFormat[];
}

/** Message formats a queue may accept: see {@link QueueConfigInput.accept}. */
export const MESSAGE_FORMATS = ['taskworker', 'celery'] as const;
export type MessageFormat = (typeof MESSAGE_FORMATS)[number];

/** How an idle version wakes for a queue: see {@link QueueConfigInput.wakeUp}. */
export const WAKE_UP_MODES = ['doorbell', 'schedule'] as const;
export type WakeUpMode = (typeof WAKE_UP_MODES)[number];

export type QueueConfig = Required<Omit<QueueConfigInput, 'limits'>> & { readonly limits?: Limits };

/** Settings of the dispatcher Lambda (and of each local dispatcher). */
export interface DispatcherConfigInput {
  /** Queue selection algorithm (`sla-aware`: see lib/select/sla-aware.ts and BENCHMARKS.md). @defaultValue 'sla-aware' */
  readonly selector?: SelectorName;
  /** Tasks of one batch run in parallel up to this many worker threads, 1..64. @defaultValue 10 */
  readonly concurrency?: number;
  /** Where task bodies run: see {@link ISOLATION_MODES}. @defaultValue 'threads' */
  readonly isolation?: IsolationMode;
  /** Lambda timeout in seconds, 10..900; each invocation loops until it is nearly spent. @defaultValue 300 */
  readonly timeoutSeconds?: number;
  /** Lambda memory in MB, 128..10240. @defaultValue 1024 */
  readonly memoryMb?: number;
  /** Time kept back at the end of an invocation to settle the last batch, in ms. @defaultValue 5000 */
  readonly settleMarginMs?: number;
  /** After a task's time limit its AbortSignal fires; this long after, its thread is terminated. @defaultValue 1000 */
  readonly killGraceMs?: number;
  /**
   * Dispatcher invocations at once, at most: the function's reserved concurrency. The schedule keeps
   * up to ⌈timeoutSeconds / 60⌉ running; when a backlog builds, the scheduled dispatcher starts more,
   * up to this less one (kept for the next scheduled start). At least ⌈timeoutSeconds / 60⌉ + 1.
   * @defaultValue 2 × (⌈timeoutSeconds / 60⌉ + 1)
   */
  readonly maxConcurrency?: number;
  /** Messages, waiting or in flight, per dispatcher when scaling out (1..1000000). @defaultValue 10 × concurrency */
  readonly backlogPerDispatcher?: number;
  /**
   * Resident-set limit in MB, 64..memoryMb (Kale's RSS limit). Past it the dispatcher stops taking
   * work: running tasks finish, unstarted ones are released, the batch is settled, and the
   * invocation returns; its worker threads are then replaced. @defaultValue 90 % of `memoryMb`
   */
  readonly rssLimitMb?: number;
}

export type DispatcherConfig = Required<DispatcherConfigInput>;

/** Retention of what the jobs and stats tables hold (qless's jobs-history and stats-history). */
export interface TrackingConfigInput {
  /** Days a finished job's record is kept (DynamoDB TTL). @defaultValue 7 */
  readonly jobRetentionDays?: number;
  /** Days per-queue daily stats are kept. @defaultValue 30 */
  readonly statsRetentionDays?: number;
  /** Most recent transitions kept in a job's history. @defaultValue 20 */
  readonly historyLimit?: number;
  /**
   * Payloads up to this many bytes of JSON (after the task's `redact`) are kept on the job's record
   * by its first claim, so every job's page shows its payload; larger ones are not (a claim-checked
   * one is in the bucket). Each KB a record grows costs a write unit on each of its writes (claim,
   * completion). 0 keeps none. @defaultValue 512
   */
  readonly keepPayloadBytes?: number;
}

export type TrackingConfig = Required<TrackingConfigInput>;

/** Large payloads (claim checks): see {@link TaskworkerConfigInput.payloads}. */
export interface PayloadsConfigInput {
  /**
   * A job whose encoded envelope is larger than this many bytes has its payload put in the
   * version's S3 bucket and a pointer (`payloadRef`) sent instead; the dispatcher reads it back
   * before the task runs. 1,024..1,040,384 (SQS's 1 MiB less the archive's reserve).
   * @defaultValue 200000
   */
  readonly offloadAboveBytes?: number;
}

export type PayloadsConfig = Required<PayloadsConfigInput>;

/** How a job's consumer span relates to its publisher's span (lib/trace/consumer.ts). */
export const TRACE_PARENT_MODES = ['link', 'child'] as const;
export type TraceParentMode = (typeof TRACE_PARENT_MODES)[number];

/** Traces (OpenTelemetry, when `@opentelemetry/api` is installed): see {@link TaskworkerConfigInput.tracing}. */
export interface TracingConfigInput {
  /**
   * `link`: each attempt's span starts in the dispatcher's own context, linked to the span that
   * published the job (OpenTelemetry's advice for messages: a job may run long after, and many
   * times). `child`: it is the publisher span's child, so publish and every attempt are one trace.
   * @defaultValue 'link'
   */
  readonly parent?: TraceParentMode;
}

export type TracingConfig = Required<TracingConfigInput>;

/** The largest `payloads.offloadAboveBytes`: the largest body `publish` sends (SQS's 1 MiB less 8 KiB kept for the archive). */
export const MAX_OFFLOAD_ABOVE_BYTES = SQS_MESSAGE_LIMIT_BYTES - 8_192;

/** The longest queue SLA: as long as SQS keeps a message (14 days); a wait past it is not a wait but a loss. */
export const MAX_SLA_SECONDS = MAX_RETENTION_SECONDS;

/** The whole app: the single source for the CDK stack and the local runtime. */
export interface TaskworkerConfigInput {
  /** Resource name prefix; names are `<app>-<version>-<queue>`. Lowercase letters, digits, `-`. */
  readonly app: string;
  /** Directory of task modules, relative to the config file. @defaultValue 'tasks' */
  readonly tasksDir?: string;
  readonly queues: readonly QueueConfigInput[];
  readonly dispatcher?: DispatcherConfigInput;
  readonly tracking?: TrackingConfigInput;
  /** Recurring tasks: each fires on its cron or rate, locally and in AWS (EventBridge Scheduler). */
  readonly schedules?: readonly ScheduleInput[];
  /** Hooks for every job of the app, after its task's own (lib/settle/run-hooks.ts). */
  readonly hooks?: AppHooksInput;
  /**
   * Events this app emits (`publisher.emit`, `taskworker emit`): each is published once to the
   * version's SNS topic and runs every task subscribed to it (`on`), here and in other apps.
   */
  readonly events?: readonly EventDeclarationInput[];
  /** Other apps' events this app's tasks subscribe to (`on`), by app and version. */
  readonly subscriptions?: readonly SubscriptionInput[];
  /**
   * Other AWS accounts whose apps may subscribe to this app's events (12-digit ids): the topic's
   * policy lets each subscribe its SQS queues, and the payload bucket lets it read large events'
   * payloads (`payloads/events/`). Apps in this stack's own account need nothing here.
   */
  readonly subscriberAccounts?: readonly string[];
  /** Payloads too large for a message: kept in the version's S3 bucket, up to 10 MiB. */
  readonly payloads?: PayloadsConfigInput;
  /** W3C trace context from publish to run (docs/tracing.md). */
  readonly tracing?: TracingConfigInput;
}

export interface AppHooksInput extends JobHooks {
  /** Each hook's time limit, ms (100..60000). @defaultValue 5000 */
  readonly timeoutMs?: number;
}

export interface AppHooks extends JobHooks {
  readonly timeoutMs: number;
}

export interface TaskworkerConfig {
  readonly app: string;
  readonly tasksDir: string;
  readonly queues: readonly QueueConfig[];
  readonly dispatcher: DispatcherConfig;
  readonly tracking: TrackingConfig;
  readonly schedules: readonly ScheduleConfig[];
  readonly hooks: AppHooks;
  readonly events: readonly EventDeclaration[];
  readonly subscriptions: readonly SubscriptionConfig[];
  readonly subscriberAccounts: readonly string[];
  readonly payloads: PayloadsConfig;
  readonly tracing: TracingConfig;
}

export const QUEUE_DEFAULTS = {
  batchSize: 10,
  visibilityTimeoutSeconds: 60,
  longPollSeconds: 1,
  iterations: 5,
  maxReceiveCount: 10,
  slaSeconds: 60,
  retentionSeconds: 345_600,
  tracking: 'full',
  accept: ['taskworker'],
} as const satisfies Omit<QueueConfig, 'name' | 'priority' | 'wakeUp' | 'listSucceeded'>;

export const TRACKING_DEFAULTS: TrackingConfig = { jobRetentionDays: 7, statsRetentionDays: 30, historyLimit: 20, keepPayloadBytes: 512 };
/** The most `tracking.keepPayloadBytes` allows: past 4 KB each write of the record costs 5 units or more. */
export const MAX_KEPT_PAYLOAD_BYTES = 4096;

/** The default `rssLimitMb`, as a share of `memoryMb`. */
export const RSS_LIMIT_SHARE = 0.9;

/** Fixed defaults; `maxConcurrency`, `backlogPerDispatcher` and `rssLimitMb` follow from other fields. */
export const DISPATCHER_DEFAULTS: Omit<DispatcherConfig, 'rssLimitMb' | 'maxConcurrency' | 'backlogPerDispatcher'> = {
  selector: 'sla-aware',
  concurrency: 10,
  isolation: 'threads',
  timeoutSeconds: 300,
  memoryMb: 1024,
  settleMarginMs: 5000,
  killGraceMs: 1000,
};

const APP_PATTERN = /^[a-z][a-z0-9-]{0,29}$/;
const QUEUE_PATTERN = /^[a-z][a-z0-9_]{0,39}$/;
const VERSION_PATTERN = /^[a-z0-9][a-z0-9-]{0,19}$/;

/** Identity helper that gives a config file its types. */
export function defineConfig(config: TaskworkerConfigInput): TaskworkerConfigInput {
  return config;
}

/** Validates a config and fills in defaults. Throws {@link ConfigError} naming the first bad field. */
export function resolveConfig(input: unknown): TaskworkerConfig {
  const root = objectAt('config', input);
  const app = stringMatching('app', root.app, APP_PATTERN, 'lowercase letters, digits and "-", starting with a letter, ≤ 30 chars');
  const tasksDir = root.tasksDir === undefined ? 'tasks' : nonEmptyString('tasksDir', root.tasksDir);
  if (!Array.isArray(root.queues) || root.queues.length === 0) {
    throw new ConfigError('queues', root.queues, 'a non-empty array of queue configs');
  }
  const queues = root.queues.map((q: unknown, i: number) => resolveQueue(`queues[${i}]`, q));
  const seen = new Set<string>();
  queues.forEach((q, i) => {
    if (seen.has(q.name)) throw new ConfigError(`queues[${i}].name`, q.name, 'a name not used by another queue');
    if (q.name === 'archive') throw new ConfigError(`queues[${i}].name`, q.name, 'a name other than "archive" (reserved)');
    seen.add(q.name);
  });
  const dispatcher = resolveDispatcher(root.dispatcher);
  const tracking = resolveTracking(root.tracking);
  const longestDeadLetterName = deadLetterQueueName(
    app,
    'x'.repeat(20),
    queues.reduce((a, q) => (q.name.length > a.length ? q.name : a), ''),
  );
  if (longestDeadLetterName.length > MAX_QUEUE_NAME_CHARS) {
    throw new ConfigError('app', app, `a prefix short enough that "<app>-<version>-<queue>-dlq" fits ${MAX_QUEUE_NAME_CHARS} chars`);
  }
  const schedules = resolveSchedules(
    root.schedules,
    queues.map((q) => q.name),
  );
  const events = resolveEvents(root.events);
  const subscriptions = resolveSubscriptions(root.subscriptions, app, events);
  const subscriberAccounts = resolveSubscriberAccounts(root.subscriberAccounts, events);
  const payloads = resolvePayloads(root.payloads);
  const tracing = resolveTracing(root.tracing);
  return {
    app,
    tasksDir,
    queues,
    dispatcher,
    tracking,
    schedules,
    hooks: resolveHooks(root.hooks),
    events,
    subscriptions,
    subscriberAccounts,
    payloads,
    tracing,
  };
}

function resolveTracing(input: unknown): TracingConfig {
  const t = input === undefined ? {} : objectAt('tracing', input);
  return { parent: t.parent === undefined ? 'link' : oneOf('tracing.parent', t.parent, TRACE_PARENT_MODES) };
}

function resolvePayloads(input: unknown): PayloadsConfig {
  const p = input === undefined ? {} : objectAt('payloads', input);
  return {
    offloadAboveBytes: integerIn(
      'payloads.offloadAboveBytes',
      p.offloadAboveBytes ?? DEFAULT_OFFLOAD_ABOVE_BYTES,
      1_024,
      MAX_OFFLOAD_ABOVE_BYTES,
    ),
  };
}

function resolveHooks(input: unknown): AppHooks {
  const h = input === undefined ? {} : objectAt('hooks', input);
  const hooks: Record<string, unknown> = { timeoutMs: integerIn('hooks.timeoutMs', h.timeoutMs ?? 5000, 100, 60_000) };
  for (const name of HOOK_NAMES) {
    if (h[name] === undefined) continue;
    if (typeof h[name] !== 'function') throw new ConfigError(`hooks.${name}`, h[name], 'a function');
    hooks[name] = h[name];
  }
  return hooks as unknown as AppHooks;
}

function resolveTracking(input: unknown): TrackingConfig {
  const t = input === undefined ? {} : objectAt('tracking', input);
  const d = TRACKING_DEFAULTS;
  return {
    jobRetentionDays: integerIn('tracking.jobRetentionDays', t.jobRetentionDays ?? d.jobRetentionDays, 1, 3650),
    statsRetentionDays: integerIn('tracking.statsRetentionDays', t.statsRetentionDays ?? d.statsRetentionDays, 1, 3650),
    historyLimit: integerIn('tracking.historyLimit', t.historyLimit ?? d.historyLimit, 1, 200),
    keepPayloadBytes: integerIn('tracking.keepPayloadBytes', t.keepPayloadBytes ?? d.keepPayloadBytes, 0, MAX_KEPT_PAYLOAD_BYTES),
  };
}

function resolveQueue(path: string, input: unknown): QueueConfig {
  const q = objectAt(path, input);
  const d = QUEUE_DEFAULTS;
  const tracking = oneOf(`${path}.tracking`, q.tracking ?? d.tracking, TRACKING_MODES);
  return {
    name: stringMatching(`${path}.name`, q.name, QUEUE_PATTERN, 'lowercase letters, digits and "_", starting with a letter, ≤ 40 chars'),
    priority: integerIn(`${path}.priority`, q.priority, 1, 100),
    batchSize: integerIn(`${path}.batchSize`, q.batchSize ?? d.batchSize, 1, MAX_BATCH_ENTRIES),
    visibilityTimeoutSeconds: integerIn(
      `${path}.visibilityTimeoutSeconds`,
      q.visibilityTimeoutSeconds ?? d.visibilityTimeoutSeconds,
      1,
      MAX_VISIBILITY_SECONDS,
    ),
    longPollSeconds: integerIn(`${path}.longPollSeconds`, q.longPollSeconds ?? d.longPollSeconds, 0, 20),
    iterations: integerIn(`${path}.iterations`, q.iterations ?? d.iterations, 1, 100),
    maxReceiveCount: integerIn(`${path}.maxReceiveCount`, q.maxReceiveCount ?? d.maxReceiveCount, 1, 1000),
    slaSeconds: integerIn(`${path}.slaSeconds`, q.slaSeconds ?? d.slaSeconds, 1, MAX_SLA_SECONDS),
    retentionSeconds: integerIn(`${path}.retentionSeconds`, q.retentionSeconds ?? d.retentionSeconds, 60, MAX_QUEUE_RETENTION_SECONDS),
    tracking,
    listSucceeded: resolveListSucceeded(`${path}.listSucceeded`, q.listSucceeded, tracking),
    wakeUp: oneOf(
      `${path}.wakeUp`,
      q.wakeUp ?? defaultWakeUp(integerIn(`${path}.slaSeconds`, q.slaSeconds ?? d.slaSeconds, 1, MAX_SLA_SECONDS)),
      WAKE_UP_MODES,
    ),
    accept: q.accept === undefined ? d.accept : resolveAccept(`${path}.accept`, q.accept),
    ...withLimits(resolveLimits(q.limits, `${path}.limits`)),
  };
}

function resolveListSucceeded(field: string, value: unknown, tracking: TrackingMode): boolean {
  if (value === undefined) return tracking === 'full';
  if (typeof value !== 'boolean') throw new ConfigError(field, value, 'true or false');
  if (value && tracking !== 'full')
    throw new ConfigError(field, value, `false on a queue whose tracking is '${tracking}' (it keeps no record of a success)`);
  return value;
}

/** Index keys a queue's succeeded jobs spread over: each key takes DynamoDB's 1,000 writes a second, so a queue lists up to 4,000 successes a second. */
export const SUCCEEDED_INDEX_SHARDS = 4;

function resolveAccept(field: string, value: unknown): readonly MessageFormat[] {
  const expected = `a non-empty list of distinct formats from ${MESSAGE_FORMATS.join(', ')}`;
  if (!Array.isArray(value) || value.length === 0 || new Set(value).size !== value.length) throw new ConfigError(field, value, expected);
  for (const format of value) oneOf(field, format, MESSAGE_FORMATS);
  // A Celery job's delayed, requeued and archived copies are envelopes: every queue reads its own.
  if (!value.includes('taskworker'))
    throw new ConfigError(field, value, `a list that keeps 'taskworker' (the dispatcher's own copies are envelopes)`);
  return [...value];
}

function withLimits(limits: Limits | undefined): { limits?: Limits } {
  return limits ? { limits } : {};
}

/** Below this SLA a queue wakes an idle version by doorbell; at or above it the minute's schedule is soon enough. */
export const DOORBELL_BELOW_SLA_SECONDS = 120;

function defaultWakeUp(slaSeconds: number): WakeUpMode {
  return slaSeconds < DOORBELL_BELOW_SLA_SECONDS ? 'doorbell' : 'schedule';
}

function resolveDispatcher(input: unknown): DispatcherConfig {
  const p = input === undefined ? {} : objectAt('dispatcher', input);
  const d = DISPATCHER_DEFAULTS;
  const concurrency = integerIn('dispatcher.concurrency', p.concurrency ?? d.concurrency, 1, 64);
  const timeoutSeconds = integerIn('dispatcher.timeoutSeconds', p.timeoutSeconds ?? d.timeoutSeconds, 10, MAX_LAMBDA_TIMEOUT_SECONDS);
  // The schedule starts one a minute and each runs up to its timeout: this many overlap.
  const overlap = Math.ceil(timeoutSeconds / 60);
  const maxConcurrency = p.maxConcurrency ?? 2 * (overlap + 1);
  if (typeof maxConcurrency !== 'number' || !Number.isInteger(maxConcurrency) || maxConcurrency < overlap + 1 || maxConcurrency > 1000) {
    throw new ConfigError(
      'dispatcher.maxConcurrency',
      maxConcurrency,
      `an integer ${overlap + 1}..1000 (${overlap} scheduled dispatchers overlap at timeoutSeconds ${timeoutSeconds}, and one more absorbs schedule jitter)`,
    );
  }
  const memoryMb = integerIn('dispatcher.memoryMb', p.memoryMb ?? d.memoryMb, 128, 10_240);
  const config: DispatcherConfig = {
    selector: oneOf('dispatcher.selector', p.selector ?? d.selector, SELECTOR_NAMES),
    concurrency,
    isolation: oneOf('dispatcher.isolation', p.isolation ?? d.isolation, ISOLATION_MODES),
    timeoutSeconds,
    memoryMb,
    settleMarginMs: integerIn('dispatcher.settleMarginMs', p.settleMarginMs ?? d.settleMarginMs, 100, 60_000),
    killGraceMs: integerIn('dispatcher.killGraceMs', p.killGraceMs ?? d.killGraceMs, 0, 60_000),
    maxConcurrency,
    backlogPerDispatcher: integerIn('dispatcher.backlogPerDispatcher', p.backlogPerDispatcher ?? 10 * concurrency, 1, 1_000_000),
    rssLimitMb: integerIn('dispatcher.rssLimitMb', p.rssLimitMb ?? Math.floor(memoryMb * RSS_LIMIT_SHARE), 64, memoryMb),
  };
  if (config.settleMarginMs >= config.timeoutSeconds * 1000) {
    throw new ConfigError(
      'dispatcher.settleMarginMs',
      config.settleMarginMs,
      `less than dispatcher.timeoutSeconds (${config.timeoutSeconds} s)`,
    );
  }
  return config;
}

/** Validates a release version such as `v42`. */
export function validateVersion(version: unknown, field = 'version'): string {
  return stringMatching(field, version, VERSION_PATTERN, 'lowercase letters, digits and "-", ≤ 20 chars (e.g. "v42")');
}

/** Looks a configured queue up by name. */
export function queueByName(config: TaskworkerConfig, name: string): QueueConfig | undefined {
  return config.queues.find((q) => q.name === name);
}

function oneOf<T extends string>(field: string, value: unknown, allowed: readonly T[]): T {
  if (!(allowed as readonly unknown[]).includes(value)) throw new ConfigError(field, value, `one of ${allowed.join(', ')}`);
  return value as T;
}

function objectAt(field: string, value: unknown): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ConfigError(field, value, 'an object');
  return value as Record<string, unknown>;
}

function nonEmptyString(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) throw new ConfigError(field, value, 'a non-empty string');
  return value;
}

function stringMatching(field: string, value: unknown, pattern: RegExp, expected: string): string {
  if (typeof value !== 'string' || !pattern.test(value)) throw new ConfigError(field, value, expected);
  return value;
}

function integerIn(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ConfigError(field, value, `an integer ${min}..${max}`);
  }
  return value;
}

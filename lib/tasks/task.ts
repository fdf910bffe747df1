import { type Duration, durationSeconds } from '../config/durations';
import { type Limits, resolveLimits } from '../config/limit-config';
import { BatchResultError, describeValue, TaskDefinitionError } from '../errors';
import { HOOK_NAMES, type JobHooks } from '../hook-types';
import { MAX_LAMBDA_TIMEOUT_SECONDS } from '../layout/aws-limits';
import { MAX_QUEUE_DELAY_SECONDS, MAX_VISIBILITY_SECONDS } from '../layout/sqs-limits';
import { JOB_STATES, type JobState, LIVE_STATES } from '../track/job-record';
import { TASK_NAME_PATTERN } from '../wire/envelope';
import { EVENT_NAME_PATTERN, type EventRef } from '../wire/event-ref';
import { type BackoffPolicy, DEFAULT_BACKOFF } from './backoff';
import { type ErrorClass, type RetryOptions, type RetryPolicy, retryPolicy } from './retry-policy';

export const TASK_LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type TaskLogLevel = (typeof TASK_LOG_LEVELS)[number];

/** `ctx.log`: one JSON line per call, with the job's id and attempt; `fields` are added to it (they never replace those). */
export type TaskLog = { readonly [L in TaskLogLevel]: (message: string, fields?: Record<string, unknown>) => void };

/** What a running task knows about itself. */
export interface TaskContext {
  readonly jobId: string;
  readonly task: string;
  readonly queue: string;
  /** 1 on the first run. */
  readonly attempt: number;
  /** The envelope's `appData`, untouched. */
  readonly appData: unknown;
  /**
   * Fires when the time limit is reached, or with JobCancelledError when an operator cancels the
   * job (then the thread is terminated after the kill grace). Pass it to fetch, SDK calls, loops.
   */
  readonly signal: AbortSignal;
  /** Epoch ms at which the time limit is reached; the thread is terminated shortly after. */
  readonly deadline: number;
  /**
   * The attempt's fencing token: with tracking `full`, the claim's number (it grows with every
   * claim, takeovers included); otherwise the attempt. Guard your own writes with it
   * (e.g. `ConditionExpression: 'token < :t'`) so a stale attempt's side effect cannot land.
   */
  readonly fencingToken: number;
  /**
   * Extends the message's visibility and the job's lease. Rejects with LeaseLostError when a
   * newer attempt holds the job. Long tasks are heartbeated automatically before their visibility
   * runs out; call this to learn early that the work was taken over.
   */
  heartbeat(): Promise<void>;
  /**
   * Reports how far the job has come: small JSON (at most 1 KB; larger throws ProgressTooLargeError
   * naming the size). No write per call: the latest value is kept and written to the job record
   * with the attempt's next lease write, at most every 5 s while it changes (tracking `full`; a
   * no-op otherwise). `taskworker jobs show` and the dashboard's job page show it.
   * @example
   * ```ts
   * for (const [i, row] of rows.entries()) { await load(row); ctx.progress({ done: i + 1, of: rows.length }); }
   * ```
   */
  progress(data: unknown): void;
  /**
   * The job's log: one JSON line per call carrying the job's id and attempt (and `fields`), shown on
   * the job's page and by `taskworker jobs logs ID`. What the body prints with `console` is written
   * the same way. On AWS the lines are in the dispatcher's log group (CloudWatch Logs).
   * @example
   * ```ts
   * ctx.log.info('charged', { amountCents: 1200 });
   * ```
   */
  readonly log: TaskLog;
  /**
   * Durable steps: `ctx.step.run(name, fn)` runs `fn` once per job. Its result is kept on the job's
   * record (fenced by this attempt's token); a later attempt of the same job (after a failure, a
   * time-out or a dispatcher killed mid-way) gets the kept result back without running `fn` again.
   * Steps run in the same order on every attempt, names unique within the job; results are JSON up
   * to 1 KB. Needs the queue tracked `full` (elsewhere every attempt runs every step). See docs/tasks.md.
   * @example
   * ```ts
   * const charge = await ctx.step.run('charge', () => gateway.charge(order));
   * await ctx.step.run('email', () => mailer.receipt(order, charge.id));
   * ```
   */
  readonly step: TaskSteps;
  /**
   * How each job this one waited for ended, in the order they were named (`dependsOn`, or a
   * fan-in's members `<id>.0` …): read from the jobs table when it starts. Empty for a job with no
   * dependencies. A chain's step finds the previous step's return value in `dependencies[0].result`.
   */
  readonly dependencies: readonly DependencyOutcome[];
  /** The event this run is for, when the task runs as a subscriber (`on`): its id, name, emitting app and time. */
  readonly event?: EventRef;
}

/** One job of a batch task's call (`runBatch`): what `run` gets as its payload and context, per job. */
export interface BatchItem<P = unknown> {
  readonly jobId: string;
  /** The job's payload, through `validate` when the task has one (a payload it refuses is not in the call). */
  readonly payload: P;
  /** Attempts this job has used, this one included. */
  readonly attempt: number;
  /** This job's fencing token: guard its own writes with it, as `ctx.fencingToken` in `run`. */
  readonly fencingToken: number;
  readonly appData: unknown;
  /** How the jobs it waited for ended (see `TaskContext.dependencies`). */
  readonly dependencies: readonly DependencyOutcome[];
  /** The event it runs for (a subscriber's job). */
  readonly event?: EventRef;
}

/** What a batch task's call knows about itself. */
export interface BatchContext {
  readonly task: string;
  readonly queue: string;
  /** The value of the task's `batch.key` that every item of this call shares; undefined without a key (or for items without one). */
  readonly key?: string;
  /** Fires at the call's time limit (`timeLimitSeconds` counts for the whole call), then the thread is terminated. */
  readonly signal: AbortSignal;
  /** Epoch ms at which the time limit is reached. */
  readonly deadline: number;
  /**
   * Extends every item's message visibility and lease (long calls are heartbeated automatically).
   * Rejects with LeaseLostError only when every item was taken over; an item taken over alone has its
   * outcome refused by its fencing token, the others are kept.
   */
  heartbeat(): Promise<void>;
  /** The call's log: one JSON line per call, carrying every item's job id (`jobIds`), shown on each item's job page. */
  readonly log: TaskLog;
}

/**
 * What `runBatch` returns: nothing (every item succeeded, no result), or one entry per item, in the
 * order given: an `Error` fails that item alone (retried, or archived, by the task's retry rules as a
 * throw from `run` is), anything else is that item's result. A throw fails every item.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a body with no return statement (every item succeeded) is typed void.
export type BatchResults<R = unknown> = undefined | void | ReadonlyArray<R | Error>;

/** A task's `batch` rule, as written. */
export interface BatchRule<P = unknown> {
  /** The most items in one call: 1..1000. */
  readonly maxSize: number;
  /**
   * How long the first item of a call waits for more before the call starts: 0..60000 ms. A lone job
   * runs within it. @defaultValue 1000
   */
  readonly maxWaitMs?: number;
  /**
   * Items of one call share this: a payload field (a dotted path, `'accountId'`) or a function of the
   * payload. Items whose value is missing (undefined or null) share a call of their own.
   */
  readonly key?: string | ((payload: P) => unknown);
}

/** A task's `batch` rule, resolved. */
export interface BatchWindow {
  readonly maxSize: number;
  readonly maxWaitMs: number;
  readonly key?: string | ((payload: unknown) => unknown);
}

/** The most items one batch call takes. */
export const MAX_BATCH_SIZE = 1000;
/** The longest a batch call waits for items. */
export const MAX_BATCH_WAIT_MS = 60_000;
export const DEFAULT_BATCH_WAIT_MS = 1000;

/** `ctx.step`: a job's durable steps. */
export interface TaskSteps {
  /**
   * Runs `fn` as the step `name` and keeps its result, or returns the result an earlier attempt of
   * this job kept for it. Throws StepError (the job archived at once) for a step out of the kept
   * order, a name used twice, a step after one that failed in this attempt, or a result that is not
   * JSON or passes 1 KB; LeaseLostError when a newer attempt holds the job.
   */
  run<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
  /**
   * Sleeps as the step `name`: the attempt ends here (no attempt used) and the job is parked in the
   * jobs table until the time, costing nothing meanwhile; it then runs again, its kept steps returned
   * without running, and this call returns. `duration`: ms, or `'90s'`, `'2h'`, `'7d'` (up to a
   * year); or a Date to sleep until. Needs a queue with tracking `full` (StepError otherwise).
   * Do not catch what it throws: the attempt ends at a sleep.
   */
  sleep(name: string, duration: number | string | Date): Promise<void>;
  /**
   * Waits as the step `name` for its token to be completed (`publisher.completeToken(token, value)`,
   * `taskworker tokens complete`, the dashboard): the job is parked until then, or until `timeout`
   * (ms or `'3d'`, up to a year), and this returns the value given, or `null` at the timeout.
   * `notify(token)` runs before the job parks — send the token to whoever completes it (it runs
   * again should the attempt end before the job parked; a token is the same on every attempt).
   */
  waitForToken<T = unknown>(
    name: string,
    options: { readonly timeout: number | string; readonly notify?: (token: string) => unknown | Promise<unknown> },
  ): Promise<T | null>;
  /**
   * Waits as the step `name` for one of the app's events that the task declares in `waitsFor`: the
   * job is parked until such an event arrives after the wait began — one whose payload has at the
   * declared `match` field the value this job's payload has there — or until `timeout` (ms or
   * `'3d'`, up to a year). Returns the event (its payload when its JSON is at most 1 KB), or `null`
   * at the timeout. Two matching events resume it once (the first).
   */
  waitForEvent<T = unknown>(
    name: string,
    options: { readonly event: string; readonly timeout: number | string },
  ): Promise<ReceivedEvent<T> | null>;
}

/** An event a task's body may wait for, and the payload field (a dotted path) a waiting job matches on. */
export interface EventWaitRule {
  readonly event: string;
  readonly match?: string;
}

/** An event that resumed a `ctx.step.waitForEvent`: its id, name, source and time, and its payload (when its JSON is at most 1 KB). */
export interface ReceivedEvent<T = unknown> extends EventRef {
  readonly payload?: T;
  /** The size of a payload too large to keep on the job's record (its JSON, bytes): the payload is left out. */
  readonly payloadBytes?: number;
}

/** What a dependent's task sees of one dependency. */
export interface DependencyOutcome {
  readonly jobId: string;
  /** `succeeded`, `archived` or `cancelled` (any state, for a job with `onDependencyFailure: 'ignore'`); `unknown`: no record. */
  readonly state: string;
  /** The dependency's return value, when it succeeded and returned one small enough to keep. */
  readonly result?: unknown;
  /** Why it was archived. */
  readonly reason?: string;
  /** Its result was this many bytes of JSON, too large to keep: reading `result` throws `ResultTooLargeError`. */
  readonly resultBytes?: number;
}

export type { ErrorClass, ErrorMatcher, RetryOptions, RetryPolicy } from './retry-policy';

/** What a task module default-exports. */
export interface TaskOptions<P = unknown, R = unknown> extends JobHooks<R> {
  /** Registered name that envelopes refer to. */
  readonly name: string;
  /** Configured queue this task is published to by default. */
  readonly queue: string;
  /** Hard time limit in seconds: the AbortSignal fires, then the thread is terminated. */
  readonly timeLimitSeconds: number;
  /**
   * A stepped task's limit per step (`ctx.step.run`), 1 s up to `timeLimitSeconds`: a step that runs
   * longer fails its attempt (StepTimeLimitError, retried). Before a new step that might not end within
   * the attempt's time limit, the attempt ends and the job continues from its kept steps in the
   * next invocation (no attempt used): the job's work may add up past Lambda's 15 minutes.
   */
  readonly stepTimeLimitSeconds?: number;
  /** Retries after the first attempt. @defaultValue 3 */
  readonly maxRetries?: number;
  /** Delay between attempts. @defaultValue \{ baseSeconds: 2, capSeconds: 300 \} */
  readonly backoff?: Partial<BackoffPolicy>;
  /** Errors that archive the job at once instead of retrying (UnrecoverableError always does). */
  readonly unrecoverable?: readonly ErrorClass[];
  /**
   * Which errors are retried: `never` archives them at once (as `unrecoverable` does), `on` retries
   * only these, by class or name; `maxRetryAfters` bounds the RetryAfterError re-runs a job takes
   * without using an attempt. @defaultValue \{ maxRetryAfters: 10 \} (every error retried)
   */
  readonly retry?: RetryOptions;
  /** Checks and narrows the payload; a throw archives the job as `invalid-payload`. */
  readonly validate?: (payload: unknown) => P;
  /** Fleet-wide limits on this task's jobs: `{ concurrency?, perSecond?, burst? }`. A job over a limit waits, using no attempt. */
  readonly limits?: Limits;
  /**
   * Events this task subscribes to: each one emitted runs it once, on its own queue, with the
   * event's payload and `ctx.event` (the job id is `<event id>/<task>`). Each name must be declared
   * in the config's `events` or received through its `subscriptions`.
   */
  readonly on?: string | readonly string[];
  /**
   * The events its body may wait for (`ctx.step.waitForEvent`): each an event the app declares or
   * receives, with the payload field a waiting job matches on — the event resumes the jobs whose own
   * payload has the same value there (`{ event: 'payment.confirmed', match: 'order' }`); none, or a
   * bare name: every waiting job of that event. The version subscribes this task's queue to them.
   */
  readonly waitsFor?: ReadonlyArray<string | EventWaitRule>;
  /**
   * The Celery task name this task answers to on a queue that accepts Celery's messages
   * (`accept: ['taskworker', 'celery']`): a Celery `send_task('tasks.add', ...)` runs this task,
   * with the message's kwargs as the payload. Unique across the app's tasks. See docs/celery.md.
   */
  readonly celeryName?: string;
  /**
   * The payload keys of a Celery message's positional args, in order (`['order', 'amount']` reads
   * `args=[7, 9.5]` as `{ order: 7, amount: 9.5 }`, merged with its kwargs). Without it a message
   * with positional args is archived. Needs `celeryName`.
   */
  readonly celeryArgs?: readonly string[];
  /**
   * One job per key at a time: a job published with a `key` while another job of this task and key,
   * published less than `for` ago, is in one of the `while` states is not sent — `publish` answers
   * with that job's id and `deduplicated: true` — and a message sent from elsewhere is recorded
   * `deduplicated`, never run. Needs its queue tracked `full`. See docs/keys.md.
   * @example
   * ```ts
   * unique: { for: '10m' } // while queued, scheduled, waiting, running or retrying
   * ```
   */
  readonly unique?: UniqueRule | UniqueWindow;
  /**
   * One run per burst of a key: a job published with a `key` runs `period` after the last publish of
   * its task and key (or `maxWait` after the first of the burst), once, with the last publish's
   * payload; every publish of the burst answers with the id of the job that will run, those that
   * joined it with `debounced: true`. Needs its queue tracked `full`; not with `unique`. See docs/keys.md.
   * @example
   * ```ts
   * debounce: { period: '2s', maxWait: '10s' } // 20 saves in 4 s: one run, 2 s after the last
   * ```
   */
  readonly debounce?: DebounceRule | DebounceWindow;
  /**
   * One job per key at a time, in publish order (SQS FIFO's message groups): the publisher numbers
   * each key's jobs, and a job runs only once the one before it has ended — succeeded, cancelled,
   * or archived (`onFailure: 'continue'`, the default); with `'block'` an archived job holds its key
   * until it is replayed and succeeds. A retrying job holds its key through its retries. Jobs of
   * different keys run side by side. Needs its queue tracked `full`; not with `unique`, `debounce`,
   * `batch` or `limits.per`. See docs/keys.md.
   * @example
   * ```ts
   * ordered: true // or { onFailure: 'block' }
   * ```
   */
  readonly ordered?: true | OrderRule;
  /**
   * Payload fields never shown nor kept: dotted paths (`'card.number'`; a path through an array
   * applies to each element) whose values become `"[redacted]"` in the payload the jobs table keeps
   * (`tracking.keepPayloadBytes`), on the dashboard and in `jobs show` and `archive list`. The run
   * still gets the whole payload.
   */
  readonly redact?: readonly string[];
  /**
   * Runs its jobs in calls of many (`runBatch`): a call takes up to `maxSize` jobs' items (those that
   * share `key`), starting once it is full or `maxWaitMs` after its first item. Each job is still
   * claimed, fenced, retried and recorded on its own. Needs `runBatch` instead of `run`. See docs/tasks.md.
   * @example
   * ```ts
   * batch: { maxSize: 100, maxWaitMs: 2000, key: 'accountId' }
   * ```
   */
  readonly batch?: BatchRule<P>;
  // Method syntax on purpose: a task typed for its payload still fits where any task is accepted.
  /** The body, once per job. Exactly one of `run` and `runBatch`. */
  run?(payload: P, ctx: TaskContext): R | Promise<R>;
  /** The body of a `batch` task, once per call: its items in order, and one result or Error per item (see {@link BatchResults}). */
  runBatch?(items: ReadonlyArray<BatchItem<P>>, ctx: BatchContext): BatchResults<R> | Promise<BatchResults<R>>;
}

/** A task's `unique` rule, as written. */
export interface UniqueRule {
  /** The window after a job's publish in which a second one of its key joins it: seconds, or `'90s'`, `'10m'`, `'2h'`, `'1d'` (1 s to 30 days). */
  readonly for: Duration;
  /** The states of the first job in which a second one joins it. @defaultValue every state but the ended ones */
  readonly while?: readonly JobState[];
}

/** A task's `unique` rule, resolved. */
export interface UniqueWindow {
  readonly forSeconds: number;
  readonly while: readonly JobState[];
}

/** A job that has not ended. */
export const UNIQUE_WHILE_DEFAULT: readonly JobState[] = LIVE_STATES;
/** The longest `unique.for`: 30 days. */
export const MAX_UNIQUE_SECONDS = 30 * 86_400;

/** A task's `ordered` rule: what an archived job does to its key's line. */
export interface OrderRule {
  /** `'continue'`: the next job runs once it is archived; `'block'`: the key waits until it is replayed and succeeds. @defaultValue 'continue' */
  readonly onFailure?: 'continue' | 'block';
}

/** A task's `ordered` rule, resolved. */
export interface OrderWindow {
  readonly onFailure: 'continue' | 'block';
}

/** A task's `debounce` rule, as written. */
export interface DebounceRule {
  /** How long after a key's last publish its job runs: seconds, or `'2s'`, `'1m'` (1 s to 15 minutes). */
  readonly period: Duration;
  /** The longest a burst is put off: its job runs at most this long after the burst's first publish (`period` to 15 minutes). @defaultValue 15 minutes */
  readonly maxWait?: Duration;
}

/** A task's `debounce` rule, resolved. */
export interface DebounceWindow {
  readonly periodSeconds: number;
  readonly maxWaitSeconds: number;
}

export type { Duration };

/**
 * The longest debounce `period` and `maxWait`: 15 minutes, SQS's longest `DelaySeconds` (the job's
 * message is sent delayed by the period, and held back by visibility no longer than that at a time).
 */
export const MAX_DEBOUNCE_SECONDS = MAX_QUEUE_DELAY_SECONDS;

/** A validated task, as the registry and workers hold it. */
export interface TaskDefinition<P = unknown, R = unknown> extends JobHooks<R> {
  readonly kind: typeof TASK_KIND;
  readonly name: string;
  readonly queue: string;
  readonly timeLimitSeconds: number;
  readonly stepTimeLimitSeconds?: number;
  readonly maxRetries: number;
  readonly backoff: BackoffPolicy;
  readonly unrecoverable: readonly ErrorClass[];
  /** Its retry policy, `unrecoverable` folded into `never`. */
  readonly retry: RetryPolicy;
  readonly validate: ((payload: unknown) => P) | undefined;
  readonly limits?: Limits;
  /** The events it subscribes to (empty: none). */
  readonly on: readonly string[];
  /** The events its body may wait for, each with the field it matches on (empty: none). */
  readonly waitsFor: readonly EventWaitRule[];
  /** The Celery task name it answers to, if any. */
  readonly celeryName?: string;
  /** The payload keys of a Celery message's positional args, if declared. */
  readonly celeryArgs?: readonly string[];
  /** Its `unique` rule, if any (a definition given again to `toDefinition` keeps it). */
  readonly unique?: UniqueWindow;
  /** Its `debounce` rule, if any (kept as `unique` is). */
  readonly debounce?: DebounceWindow;
  /** Its `ordered` rule, if any (kept as `unique` is). */
  readonly ordered?: OrderWindow;
  /** Payload fields masked wherever the payload is kept or shown. */
  readonly redact?: readonly string[];
  /** Its `batch` rule: its jobs run in calls of `runBatch`. */
  readonly batch?: BatchWindow;
  /** A batch task's body; its `run` is then one call of a single item (what `runTask` and a lone job run). */
  runBatch?(items: ReadonlyArray<BatchItem<P>>, ctx: BatchContext): BatchResults<R> | Promise<BatchResults<R>>;
  run(payload: P, ctx: TaskContext): R | Promise<R>;
}

/** Celery task names a task may answer to: 1..200 printable ASCII characters (Python's dotted paths and more). */
export const CELERY_NAME_PATTERN = /^[\x21-\x7e]{1,200}$/;
/** The most positional args a task may map. */
export const MAX_CELERY_ARGS = 32;

/** A string marker, not a symbol or class, so definitions from another bundle's copy of the library still count. */
const TASK_KIND = 'taskworker.task';

/**
 * Declares a task. Default-export the result from a module in the tasks directory.
 * @example
 * export default defineTask({
 *   name: 'send-email', queue: 'default', timeLimitSeconds: 10,
 *   run: async (payload: { to: string }, ctx) => { await mailer.send(payload.to, { signal: ctx.signal }); },
 * });
 */
export function defineTask<P = unknown, R = unknown>(options: TaskOptions<P, R>): TaskDefinition<P, R> {
  return toDefinition(options as TaskOptions, options.name) as unknown as TaskDefinition<P, R>;
}

/** Validates anything a task module exports as its default; plain objects of the right shape count too. */
export function toDefinition(value: unknown, source: string): TaskDefinition {
  if (typeof value !== 'object' || value === null) {
    throw new TaskDefinitionError(source, 'default export', value, 'a task definition (defineTask({...}))');
  }
  const o = value as Partial<TaskOptions> & { kind?: string };
  const name = o.name;
  if (typeof name !== 'string' || !TASK_NAME_PATTERN.test(name)) {
    throw new TaskDefinitionError(source, 'name', name, `a name matching ${TASK_NAME_PATTERN}`);
  }
  if (typeof o.queue !== 'string' || o.queue.length === 0) throw new TaskDefinitionError(name, 'queue', o.queue, 'a configured queue name');
  if (typeof o.timeLimitSeconds !== 'number' || !(o.timeLimitSeconds > 0) || o.timeLimitSeconds > MAX_LAMBDA_TIMEOUT_SECONDS) {
    throw new TaskDefinitionError(
      name,
      'timeLimitSeconds',
      o.timeLimitSeconds,
      `a number of seconds in (0, ${MAX_LAMBDA_TIMEOUT_SECONDS}]`,
    );
  }
  const { stepTimeLimitSeconds } = o;
  if (
    stepTimeLimitSeconds !== undefined &&
    (typeof stepTimeLimitSeconds !== 'number' || !(stepTimeLimitSeconds >= 1) || stepTimeLimitSeconds > o.timeLimitSeconds)
  ) {
    throw new TaskDefinitionError(
      name,
      'stepTimeLimitSeconds',
      stepTimeLimitSeconds,
      `a number of seconds in [1, timeLimitSeconds (${o.timeLimitSeconds})]`,
    );
  }
  const maxRetries = o.maxRetries ?? 3;
  if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > 100) {
    throw new TaskDefinitionError(name, 'maxRetries', maxRetries, 'an integer 0..100');
  }
  const backoff = { ...DEFAULT_BACKOFF, ...o.backoff };
  if (!(backoff.baseSeconds >= 0) || !(backoff.capSeconds >= backoff.baseSeconds) || backoff.capSeconds > MAX_VISIBILITY_SECONDS) {
    throw new TaskDefinitionError(name, 'backoff', backoff, `0 ≤ baseSeconds ≤ capSeconds ≤ ${MAX_VISIBILITY_SECONDS}`);
  }
  const body = taskBody(name, o);
  if (o.validate !== undefined && typeof o.validate !== 'function') {
    throw new TaskDefinitionError(name, 'validate', o.validate, 'a function (payload) => payload');
  }
  for (const hook of HOOK_NAMES) {
    if (o[hook] !== undefined && typeof o[hook] !== 'function') throw new TaskDefinitionError(name, hook, o[hook], 'a function');
  }
  const limits = resolveLimits(o.limits, 'limits', name);
  const on = o.on === undefined ? [] : typeof o.on === 'string' ? [o.on] : o.on;
  if (!Array.isArray(on) || on.some((e) => typeof e !== 'string' || !EVENT_NAME_PATTERN.test(e)) || new Set(on).size !== on.length) {
    throw new TaskDefinitionError(name, 'on', o.on, 'an event name or a list of distinct event names (e.g. "orders.created")');
  }
  const waitsFor = eventWaits(name, o.waitsFor);
  const celery = celeryOptions(name, o);
  const unique = o.unique === undefined ? undefined : uniqueWindow(name, o.unique);
  const debounce = o.debounce === undefined ? undefined : debounceWindow(name, o.debounce);
  if (unique && debounce) {
    throw new TaskDefinitionError(
      name,
      'debounce',
      o.debounce,
      'no debounce on a task with a unique rule (a key is either held or debounced)',
    );
  }
  const ordered = o.ordered === undefined ? undefined : orderWindow(name, o);
  const retry = retryPolicy(name, o.retry, o.unrecoverable);
  const unrecoverable = o.unrecoverable ?? [];
  const redact = o.redact === undefined ? undefined : redactPaths(name, o.redact);
  return {
    kind: TASK_KIND,
    name,
    queue: o.queue,
    timeLimitSeconds: o.timeLimitSeconds,
    ...(stepTimeLimitSeconds !== undefined ? { stepTimeLimitSeconds } : {}),
    maxRetries,
    backoff,
    unrecoverable,
    retry,
    validate: o.validate,
    on: [...on],
    waitsFor,
    ...body,
    ...(limits ? { limits } : {}),
    ...(unique ? { unique } : {}),
    ...(debounce ? { debounce } : {}),
    ...(ordered ? { ordered } : {}),
    ...(redact && redact.length > 0 ? { redact } : {}),
    ...celery,
    ...(o.onSuccess ? { onSuccess: o.onSuccess } : {}),
    ...(o.onRetry ? { onRetry: o.onRetry } : {}),
    ...(o.onArchived ? { onArchived: o.onArchived } : {}),
  };
}

/** A task's body: `run`, or a `batch` rule with `runBatch` (its `run` made from it: a call of one item). */
function taskBody(name: string, o: Partial<TaskOptions> & { kind?: string }): Pick<TaskDefinition, 'run' | 'runBatch' | 'batch'> {
  const { runBatch } = o;
  if (o.batch === undefined && runBatch === undefined) {
    if (typeof o.run !== 'function') throw new TaskDefinitionError(name, 'run', o.run, 'a function (payload, ctx) => result');
    return { run: o.run };
  }
  if (typeof runBatch !== 'function') {
    throw new TaskDefinitionError(name, 'runBatch', runBatch, 'a function (items, ctx) => results, with a batch rule');
  }
  // A definition validated before (read back from a task bundle) carries the `run` made here: it is made again.
  if (o.run !== undefined && o.kind !== TASK_KIND) {
    throw new TaskDefinitionError(name, 'run', o.run, 'no run on a batch task (runBatch is its body)');
  }
  const batch = batchWindow(name, o.batch);
  return { batch, runBatch, run: (payload, ctx) => runAlone(runBatch, payload, ctx) };
}

/** One job run as a call of its own: the item's Error thrown, its result returned. */
async function runAlone(runBatch: NonNullable<TaskOptions['runBatch']>, payload: unknown, ctx: TaskContext): Promise<unknown> {
  const item: BatchItem = {
    jobId: ctx.jobId,
    payload,
    attempt: ctx.attempt,
    fencingToken: ctx.fencingToken,
    appData: ctx.appData,
    dependencies: ctx.dependencies,
    ...(ctx.event ? { event: ctx.event } : {}),
  };
  const results = await runBatch([item], {
    task: ctx.task,
    queue: ctx.queue,
    signal: ctx.signal,
    deadline: ctx.deadline,
    heartbeat: ctx.heartbeat,
    log: ctx.log,
  });
  if (results === undefined) return undefined;
  const problem = batchResultsProblem(results, 1);
  if (problem) throw new BatchResultError(ctx.task, problem);
  const [only] = results as ReadonlyArray<unknown>;
  if (only instanceof Error) throw only;
  return only;
}

/** What is wrong with what `runBatch` returned for `size` items, or undefined. */
export function batchResultsProblem(results: unknown, size: number): string | undefined {
  if (results === undefined) return undefined;
  if (!Array.isArray(results)) return `returned ${describeValue(results)}, not an array of ${size} results`;
  if (results.length !== size) return `returned ${results.length} results for ${size} items`;
  return undefined;
}

/** A task's `batch` rule, validated. */
export function batchWindow(name: string, rule: unknown): BatchWindow {
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
    throw new TaskDefinitionError(name, 'batch', rule, "{ maxSize: 1..1000, maxWaitMs?: 0..60000, key?: 'field' | (payload) => value }");
  }
  const { maxSize, maxWaitMs = DEFAULT_BATCH_WAIT_MS, key } = rule as BatchRule;
  if (!Number.isInteger(maxSize) || maxSize < 1 || maxSize > MAX_BATCH_SIZE) {
    throw new TaskDefinitionError(name, 'batch.maxSize', maxSize, `an integer 1..${MAX_BATCH_SIZE}`);
  }
  if (!Number.isInteger(maxWaitMs) || maxWaitMs < 0 || maxWaitMs > MAX_BATCH_WAIT_MS) {
    throw new TaskDefinitionError(name, 'batch.maxWaitMs', maxWaitMs, `an integer number of ms 0..${MAX_BATCH_WAIT_MS}`);
  }
  if (key !== undefined && typeof key !== 'function' && !(typeof key === 'string' && REDACT_PATH.test(key))) {
    throw new TaskDefinitionError(
      name,
      'batch.key',
      key,
      "a dotted payload path ('accountId', 'account.id') or a function (payload) => value",
    );
  }
  return { maxSize, maxWaitMs, ...(key !== undefined ? { key: key as NonNullable<BatchWindow['key']> } : {}) };
}

/** A dotted path of payload keys: no empty segment, no spaces. */
const REDACT_PATH = /^[^.\s]+(\.[^.\s]+)*$/;

/** A task's `redact` paths, validated: distinct dotted paths, at most 50. */
function redactPaths(name: string, paths: unknown): string[] {
  if (
    !Array.isArray(paths) ||
    paths.length > 50 ||
    paths.some((p) => typeof p !== 'string' || !REDACT_PATH.test(p)) ||
    new Set(paths).size !== paths.length
  ) {
    throw new TaskDefinitionError(
      name,
      'redact',
      paths,
      "a list of up to 50 distinct dotted payload paths, e.g. ['card.number', 'password']",
    );
  }
  return [...paths];
}

/** A task's `waitsFor`, validated: distinct events, each a name with an optional dotted payload path to match on. */
function eventWaits(name: string, given: unknown): EventWaitRule[] {
  if (given === undefined) return [];
  const expected = "a list of event names or { event, match?: 'payload.path' }, each event once";
  if (!Array.isArray(given)) throw new TaskDefinitionError(name, 'waitsFor', given, expected);
  const rules = given.map((g): EventWaitRule => {
    const rule = typeof g === 'string' ? { event: g } : (g as Partial<EventWaitRule> | null);
    if (!rule || typeof rule.event !== 'string' || !EVENT_NAME_PATTERN.test(rule.event))
      throw new TaskDefinitionError(name, 'waitsFor', g, expected);
    if (rule.match !== undefined && (typeof rule.match !== 'string' || !REDACT_PATH.test(rule.match))) {
      throw new TaskDefinitionError(name, 'waitsFor.match', rule.match, "a dotted payload path, e.g. 'order' or 'order.id'");
    }
    return { event: rule.event, ...(rule.match !== undefined ? { match: rule.match } : {}) };
  });
  if (new Set(rules.map((r) => r.event)).size !== rules.length) throw new TaskDefinitionError(name, 'waitsFor', given, expected);
  return rules;
}

/**
 * A task's `ordered` rule, validated: `true` or `{ onFailure }`, and refused beside the rules that
 * decide otherwise which of a key's jobs runs, or when.
 */
function orderWindow(
  name: string,
  o: {
    readonly ordered?: unknown;
    readonly unique?: unknown;
    readonly debounce?: unknown;
    readonly batch?: unknown;
    readonly limits?: unknown;
  },
): OrderWindow {
  const rule = o.ordered;
  const given = rule === true ? {} : rule;
  if (typeof given !== 'object' || given === null || Array.isArray(given)) {
    throw new TaskDefinitionError(name, 'ordered', rule, "true or { onFailure: 'continue' | 'block' }");
  }
  const fields = given as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    if (field !== 'onFailure') throw new TaskDefinitionError(name, `ordered.${field}`, fields[field], 'onFailure');
  }
  const onFailure = fields.onFailure ?? 'continue';
  if (onFailure !== 'continue' && onFailure !== 'block') {
    throw new TaskDefinitionError(name, 'ordered.onFailure', onFailure, "'continue' or 'block'");
  }
  const beside = (['unique', 'debounce', 'batch'] as const).find((f) => o[f] !== undefined);
  if (beside) {
    throw new TaskDefinitionError(
      name,
      beside,
      o[beside],
      `no ${beside} on an ordered task (its key's jobs run one at a time, each once, in publish order)`,
    );
  }
  if ((o.limits as { per?: unknown } | undefined)?.per !== undefined) {
    throw new TaskDefinitionError(
      name,
      'limits.per',
      (o.limits as { per?: unknown }).per,
      'no per-key limits on an ordered task (it runs one job per key at a time)',
    );
  }
  return { onFailure };
}

/** A task's `unique` rule, validated: `for` in seconds (1 s..30 days), `while` distinct job states. */
export function uniqueWindow(name: string, rule: unknown): UniqueWindow {
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
    throw new TaskDefinitionError(name, 'unique', rule, "{ for: '10m' | seconds, while?: job states }");
  }
  // A definition validated before (a task bundle's modules are read back through here) carries `forSeconds`.
  const given = 'forSeconds' in rule ? (rule as UniqueWindow).forSeconds : (rule as { for?: unknown }).for;
  const seconds = durationSeconds(given);
  if (!(seconds >= 1 && seconds <= MAX_UNIQUE_SECONDS)) {
    throw new TaskDefinitionError(name, 'unique.for', given, "seconds 1..2592000, or '90s', '10m', '2h', '30d' (1 s to 30 days)");
  }
  const states = (rule as { while?: unknown }).while ?? UNIQUE_WHILE_DEFAULT;
  const allowed = JOB_STATES.filter((s) => s !== 'deduplicated');
  if (
    !Array.isArray(states) ||
    states.length === 0 ||
    states.some((s) => !(allowed as readonly unknown[]).includes(s)) ||
    new Set(states).size !== states.length
  ) {
    throw new TaskDefinitionError(name, 'unique.while', states, `a non-empty list of distinct job states (${allowed.join(', ')})`);
  }
  return { forSeconds: seconds, while: [...states] as JobState[] };
}

/**
 * A task's `debounce` rule, validated: `period` 1 s..15 min, `maxWait` from `period` to 15 min (both
 * bounded by SQS's longest `DelaySeconds`); `maxWait` defaults to 15 minutes.
 */
export function debounceWindow(name: string, rule: unknown): DebounceWindow {
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) {
    throw new TaskDefinitionError(name, 'debounce', rule, "{ period: '2s' | seconds, maxWait?: '10s' | seconds }");
  }
  // A definition validated before (read back from a task bundle) carries the resolved fields.
  const resolved = 'periodSeconds' in rule ? (rule as DebounceWindow) : undefined;
  const period = resolved ? resolved.periodSeconds : (rule as { period?: unknown }).period;
  const periodSeconds = durationSeconds(period);
  if (!(periodSeconds >= 1 && periodSeconds <= MAX_DEBOUNCE_SECONDS)) {
    throw new TaskDefinitionError(
      name,
      'debounce.period',
      period,
      `seconds 1..${MAX_DEBOUNCE_SECONDS}, or '2s', '1m', '15m' (1 s to 15 minutes: SQS delays a message at most 900 s)`,
    );
  }
  const maxWait = resolved ? resolved.maxWaitSeconds : ((rule as { maxWait?: unknown }).maxWait ?? MAX_DEBOUNCE_SECONDS);
  const maxWaitSeconds = durationSeconds(maxWait);
  if (!(maxWaitSeconds >= periodSeconds && maxWaitSeconds <= MAX_DEBOUNCE_SECONDS)) {
    throw new TaskDefinitionError(
      name,
      'debounce.maxWait',
      maxWait,
      `seconds from the period (${periodSeconds}) to ${MAX_DEBOUNCE_SECONDS}, or '10s', '5m' (at most 15 minutes: SQS delays a message at most 900 s)`,
    );
  }
  return { periodSeconds, maxWaitSeconds };
}

/** A task's `celeryName` and `celeryArgs`, validated. */
function celeryOptions(name: string, o: Partial<TaskOptions>): Pick<TaskDefinition, 'celeryName' | 'celeryArgs'> {
  const { celeryName, celeryArgs } = o;
  if (celeryName !== undefined && (typeof celeryName !== 'string' || !CELERY_NAME_PATTERN.test(celeryName))) {
    throw new TaskDefinitionError(name, 'celeryName', celeryName, 'a Celery task name: 1..200 printable ASCII characters, no spaces');
  }
  if (celeryArgs === undefined) return celeryName !== undefined ? { celeryName } : {};
  if (celeryName === undefined) throw new TaskDefinitionError(name, 'celeryArgs', celeryArgs, 'no celeryArgs without a celeryName');
  if (
    !Array.isArray(celeryArgs) ||
    celeryArgs.length > MAX_CELERY_ARGS ||
    celeryArgs.some((key) => typeof key !== 'string' || key.length === 0 || key.length > 128) ||
    new Set(celeryArgs).size !== celeryArgs.length
  ) {
    throw new TaskDefinitionError(
      name,
      'celeryArgs',
      celeryArgs,
      `a list of at most ${MAX_CELERY_ARGS} distinct payload keys (1..128 characters)`,
    );
  }
  return { celeryName, celeryArgs: [...celeryArgs] };
}

/** Registered tasks by name: the only code a message can ever reach. */
export type TaskRegistry = ReadonlyMap<string, TaskDefinition>;

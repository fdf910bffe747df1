/**
 * Every error taskworker throws on purpose. Branch with `instanceof`, never on message text.
 * Each subclass sets a literal `name` so it survives minification.
 */

/** An error as it crosses a thread boundary and lands in the archive. */
export interface SerializedError {
  readonly type: string;
  readonly message: string;
  readonly stack?: string;
}

/** Base class of all taskworker errors. */
export class TaskworkerError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TaskworkerError';
  }
}

/** A configuration value is invalid. Raised at synth/start, naming the field and the value. */
export class ConfigError extends TaskworkerError {
  readonly field: string;
  readonly value: unknown;
  constructor(field: string, value: unknown, expected: string) {
    super(`Invalid config ${field} = ${describeValue(value)}: expected ${expected}`);
    this.name = 'ConfigError';
    this.field = field;
    this.value = value;
  }
}

/** A task module or definition is invalid (bad name, duplicate, queue mismatch, limits). */
export class TaskDefinitionError extends TaskworkerError {
  readonly task: string;
  readonly field: string;
  readonly value: unknown;
  constructor(task: string, field: string, value: unknown, expected: string) {
    super(`Invalid task ${task}: ${field} = ${describeValue(value)}: expected ${expected}`);
    this.name = 'TaskDefinitionError';
    this.task = task;
    this.field = field;
    this.value = value;
  }
}

/** A message body is not a valid envelope v1. `code` is machine-readable. */
export class EnvelopeError extends TaskworkerError {
  readonly code: MalformedCode;
  readonly field: string | undefined;
  constructor(code: MalformedCode, detail: string, field?: string) {
    super(`Malformed envelope (${code}): ${detail}`);
    this.name = 'EnvelopeError';
    this.code = code;
    this.field = field;
  }
}

/** Machine-readable reasons a message body is rejected before any task code runs. */
export type MalformedCode =
  | 'not-json'
  | 'not-object'
  | 'bad-task-name'
  | 'bad-version'
  | 'bad-id'
  | 'bad-published-at'
  | 'bad-run-at'
  | 'bad-expires-at'
  | 'too-deep'
  | 'too-large'
  | 'bad-depends-on'
  | 'bad-awaits'
  | 'bad-member-of'
  | 'bad-on-dependency-failure'
  | 'bad-tags'
  | 'bad-key'
  | 'bad-seq'
  | 'bad-event'
  | 'bad-payload-ref';

/** A batch task's `runBatch` returned something other than one result per item (or nothing): every item of the call fails with it. */
export class BatchResultError extends TaskworkerError {
  readonly task: string;
  constructor(task: string, problem: string) {
    super(`runBatch of task ${task} ${problem}: return nothing, or one result (or Error) per item in the order given`);
    this.name = 'BatchResultError';
    this.task = task;
  }
}

/** A dependency's return value was too large for its job record, so its dependent cannot read it. */
export class ResultTooLargeError extends TaskworkerError {
  readonly jobId: string;
  readonly bytes: number;
  constructor(jobId: string, bytes: number, limit: number) {
    super(
      `The result of job ${JSON.stringify(jobId)} was ${bytes} bytes of JSON and was not kept (taskworker keeps up to ${limit}, ` +
        "over 1 KB in the version's bucket): return a key to where the task stored it",
    );
    this.name = 'ResultTooLargeError';
    this.jobId = jobId;
    this.bytes = bytes;
  }
}

/** A job named as a dependency cannot be one: unknown, the job itself, closing a cycle, or on a queue not tracked `full`. */
export class DependencyError extends TaskworkerError {
  readonly dependency: string;
  constructor(dependency: string, detail: string) {
    super(`Dependency ${JSON.stringify(dependency)} refused: ${detail}`);
    this.name = 'DependencyError';
    this.dependency = dependency;
  }
}

/** A publish request names a task or queue that this publisher does not know. */
export class UnknownTaskError extends TaskworkerError {
  readonly task: string;
  constructor(task: string, detail: string) {
    super(`Unknown task ${JSON.stringify(task)}: ${detail}`);
    this.name = 'UnknownTaskError';
    this.task = task;
  }
}

/** An emit names an event the app does not declare in its config's `events`. */
export class UnknownEventError extends TaskworkerError {
  readonly event: string;
  constructor(event: string, declared: readonly string[]) {
    super(`Unknown event ${JSON.stringify(event)}: not declared in the config's events (${declared.join(', ') || 'none declared'})`);
    this.name = 'UnknownEventError';
    this.event = event;
  }
}

/** An emitted event's payload was refused by its declared `validate` (or is not JSON); nothing was sent. */
export class InvalidEventPayloadError extends TaskworkerError {
  readonly event: string;
  constructor(event: string, detail: string, options?: { cause?: unknown }) {
    super(`Invalid payload for event ${JSON.stringify(event)}: ${detail}`, options);
    this.name = 'InvalidEventPayloadError';
    this.event = event;
  }
}

/** A publish request names a queue that is not configured. */
export class UnknownQueueError extends TaskworkerError {
  readonly queue: string;
  constructor(queue: string, known: readonly string[]) {
    super(`Unknown queue ${JSON.stringify(queue)}: configured queues are ${known.join(', ')}`);
    this.name = 'UnknownQueueError';
    this.queue = queue;
  }
}

/** An encoded message exceeds what SQS (and the archive's metadata reserve) allows. */
export class MessageTooLargeError extends TaskworkerError {
  readonly bytes: number;
  readonly limit: number;
  constructor(task: string, bytes: number, limit: number, kind: 'task' | 'event' = 'task') {
    super(`Message for ${kind} ${JSON.stringify(task)} is ${bytes} bytes; the limit is ${limit} bytes`);
    this.name = 'MessageTooLargeError';
    this.bytes = bytes;
    this.limit = limit;
  }
}

/** A claim check's object (a payload or a kept result) is not in its bucket (never put, or deleted when its job ended, or expired). */
export class PayloadMissingError extends TaskworkerError {
  readonly bucket: string;
  readonly key: string;
  constructor(bucket: string, key: string, options?: { cause?: unknown }) {
    super(`No object s3://${bucket}/${key} (never put, or deleted or expired since)`, options);
    this.name = 'PayloadMissingError';
    this.bucket = bucket;
    this.key = key;
  }
}

/** A claim check's object is there but is not what its reference says (another size or SHA-256, not JSON, too deep). */
export class ClaimCheckError extends TaskworkerError {
  readonly bucket: string;
  readonly key: string;
  constructor(bucket: string, key: string, detail: string) {
    super(`The object s3://${bucket}/${key} ${detail}`);
    this.name = 'ClaimCheckError';
    this.bucket = bucket;
    this.key = key;
  }
}

/** A publish option is out of range (delay, id). */
export class PublishOptionError extends TaskworkerError {
  readonly option: string;
  readonly value: unknown;
  constructor(option: string, value: unknown, expected: string) {
    super(`Invalid publish option ${option} = ${describeValue(value)}: expected ${expected}`);
    this.name = 'PublishOptionError';
    this.option = option;
    this.value = value;
  }
}

/** A token's completion given something it cannot take: text that is not a token, or a value that is not JSON of at most 1 KB. */
export class TokenValueError extends TaskworkerError {
  readonly field: 'token' | 'value';
  readonly value: unknown;
  constructor(field: 'token' | 'value', value: unknown, expected: string) {
    super(`Invalid ${field} ${describeValue(value)}: expected ${expected}`);
    this.name = 'TokenValueError';
    this.field = field;
    this.value = value;
  }
}

/**
 * A key's debounce cycle changed hands at every one of a publish's writes (other publishers kept
 * taking over the abandoned cycles it found): nothing was sent; publishing again is safe.
 */
export class KeyContentionError extends TaskworkerError {
  readonly task: string;
  readonly key: string;
  readonly writes: number;
  constructor(task: string, key: string, writes: number) {
    super(
      `The debounce cycle of task ${JSON.stringify(task)} and key ${JSON.stringify(key)} changed at each of ${writes} writes; nothing was sent`,
    );
    this.name = 'KeyContentionError';
    this.task = task;
    this.key = key;
    this.writes = writes;
  }
}

/** Kale's publish-time check: the task's time limit must fit the target queue's visibility timeout. */
export class TimeLimitExceedsVisibilityError extends TaskworkerError {
  constructor(task: string, timeLimitSeconds: number, queue: string, visibilityTimeoutSeconds: number) {
    super(
      `Task ${JSON.stringify(task)} has timeLimitSeconds ${timeLimitSeconds}, which does not fit ` +
        `queue ${JSON.stringify(queue)} visibilityTimeoutSeconds ${visibilityTimeoutSeconds}`,
    );
    this.name = 'TimeLimitExceedsVisibilityError';
  }
}

/** One entry of a batch publish that still failed after retries. */
export interface FailedPublish {
  readonly index: number;
  readonly task: string;
  readonly code: string;
  readonly message: string;
}

/** Some entries of `publishBatch` could not be sent; `failed` lists them, `sent` the rest. */
export class PublishBatchError extends TaskworkerError {
  readonly failed: readonly FailedPublish[];
  readonly sent: readonly { index: number; messageId: string; jobId: string }[];
  constructor(failed: readonly FailedPublish[], sent: readonly { index: number; messageId: string; jobId: string }[]) {
    super(
      `${failed.length} of ${failed.length + sent.length} messages were not published: ` +
        failed
          .slice(0, 3)
          .map((f) => `#${f.index} ${f.code}`)
          .join(', '),
    );
    this.name = 'PublishBatchError';
    this.failed = failed;
    this.sent = sent;
  }
}

/** Throw from a task to archive the job at once, without retries. */
export class UnrecoverableError extends TaskworkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UnrecoverableError';
  }
}

/** What a step broke: its order or name against the kept steps, its result, or their number. */
export type StepProblem =
  | 'order'
  | 'duplicate-name'
  | 'bad-name'
  | 'after-failure'
  | 'too-large'
  | 'not-json'
  | 'too-many'
  /** A sleep's duration or a wait's timeout that is not 0..1 year (ms, '90s', '2h', '7d', or a Date). */
  | 'bad-duration'
  /** A sleep or a wait where nothing keeps steps (a queue without tracking `full`). */
  | 'untracked'
  /** A wait for an event the task does not declare in `waitsFor`. */
  | 'undeclared-event';

/**
 * A body's `ctx.step.run` that cannot be kept or replayed: run again, it would break the same way
 * (a step order that differs from the kept one, a name used twice, a result too large), so the job is
 * archived at once (`unrecoverable`) naming the step.
 */
export class StepError extends UnrecoverableError {
  readonly problem: StepProblem;
  readonly step: string;
  constructor(problem: StepProblem, step: string, detail: string) {
    super(`step ${JSON.stringify(step)}: ${detail}`);
    this.name = 'StepError';
    this.problem = problem;
    this.step = step;
  }
}

/**
 * A step (`ctx.step.run` of a task with `stepTimeLimitSeconds`) that ran past its limit: the attempt
 * fails (and is retried, from its kept steps).
 */
export class StepTimeLimitError extends TaskworkerError {
  constructor(
    readonly step: string,
    readonly limitMs: number,
  ) {
    super(`step ${JSON.stringify(step)} ran past its ${limitMs / 1000} s limit (stepTimeLimitSeconds)`);
    this.name = 'StepTimeLimitError';
  }
}

/**
 * How a body's sleep or wait ends its attempt (`ctx.step.sleep`, `waitForToken`, a continuation):
 * thrown out of the body, which must let it pass. The attempt's outcome is the park, whatever the
 * body does after catching it.
 */
export class StepParked extends Error {
  constructor(readonly step: string) {
    super(`the job parks at step ${JSON.stringify(step)}; its attempt ends here`);
    this.name = 'StepParked';
  }
}

/**
 * Throw from a task to run the job again at a time it names, using none of its attempts: an API that
 * answered 429 or 503 with `Retry-After`, a resource not ready yet. `after` is ms from now or a Date;
 * the wait is at most SQS's 12-hour visibility (longer asks wait 12 h). A task's `retry.maxRetryAfters`
 * (default 10) bounds how many times a job may do this; past it the throw counts as an ordinary failure.
 * Exact on queues with tracking `full`, which count them on the job's record; elsewhere a re-run at the
 * asked time uses an attempt.
 * @example throw new RetryAfterError(Number(res.headers.get('retry-after')) * 1000);
 */
export class RetryAfterError extends TaskworkerError {
  /** ms from the throw until the job may run again. */
  readonly retryAfterMs: number;
  constructor(after: number | Date, options?: { cause?: unknown }) {
    const ms = after instanceof Date ? after.getTime() - Date.now() : after;
    if (typeof ms !== 'number' || !Number.isFinite(ms)) {
      throw new TypeError(`RetryAfterError needs ms from now or a valid Date, got ${String(after)}`);
    }
    const wait = Math.max(0, Math.round(ms));
    super(`run again in ${wait} ms`, options);
    this.name = 'RetryAfterError';
    this.retryAfterMs = wait;
  }
}

/** What a {@link RateLimitedError} pauses, fleet-wide: the job's task, its task and key, or its queue. */
export type RateLimitScope = 'task' | 'key' | 'queue';

/** How an HTTP response is read by {@link RateLimitedError.fromResponse}: fetch's, axios's or Node's. */
export interface HttpResponseLike {
  readonly status?: number;
  readonly statusCode?: number;
  readonly headers?: { get(name: string): string | null | undefined } | Readonly<Record<string, unknown>>;
}

/**
 * Throw from a task when an API said "too many requests": the job runs again after `for` (ms or a
 * Date) using none of its attempts, as {@link RetryAfterError} does, and every dispatcher of the
 * version holds the other jobs of `scope` until then — the task's (default), the task's with this
 * job's `key`, or the job's queue — while the rest runs. The held jobs are handed back to their
 * queue until the pause ends, not received again and again. Bounded like RetryAfterError by the
 * task's `retry.maxRetryAfters`; the pause is at most 12 hours.
 * @example throw new RateLimitedError({ for: 120_000, scope: 'task' });
 */
export class RateLimitedError extends RetryAfterError {
  readonly scope: RateLimitScope;
  constructor(options: { for: number | Date; scope?: RateLimitScope; cause?: unknown }) {
    const scope = options?.scope ?? 'task';
    if (!['task', 'key', 'queue'].includes(scope)) {
      throw new TypeError(`RateLimitedError scope must be 'task', 'key' or 'queue', got ${JSON.stringify(scope)}`);
    }
    super(options?.for, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'RateLimitedError';
    this.message = `rate limited: ${scope} paused for ${this.retryAfterMs} ms`;
    this.scope = scope;
  }

  /**
   * The error an HTTP response means, else undefined: a 429, or a 503 that names a `Retry-After`,
   * waits what `Retry-After` says (seconds or an HTTP date), else `defaultMs`.
   * @example const limited = RateLimitedError.fromResponse(res); if (limited) throw limited;
   */
  static fromResponse(
    response: HttpResponseLike,
    options: { scope?: RateLimitScope; defaultMs?: number } = {},
  ): RateLimitedError | undefined {
    const status = response.status ?? response.statusCode;
    const header = retryAfterHeader(response.headers);
    if (status !== 429 && !(status === 503 && header !== undefined)) return undefined;
    const asked = header === undefined ? undefined : retryAfterHeaderMs(header, Date.now());
    return new RateLimitedError({ for: asked ?? options.defaultMs ?? 60_000, scope: options.scope ?? 'task' });
  }
}

function retryAfterHeader(headers: HttpResponseLike['headers']): string | undefined {
  if (!headers) return undefined;
  const raw =
    typeof (headers as { get?: unknown }).get === 'function'
      ? (headers as { get(name: string): string | null | undefined }).get('retry-after')
      : Object.entries(headers).find(([name]) => name.toLowerCase() === 'retry-after')?.[1];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** `Retry-After` as ms from `now` (RFC 9110 §10.2.3: delay-seconds or an HTTP date); undefined when it is neither. */
export function retryAfterHeaderMs(value: string, now: number): number | undefined {
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** A task's own `validate` rejected its payload: archived as `invalid-payload`, never retried. */
export class InvalidPayloadError extends TaskworkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'InvalidPayloadError';
  }
}

/** The worker thread running a task died (out of memory, process.exit, native crash). */
export class WorkerCrashedError extends TaskworkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WorkerCrashedError';
  }
}

/**
 * A heartbeat found that the attempt no longer holds the job: a newer attempt took it over, or an
 * operator cancelled it. Stop: the outcome will be rejected (or the job ends `cancelled`).
 */
export class LeaseLostError extends TaskworkerError {
  readonly jobId: string;
  readonly fencingToken: number;
  constructor(jobId: string, fencingToken: number) {
    super(`Job ${jobId}: attempt ${fencingToken} no longer holds the job (a newer attempt took it over, or it was cancelled)`);
    this.name = 'LeaseLostError';
    this.jobId = jobId;
    this.fencingToken = fencingToken;
  }
}

/** A job's `expiresAt` passed before an attempt could start: it is archived `expired`, never run. */
export class JobExpiredError extends TaskworkerError {
  readonly jobId: string;
  readonly expiresAt: number;
  constructor(jobId: string, expiresAt: number, now: number) {
    super(
      `Job ${jobId} expired at ${new Date(expiresAt).toISOString()}, ${Math.round((now - expiresAt) / 1000)} s before an attempt could start`,
    );
    this.name = 'JobExpiredError';
    this.jobId = jobId;
    this.expiresAt = expiresAt;
  }
}

/** An operator cancelled the running job (`jobs cancel`, `publisher.cancel`, the dashboard): the reason its AbortSignal carries. */
export class JobCancelledError extends TaskworkerError {
  readonly jobId: string;
  constructor(jobId: string) {
    super(`Job ${jobId} was cancelled by an operator`);
    this.name = 'JobCancelledError';
    this.jobId = jobId;
  }
}

/** `ctx.progress(data)` was given more JSON than a job record keeps, or something that is not JSON. */
export class ProgressTooLargeError extends TaskworkerError {
  readonly bytes: number;
  readonly limit: number;
  constructor(bytes: number, limit: number) {
    super(
      Number.isFinite(bytes)
        ? `ctx.progress(data): ${bytes} bytes of JSON, more than the ${limit} a job record keeps`
        : 'ctx.progress(data): data is not JSON-serializable',
    );
    this.name = 'ProgressTooLargeError';
    this.bytes = bytes;
    this.limit = limit;
  }
}

/** The dispatcher process's resident set passed `dispatcher.rssLimitMb`: it stops taking work. */
export class MemoryLimitError extends TaskworkerError {
  readonly rssBytes: number;
  readonly limitBytes: number;
  constructor(rssBytes: number, limitBytes: number) {
    super(`resident set ${Math.round(rssBytes / 1_048_576)} MB is over the limit of ${Math.round(limitBytes / 1_048_576)} MB`);
    this.name = 'MemoryLimitError';
    this.rssBytes = rssBytes;
    this.limitBytes = limitBytes;
  }
}

/** A task did not finish within its time limit and was stopped. */
export class TimeLimitExceededError extends TaskworkerError {
  readonly timeLimitMs: number;
  constructor(task: string, timeLimitMs: number) {
    super(`Task ${JSON.stringify(task)} exceeded its time limit of ${timeLimitMs} ms`);
    this.name = 'TimeLimitExceededError';
    this.timeLimitMs = timeLimitMs;
  }
}

/** A tasks bundle or task module could not be loaded. */
export class BundleError extends TaskworkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BundleError';
  }
}

/** A module of the user's project (a task module, the config) threw while it was being loaded. */
export class ModuleLoadError extends BundleError {
  /** The module's path in the project. */
  readonly file: string;
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ModuleLoadError';
    this.file = file;
  }
}

/** A package that taskworker needs for this use is not installed (an optional peer dependency). */
export class MissingDependencyError extends TaskworkerError {
  readonly dependency: string;
  constructor(dependency: string, message: string) {
    super(message);
    this.name = 'MissingDependencyError';
    this.dependency = dependency;
  }
}

/** The queue service cannot run a move task here; the caller may move the messages itself. */
export class MoveTaskUnavailableError extends TaskworkerError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MoveTaskUnavailableError';
  }
}

/**
 * A change to the config that a running `taskworker dev` cannot apply live (another app name: every
 * queue, table and topic is named after it). The running build keeps running; a restart applies it.
 */
export class RestartRequiredError extends TaskworkerError {
  readonly field: string;
  readonly was: unknown;
  readonly now: unknown;
  constructor(field: string, was: unknown, now: unknown) {
    super(
      `The config's ${field} changed from ${describeValue(was)} to ${describeValue(now)}: this change needs a restart of taskworker dev (the running build keeps running)`,
    );
    this.name = 'RestartRequiredError';
    this.field = field;
    this.was = was;
    this.now = now;
  }
}

/**
 * An AWS client taskworker built found no region (none given, no `AWS_REGION`, no profile with one):
 * raised at its first call instead of the SDK's "Region is missing", saying how to give one or how
 * to reach a running `taskworker dev`.
 */
export class MissingRegionError extends TaskworkerError {
  /** The AWS service the client was for (SQS, DynamoDB, SNS, S3). */
  readonly service: string;
  constructor(service: string, options?: { cause?: unknown }) {
    super(
      `No AWS region for ${service}: set AWS_REGION (or a profile's region), or pass clientConfig.region. ` +
        'To reach a running `taskworker dev`, export the line it prints, or build the publisher with Publisher.forLocalDev({ config })',
      options,
    );
    this.name = 'MissingRegionError';
    this.service = service;
  }
}

/** `Publisher.forLocalDev()`: no `taskworker dev` is running in the directory given or above it. */
export class LocalDevNotFoundError extends TaskworkerError {
  /** Where it was looked for (and in every directory above). */
  readonly dir: string;
  constructor(dir: string) {
    super(
      `No taskworker dev is running in ${dir} or above it (none left a live .taskworker/dev.json): start one there with \`npx taskworker dev\``,
    );
    this.name = 'LocalDevNotFoundError';
    this.dir = dir;
  }
}

/** Another `taskworker dev` keeps its emulators' state in this directory and is running. */
export class DevStateInUseError extends TaskworkerError {
  readonly dir: string;
  readonly pid: number;
  constructor(dir: string, pid: number) {
    super(`A taskworker dev (pid ${pid}) is running with its state in ${dir}: stop it first, or run this one on its emulators with --join`);
    this.name = 'DevStateInUseError';
    this.dir = dir;
    this.pid = pid;
  }
}

/** Short, safe rendering of a bad value for error messages. */
/** `result()` / `jobs wait`: the job did not end within the time given. */
export class ResultTimeoutError extends TaskworkerError {
  readonly jobId: string;
  /** The state it was last seen in; undefined when it had no record. */
  readonly lastState: string | undefined;
  constructor(jobId: string, timeoutMs: number, lastState: string | undefined, hint = '') {
    super(
      `Job ${JSON.stringify(jobId)} did not end within ${timeoutMs} ms: ${lastState === undefined ? 'it has no record' : `it is ${lastState}`}${hint}`,
    );
    this.name = 'ResultTimeoutError';
    this.jobId = jobId;
    this.lastState = lastState;
  }
}

/** `result()` / `jobs wait` on a queue whose jobs' outcomes are not recorded (tracking other than `full`). */
export class ResultUnavailableError extends TaskworkerError {
  readonly queue: string;
  constructor(queue: string, tracking: string) {
    super(
      `Results of jobs on queue ${JSON.stringify(queue)} cannot be awaited: it is tracked ${JSON.stringify(tracking)}, and only 'full' tracking records how a job ended`,
    );
    this.name = 'ResultUnavailableError';
    this.queue = queue;
  }
}

export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 77)}...` : value);
  if (value === undefined) return 'undefined';
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  try {
    const json = JSON.stringify(value);
    return json.length > 80 ? `${json.slice(0, 77)}...` : json;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** An error as one log-friendly line: `Name: message`, or the value itself when it is not an Error. */
export function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

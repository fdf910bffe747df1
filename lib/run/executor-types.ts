import type { RateLimitScope, SerializedError } from '../errors';
import type { DependencyOutcome, TaskLogLevel } from '../tasks/task';
import type { StepWait, StepWaitAsk, StepWrite } from '../track/job-record';
import type { EventRef } from '../wire/event-ref';
import type { PayloadRef } from '../wire/payload-ref';

export type { SerializedError } from '../errors';

/** Everything a worker needs to run one task. */
export interface TaskRun {
  readonly task: string;
  readonly jobId: string;
  readonly queue: string;
  /** Attempts the job has used, this one included (runs that asked to run again later, RetryAfterError, use none). */
  readonly attempt: number;
  readonly payload: unknown;
  readonly appData: unknown;
  /** The task's time limit; its clock starts when the body starts. */
  readonly timeLimitMs: number;
  /** The claim's token (tracking `full`), else the attempt: handlers guard their own writes with it. */
  readonly fencingToken: number;
  /** How the jobs it waited for ended (jobs with dependencies). */
  readonly dependencies?: readonly DependencyOutcome[];
  /** The event it runs for (a subscriber's job). */
  readonly event?: EventRef;
  /**
   * A batch task's call (lib/dispatch/batch-calls.ts): its items, each one job's part of the run
   * above (whose own payload is then unused), and the `batch.key` value they share. The outcome
   * reports each item's end in `items`.
   */
  readonly batch?: { readonly items: readonly BatchRunItem[]; readonly key?: string };
  /** The steps earlier attempts kept (`ctx.step.run`, sleeps, waits), in order: returned again without running. */
  readonly steps?: readonly KeptStep[];
}

/** A step an earlier attempt kept, as the body gets it back. */
export interface KeptStep {
  readonly name: string;
  readonly result?: string;
  /** A sleep's or a wait's step: where the job parked (or, for a token wait, was about to). */
  readonly wait?: StepWait;
  /** A token wait the job did park on (it has been resumed since): completed (`completedAt`, `result`) or timed out. */
  readonly waited?: boolean;
  readonly completedAt?: number;
}

/**
 * A body that ended its attempt at a step to park the job: a sleep, a token wait, or a continuation
 * (its next step would not fit the attempt's time). `keep`: the park write appends the step as
 * number `index` (a sleep); a token wait's step was kept before it, and a continuation keeps none.
 */
export interface StepPark {
  readonly index: number;
  readonly name: string;
  readonly wait: StepWaitAsk;
  readonly keep: boolean;
}

/** One job of a batch call, as the thread gets it. */
export interface BatchRunItem {
  readonly jobId: string;
  readonly payload: unknown;
  readonly attempt: number;
  readonly fencingToken: number;
  readonly appData: unknown;
  readonly dependencies?: readonly DependencyOutcome[];
  readonly event?: EventRef;
}

/** Calls a running task can make back into the dispatcher, and the dispatcher's way to stop it. */
export interface RunHooks {
  /** Extends the message's visibility and the job's lease; false when the lease was lost. */
  heartbeat(): Promise<boolean>;
  /** The task's latest `ctx.progress(data)`, as JSON (checked for size); kept until the next lease write. */
  progress?(json: string): void;
  /**
   * Fires when an operator cancels the job: the task's own signal aborts (with JobCancelledError),
   * and its thread is terminated after the kill grace if it does not end.
   */
  readonly cancel?: AbortSignal;
  /** Where the body's log lines go (`ctx.log`, `console`), one JSON line each; without it, the process's stdout and stderr. */
  log?(line: string, level: TaskLogLevel): void;
  /**
   * Keeps a step's result on the job's record (`ctx.step.run`), fenced by the attempt's token; false
   * when the attempt no longer holds the job. Without it steps are not kept: each attempt runs them all.
   */
  step?(step: StepWrite): Promise<boolean>;
}

/**
 * `retry-after`: the body threw RetryAfterError, asking to run again later without using an
 * attempt; `rate-limited`: RateLimitedError, the same and its scope paused fleet-wide.
 */
export type FailureKind = 'error' | 'unrecoverable' | 'invalid-payload' | 'crashed' | 'retry-after' | 'rate-limited';

/** A batch item's outcome says which call it ended in: its size, and whether this is its first item (counted once per call). */
export interface InCall {
  readonly call?: { readonly size: number; readonly first: boolean };
}

export type TaskOutcome = InCall &
  (
    | {
        readonly status: 'succeeded';
        readonly durationMs: number;
        readonly result?: string;
        /** The size of a return value too large to keep on the record (its JSON, bytes): the record says so instead. */
        readonly resultBytes?: number;
        /**
         * The JSON of a return value too large for the record but within a claim check's 10 MiB: the
         * dispatcher keeps it in the version's bucket (its `resultRef`) before the record is written.
         */
        readonly largeResult?: string;
        /** Where the dispatcher kept `largeResult` (it replaces it; never set by a task body). */
        readonly resultRef?: PayloadRef;
        /**
         * A batch call's body returned (or threw): how each item ended, in the order of the run's
         * `batch.items`. A call stopped from outside (its time limit, a crash) has no items: each ends as the call did.
         */
        readonly items?: readonly TaskOutcome[];
      }
    | {
        readonly status: 'failed';
        readonly kind: FailureKind;
        readonly durationMs: number;
        readonly error: SerializedError;
        /** With kind `retry-after` or `rate-limited`: ms from the throw until the job may run again. */
        readonly retryAfterMs?: number;
        /** With kind `rate-limited`: what the body's RateLimitedError pauses until then. */
        readonly pauseScope?: RateLimitScope;
      }
    | { readonly status: 'timed-out'; readonly durationMs: number; readonly error: SerializedError }
    /** The body parked its job at a step (`ctx.step.sleep`, `waitForToken`, a continuation): it resumes when due, no attempt used. */
    | { readonly status: 'parked'; readonly durationMs: number; readonly park: StepPark }
    /** An operator cancelled the job while it ran (or before its attempt started): whatever the body did, it ends here. */
    | { readonly status: 'cancelled'; readonly durationMs: number; readonly error: SerializedError }
  );

/** An outcome that ended the job's attempt unsuccessfully: it carries the error. */
export type FailedOutcome = Exclude<TaskOutcome, { status: 'succeeded' | 'parked' }>;

/** A worker set aside for one run by {@link TaskExecutor.reserve}: handed to `run`, or released. */
export interface RunReservation {
  /** Gives the worker back unused (a no-op once a run took it, or when released already). */
  release(): void;
}

/** Runs tasks under their time limits. Implementations: worker threads (production), inline (tests). */
export interface TaskExecutor {
  /** Runs `run`, on the worker `reservation` set aside when given one of this executor's. */
  run(run: TaskRun, hooks: RunHooks, reservation?: RunReservation): Promise<TaskOutcome>;
  /**
   * Waits until a run handed over now would start its body at once (a thread free and loaded), or
   * `deadline` (epoch ms) passes: false then. None: every run starts at once (inline, simulated).
   * A check, not a promise: another caller may take that thread first (see {@link reserve}).
   */
  ready?(deadline: number): Promise<boolean>;
  /**
   * Sets a free, loaded worker aside for one run, waiting for one until `deadline` (epoch ms):
   * undefined then. No other run takes it until it is handed to {@link run} or released, so a job
   * claimed after reserving starts its body at once. None: every run starts at once.
   */
  reserve?(deadline: number): Promise<RunReservation | undefined>;
  /** Stops all workers; runs still in progress end as crashed. */
  close(): Promise<void>;
}

const MESSAGE_LIMIT = 1000;
const STACK_LIMIT = 2000;

export function serializeError(error: unknown): SerializedError {
  if (error instanceof Error) {
    const type = error.name && error.name !== 'Error' ? error.name : error.constructor?.name || 'Error';
    const serialized: SerializedError = { type, message: truncate(String(error.message), MESSAGE_LIMIT) };
    return error.stack ? { ...serialized, stack: truncate(error.stack, STACK_LIMIT) } : serialized;
  }
  let message: string;
  try {
    message = typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
  } catch {
    message = Object.prototype.toString.call(error);
  }
  return { type: 'NonErrorThrown', message: truncate(message, MESSAGE_LIMIT) };
}

function truncate(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

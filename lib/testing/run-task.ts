import type { Random } from '../random';
import type { KeptStep, StepPark, TaskOutcome } from '../run/executor-types';
import { InlineExecutor } from '../run/inline-executor';
import type { TaskLogLine } from '../run/job-log';
import { decide, type Verdict } from '../settle/verdict';
import type { DependencyOutcome, TaskDefinition } from '../tasks/task';
import { waitOf } from '../track/job-record';
import type { EventRef } from '../wire/event-ref';

export interface RunTaskOptions {
  /** @defaultValue 1 */
  readonly attempt?: number;
  /** @defaultValue `'test-job'` */
  readonly jobId?: string;
  readonly appData?: unknown;
  /** What `ctx.dependencies` holds: the outcomes of the jobs it waited for. @defaultValue [] */
  readonly dependencies?: readonly DependencyOutcome[];
  /** What `ctx.event` holds: the event a subscriber runs for (`{ id, name, emittedAt, source? }`). @defaultValue none */
  readonly event?: EventRef;
  /** @defaultValue the attempt */
  readonly fencingToken?: number;
  /**
   * Runs of this job before this one that asked to run again later (RetryAfterError), which used no
   * attempt; with the task's `retry.maxRetryAfters` they decide whether this run's ask is honoured. @defaultValue 0
   */
  readonly retryAfters?: number;
  /** @defaultValue the task's own limit */
  readonly timeLimitMs?: number;
  /** After the limit, how long the run may go on before it is given up as timed out. @defaultValue 100 */
  readonly killGraceMs?: number;
  /**
   * What `ctx.heartbeat()` learns: true keeps the job (the default), false makes it reject with
   * `LeaseLostError`, as when a newer attempt took the job over.
   */
  readonly heartbeat?: () => boolean | Promise<boolean>;
  /**
   * The steps earlier attempts of this job kept (`ctx.step.run`), in order: the run gets them back
   * without running them, as a retry on the deployed system does. @defaultValue []
   */
  readonly steps?: readonly KeptStep[];
  /** The backoff's jitter for the verdict. @defaultValue Math.random */
  readonly random?: Random;
  /**
   * Cancels the run as an operator would (`jobs cancel`): `ctx.signal` aborts with
   * JobCancelledError, a body that ignores it is given up after the kill grace, and the status is
   * `cancelled`. @defaultValue never
   */
  readonly cancel?: AbortSignal;
}

export interface TaskRunResult<R = unknown> {
  /** How the run ended, judged as the dispatcher judges it. */
  readonly status: TaskOutcome['status'];
  /** What `run` returned, when it succeeded. */
  readonly result?: R;
  /** What `run` (or `validate`) threw, as thrown. */
  readonly error?: unknown;
  /**
   * What the dispatcher would do next with this outcome at this attempt: nothing more
   * (`succeeded`), another attempt after `seconds`, or the archive with its reason.
   */
  readonly verdict: Verdict;
  /** Calls the task made to `ctx.heartbeat()`. */
  readonly heartbeats: number;
  /** Every value the task passed to `ctx.progress(data)`, in order, as the job record would keep it (JSON, parsed back). */
  readonly progress: readonly unknown[];
  /**
   * The steps this run kept (`ctx.step.run`, a sleep, a token wait), in order, as the job's record
   * would add them after those it was given: give both to the next `runTask` as `steps` (a sleep's step then returns; a token
   * wait's returns once marked `waited`, with `completedAt` and its value's JSON as `result`, or `null` without).
   */
  readonly steps: readonly KeptStep[];
  /** Where the body parked its job (status `parked`): a sleep, a token wait, or a continuation. */
  readonly parked?: StepPark;
  /** Every line the task wrote with `ctx.log` or `console`, in order, as the job's log keeps it (here, not on stdout). */
  readonly logs: readonly TaskLogLine[];
  readonly durationMs: number;
}

/**
 * Runs one task definition as the dispatcher would, in this process: `validate`, then `run` with a
 * context of your choosing (attempt, job id, app data, a signal that fires at the time limit, a
 * heartbeat you control), and the verdict the dispatcher would reach. For unit tests of your tasks.
 *
 * @example
 * ```ts
 * import { runTask } from 'taskworker/testing';
 * import chargeCard from '../tasks/charge-card';
 *
 * const run = await runTask(chargeCard, { order: 'o-1', cents: 1999 }, { attempt: 4 });
 * expect(run.verdict).toEqual({ kind: 'archive', reason: 'exhausted' });
 * ```
 */
export async function runTask<P, R>(task: TaskDefinition<P, R>, payload: unknown, options: RunTaskOptions = {}): Promise<TaskRunResult<R>> {
  const attempt = options.attempt ?? 1;
  const seen: { result?: R; error?: unknown } = {};
  // The definition as given, watched: its return value and its throw as they are, not as the
  // dispatcher serializes them.
  const watched = {
    ...(task as TaskDefinition),
    validate: task.validate
      ? (value: unknown) => {
          try {
            return (task.validate as (v: unknown) => unknown)(value);
          } catch (error) {
            seen.error = error;
            throw error;
          }
        }
      : undefined,
    run: async (value: unknown, ctx: Parameters<TaskDefinition['run']>[1]) => {
      try {
        const result = await task.run(value as P, ctx);
        seen.result = result;
        return result;
      } catch (error) {
        seen.error = error;
        throw error;
      }
    },
  } as TaskDefinition;
  let heartbeats = 0;
  const progress: unknown[] = [];
  const logs: TaskLogLine[] = [];
  const steps: KeptStep[] = [];
  const executor = new InlineExecutor(new Map([[task.name, watched]]), options.killGraceMs ?? 100);
  const outcome = await executor.run(
    {
      task: task.name,
      jobId: options.jobId ?? 'test-job',
      queue: task.queue,
      attempt,
      payload,
      appData: options.appData ?? null,
      timeLimitMs: options.timeLimitMs ?? task.timeLimitSeconds * 1000,
      fencingToken: options.fencingToken ?? attempt,
      ...(options.dependencies ? { dependencies: options.dependencies } : {}),
      ...(options.event ? { event: options.event } : {}),
      ...(options.steps ? { steps: options.steps } : {}),
    },
    {
      heartbeat: async () => {
        heartbeats += 1;
        return options.heartbeat ? options.heartbeat() : true;
      },
      progress: (json) => {
        progress.push(JSON.parse(json));
      },
      log: (line) => {
        logs.push(JSON.parse(line) as TaskLogLine);
      },
      step: async ({ name, result, wait }) => {
        steps.push({ name, ...(result !== undefined ? { result } : {}), ...(wait ? { wait: waitOf(wait, Date.now()) } : {}) });
        return true;
      },
      ...(options.cancel ? { cancel: options.cancel } : {}),
    },
  );
  // A sleep's step is kept by the park itself, as the record would keep it.
  if (outcome.status === 'parked' && outcome.park.keep)
    steps.push({ name: outcome.park.name, wait: waitOf(outcome.park.wait, Date.now()) });
  return {
    status: outcome.status,
    ...(outcome.status === 'succeeded'
      ? { result: seen.result as R }
      : outcome.status === 'parked'
        ? { parked: outcome.park }
        : { error: seen.error ?? outcome.error }),
    verdict: decide(outcome, attempt + (options.retryAfters ?? 0), task, options.random ?? Math.random, options.retryAfters ?? 0),
    heartbeats,
    progress,
    logs,
    steps,
    durationMs: outcome.durationMs,
  };
}

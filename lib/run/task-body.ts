import {
  BatchResultError,
  InvalidPayloadError,
  JobCancelledError,
  LeaseLostError,
  ProgressTooLargeError,
  ResultTooLargeError,
  TimeLimitExceededError,
} from '../errors';
import { MAX_RESULT_BYTES } from '../policy/job-rules';
import { rateLimitOf, retryAfterMsOf, treatmentOf } from '../tasks/retry-policy';
import {
  type BatchContext,
  type BatchItem,
  batchResultsProblem,
  type DependencyOutcome,
  type TaskContext,
  type TaskDefinition,
} from '../tasks/task';
import { MAX_PROGRESS_BYTES } from '../track/job-record';
import { MAX_PAYLOAD_REF_BYTES } from '../wire/payload-ref';
import { type RunHooks, serializeError, type TaskOutcome, type TaskRun } from './executor-types';
import { inJobLogScope, taskLog } from './job-log';
import { taskSteps } from './steps';

/**
 * Runs one task body and classifies how it ended. Shared by the worker thread and the inline
 * executor, so both judge outcomes the same way. `signal` fires at the time limit, or with
 * JobCancelledError when an operator cancels the job.
 */
export async function runTaskBody(
  def: TaskDefinition,
  run: TaskRun,
  deadline: number,
  signal: AbortSignal,
  hooks: RunHooks,
): Promise<TaskOutcome> {
  if (run.batch) return runBatchBody(def, run, run.batch, deadline, signal, hooks);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let payload: unknown;
  try {
    payload = def.validate ? def.validate(run.payload) : run.payload;
  } catch (error) {
    const invalid = new InvalidPayloadError(error instanceof Error ? error.message : String(error), { cause: error });
    return { status: 'failed', kind: 'invalid-payload', durationMs: elapsed(), error: serializeError(invalid) };
  }
  const bindings = { jobId: run.jobId, attempt: run.attempt, task: run.task, queue: run.queue };
  const steps = taskSteps(run, hooks, {
    deadline,
    ...(def.stepTimeLimitSeconds !== undefined ? { stepTimeLimitMs: def.stepTimeLimitSeconds * 1000 } : {}),
    ...(def.waitsFor.length > 0 ? { waits: def.waitsFor } : {}),
  });
  const ctx: TaskContext = {
    jobId: run.jobId,
    task: run.task,
    queue: run.queue,
    attempt: run.attempt,
    appData: run.appData,
    signal,
    deadline,
    fencingToken: run.fencingToken,
    dependencies: dependenciesFor(run.dependencies),
    ...(run.event ? { event: run.event } : {}),
    heartbeat: async () => {
      if (!(await hooks.heartbeat())) throw new LeaseLostError(run.jobId, run.fencingToken);
    },
    progress: (data) => {
      hooks.progress?.(progressJson(data));
    },
    log: taskLog(bindings, hooks.log),
    step: steps.steps,
  };
  let ended: TaskOutcome;
  try {
    const kept = keptResult(await inJobLogScope(bindings, hooks.log, () => def.run(payload, ctx)));
    ended = { status: 'succeeded', durationMs: elapsed(), ...kept };
  } catch (error) {
    ended = thrownOutcome(error, def, run, signal, elapsed());
  }
  // Parked at a step: nothing after the sleep or wait counts, however the body went on (unless it was stopped).
  const park = steps.parked();
  return park && !signal.aborted ? { status: 'parked', durationMs: ended.durationMs, park } : ended;
}

/** How a body's throw ends it: cancelled or timed out when its signal fired, else a failure its task's retry rules classify. */
function thrownOutcome(error: unknown, def: TaskDefinition, run: TaskRun, signal: AbortSignal, durationMs: number): TaskOutcome {
  if (signal.reason instanceof JobCancelledError) {
    return { status: 'cancelled', durationMs, error: serializeError(signal.reason) };
  }
  if (signal.aborted) {
    return { status: 'timed-out', durationMs, error: serializeError(new TimeLimitExceededError(run.task, run.timeLimitMs)) };
  }
  return failureOf(error, def, durationMs);
}

/** A thrown (or, for a batch item, returned) error as a failed outcome, classified by the task's retry rules. */
function failureOf(error: unknown, def: TaskDefinition, durationMs: number): TaskOutcome {
  const treatment = treatmentOf(error, def.retry);
  const retryAfterMs = treatment === 'retry-after' || treatment === 'rate-limited' ? retryAfterMsOf(error) : undefined;
  const pauseScope = treatment === 'rate-limited' ? rateLimitOf(error)?.scope : undefined;
  return {
    status: 'failed',
    kind: treatment,
    durationMs,
    error: serializeError(error),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    ...(pauseScope !== undefined ? { pauseScope } : {}),
  };
}

/**
 * One call of a batch task: each item's payload through `validate` (one it refuses ends
 * `invalid-payload` on its own and is not in the call), then `runBatch` once with the rest. Its
 * outcome is `succeeded` with `items`, one outcome per item: a returned Error fails its item alone;
 * a throw (or a return that is not one result per item) fails every item in the call.
 */
async function runBatchBody(
  def: TaskDefinition,
  run: TaskRun,
  batch: NonNullable<TaskRun['batch']>,
  deadline: number,
  signal: AbortSignal,
  hooks: RunHooks,
): Promise<TaskOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const runBatch = def.runBatch;
  const outcomes: TaskOutcome[] = [];
  const called: Array<{ readonly at: number; readonly item: BatchItem }> = [];
  for (const [at, item] of batch.items.entries()) {
    try {
      const payload = def.validate ? def.validate(item.payload) : item.payload;
      called.push({ at, item: { ...item, payload, dependencies: dependenciesFor(item.dependencies) } });
    } catch (error) {
      const invalid = new InvalidPayloadError(error instanceof Error ? error.message : String(error), { cause: error });
      outcomes[at] = { status: 'failed', kind: 'invalid-payload', durationMs: 0, error: serializeError(invalid) };
    }
  }
  const bindings = {
    jobId: run.jobId,
    attempt: run.attempt,
    task: run.task,
    queue: run.queue,
    jobIds: called.map((c) => c.item.jobId),
  };
  const ctx: BatchContext = {
    task: run.task,
    queue: run.queue,
    ...(batch.key !== undefined ? { key: batch.key } : {}),
    signal,
    deadline,
    heartbeat: async () => {
      if (!(await hooks.heartbeat())) throw new LeaseLostError(run.jobId, run.fencingToken);
    },
    log: taskLog(bindings, hooks.log),
  };
  if (called.length > 0) {
    let ended: (i: number) => TaskOutcome;
    try {
      if (!runBatch) throw new TypeError(`task ${def.name} has no runBatch`);
      const results = await inJobLogScope(bindings, hooks.log, () =>
        runBatch(
          called.map((c) => c.item),
          ctx,
        ),
      );
      const problem = batchResultsProblem(results, called.length);
      if (problem) throw new BatchResultError(def.name, problem);
      const durationMs = elapsed();
      ended = (i) => {
        const result = (results as ReadonlyArray<unknown> | undefined)?.[i];
        if (result instanceof Error) return failureOf(result, def, durationMs);
        return { status: 'succeeded', durationMs, ...keptResult(result) };
      };
    } catch (error) {
      const failed = thrownOutcome(error, def, run, signal, elapsed());
      ended = () => failed;
    }
    called.forEach((c, i) => {
      outcomes[c.at] = ended(i);
    });
  }
  return { status: 'succeeded', durationMs: elapsed(), items: outcomes };
}

/**
 * The return value as kept: JSON up to {@link MAX_RESULT_BYTES} on the record; larger, its size and
 * (up to a claim check's {@link MAX_PAYLOAD_REF_BYTES}) its JSON, for the dispatcher to keep in S3.
 * Nothing for a value that is not JSON (a function, a cycle).
 */
export function keptResult(result: unknown): { result?: string; resultBytes?: number; largeResult?: string } {
  if (result === undefined) return {};
  try {
    const json = JSON.stringify(result);
    if (json === undefined) return {};
    const bytes = Buffer.byteLength(json);
    if (bytes <= MAX_RESULT_BYTES) return { result: json };
    return bytes <= MAX_PAYLOAD_REF_BYTES ? { resultBytes: bytes, largeResult: json } : { resultBytes: bytes };
  } catch {
    return {};
  }
}

/**
 * What the task sees of its dependencies: a dependency whose result was too large to keep has a
 * `result` that throws, naming the dependency and the size, rather than reading as a silent undefined.
 */
function dependenciesFor(outcomes: readonly DependencyOutcome[] | undefined): readonly DependencyOutcome[] {
  return (outcomes ?? []).map((o) => {
    if (o.resultBytes === undefined) return o;
    const { resultBytes } = o;
    return Object.defineProperty({ ...o }, 'result', {
      enumerable: true,
      get() {
        throw new ResultTooLargeError(o.jobId, resultBytes, MAX_PAYLOAD_REF_BYTES);
      },
    });
  });
}

/** `data` as the JSON a job record keeps for `ctx.progress(data)`; throws ProgressTooLargeError past the limit. */
export function progressJson(data: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(data);
  } catch {
    json = undefined;
  }
  if (json === undefined) throw new ProgressTooLargeError(Number.NaN, MAX_PROGRESS_BYTES);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_PROGRESS_BYTES) throw new ProgressTooLargeError(bytes, MAX_PROGRESS_BYTES);
  return json;
}

/**
 * An AbortSignal that fires at `deadline` (epoch ms), or when `stop()` is called (an operator's
 * cancel: the reason is JobCancelledError), and a way to cancel the timer.
 */
export function deadlineSignal(run: TaskRun, deadline: number): { signal: AbortSignal; cancel: () => void; stop: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new TimeLimitExceededError(run.task, run.timeLimitMs)),
    Math.max(0, deadline - Date.now()),
  );
  return {
    signal: controller.signal,
    cancel: () => clearTimeout(timer),
    stop: () => {
      clearTimeout(timer);
      controller.abort(new JobCancelledError(run.jobId));
    },
  };
}

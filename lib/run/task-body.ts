import { InvalidPayloadError, LeaseLostError, TimeLimitExceededError, UnrecoverableError } from '../errors';
import type { TaskContext, TaskDefinition } from '../tasks/task';
import { MAX_RESULT_BYTES } from '../track/rules';
import { type RunHooks, serializeError, type TaskOutcome, type TaskRun } from './types';

/**
 * Runs one task body and classifies how it ended. Shared by the worker thread and the inline
 * executor, so both judge outcomes the same way. `signal` fires at the time limit.
 */
export async function runTaskBody(
  def: TaskDefinition,
  run: TaskRun,
  deadline: number,
  signal: AbortSignal,
  hooks: RunHooks,
): Promise<TaskOutcome> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  let payload: unknown;
  try {
    payload = def.validate ? def.validate(run.payload) : run.payload;
  } catch (error) {
    const invalid = new InvalidPayloadError(error instanceof Error ? error.message : String(error), { cause: error });
    return { status: 'failed', kind: 'invalid-payload', durationMs: elapsed(), error: serializeError(invalid) };
  }
  const ctx: TaskContext = {
    jobId: run.jobId,
    task: run.task,
    queue: run.queue,
    attempt: run.attempt,
    appData: run.appData,
    signal,
    deadline,
    fencingToken: run.fencingToken,
    dependencies: run.dependencies ?? [],
    heartbeat: async () => {
      if (!(await hooks.heartbeat())) throw new LeaseLostError(run.jobId, run.fencingToken);
    },
  };
  try {
    const result = await def.run(payload, ctx);
    const kept = keptResult(result);
    return kept === undefined
      ? { status: 'succeeded', durationMs: elapsed() }
      : { status: 'succeeded', durationMs: elapsed(), result: kept };
  } catch (error) {
    if (signal.aborted) {
      return { status: 'timed-out', durationMs: elapsed(), error: serializeError(new TimeLimitExceededError(run.task, run.timeLimitMs)) };
    }
    const unrecoverable = error instanceof UnrecoverableError || def.unrecoverable.some((type) => error instanceof type);
    return { status: 'failed', kind: unrecoverable ? 'unrecoverable' : 'error', durationMs: elapsed(), error: serializeError(error) };
  }
}

/** A result small enough to keep on the job record, as JSON; undefined otherwise (or when there is none). */
function keptResult(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  try {
    const json = JSON.stringify(result);
    return json !== undefined && Buffer.byteLength(json) <= MAX_RESULT_BYTES ? json : undefined;
  } catch {
    return undefined;
  }
}

/** An AbortSignal that fires at `deadline` (epoch ms), and a way to cancel the timer. */
export function deadlineSignal(run: TaskRun, deadline: number): { signal: AbortSignal; cancel: () => void } {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new TimeLimitExceededError(run.task, run.timeLimitMs)),
    Math.max(0, deadline - Date.now()),
  );
  return { signal: controller.signal, cancel: () => clearTimeout(timer) };
}

import { InvalidPayloadError, TimeLimitExceededError, UnrecoverableError } from '../errors';
import type { TaskContext, TaskDefinition } from '../task';
import { serializeError, type TaskOutcome, type TaskRun } from './types';

/**
 * Runs one task body and classifies how it ended. Shared by the worker thread and the inline
 * executor, so both judge outcomes the same way. `signal` fires at the time limit.
 */
export async function runTaskBody(def: TaskDefinition, run: TaskRun, deadline: number, signal: AbortSignal): Promise<TaskOutcome> {
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
  };
  try {
    await def.run(payload, ctx);
    return { status: 'succeeded', durationMs: elapsed() };
  } catch (error) {
    if (signal.aborted) {
      return { status: 'timed-out', durationMs: elapsed(), error: serializeError(new TimeLimitExceededError(run.task, run.timeLimitMs)) };
    }
    const unrecoverable = error instanceof UnrecoverableError || def.unrecoverable.some((type) => error instanceof type);
    return { status: 'failed', kind: unrecoverable ? 'unrecoverable' : 'error', durationMs: elapsed(), error: serializeError(error) };
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

import { JobCancelledError, TimeLimitExceededError } from '../errors';
import type { TaskRegistry } from '../tasks/task';
import { type RunHooks, serializeError, type TaskExecutor, type TaskOutcome, type TaskRun } from './executor-types';
import { deadlineSignal, runTaskBody } from './task-body';

/**
 * Runs tasks on the calling thread. The AbortSignal still fires at the limit and the run is
 * reported timed out after the grace, but a CPU-bound body cannot be stopped: a JavaScript
 * promise cannot be cancelled. `dispatcher.isolation: 'inline'` chooses it (trusted, cooperative
 * tasks; see ISOLATION_MODES); the default is {@link ThreadPoolExecutor}.
 */
export class InlineExecutor implements TaskExecutor {
  constructor(
    private readonly registry: TaskRegistry,
    private readonly killGraceMs: number,
  ) {}

  async run(run: TaskRun, hooks: RunHooks): Promise<TaskOutcome> {
    const def = this.registry.get(run.task);
    if (!def) throw new RangeError(`task ${run.task} is not registered`);
    const deadline = Date.now() + run.timeLimitMs;
    const { signal, cancel, stop } = deadlineSignal(run, deadline);
    let giveUp: NodeJS.Timeout | undefined;
    let cancelGiveUp: NodeJS.Timeout | undefined;
    const started = Date.now();
    // An operator's cancel aborts the signal; a body that ignores it is given up after the grace.
    let onCancel = () => {};
    const stopped = new Promise<TaskOutcome>((resolve) => {
      onCancel = () => {
        stop();
        cancelGiveUp = setTimeout(
          () => resolve({ status: 'cancelled', durationMs: Date.now() - started, error: serializeError(new JobCancelledError(run.jobId)) }),
          this.killGraceMs,
        );
      };
      if (hooks.cancel?.aborted) onCancel();
      else hooks.cancel?.addEventListener('abort', onCancel, { once: true });
    });
    const abandoned = new Promise<TaskOutcome>((resolve) => {
      giveUp = setTimeout(
        () =>
          resolve({
            status: 'timed-out',
            durationMs: run.timeLimitMs + this.killGraceMs,
            error: serializeError(new TimeLimitExceededError(run.task, run.timeLimitMs)),
          }),
        run.timeLimitMs + this.killGraceMs,
      );
    });
    try {
      return await Promise.race([runTaskBody(def, run, deadline, signal, hooks), abandoned, stopped]);
    } finally {
      cancel();
      clearTimeout(giveUp);
      clearTimeout(cancelGiveUp);
      hooks.cancel?.removeEventListener('abort', onCancel);
    }
  }

  async close(): Promise<void> {}
}

/**
 * Which queues wake an idle version through a doorbell (an SQS trigger on the queue), and what a
 * doorbell invocation can hold: shared by the task registry's checks, the dispatcher and the stack.
 * The doorbell itself is lib/invocation/doorbell.ts.
 */
import type { QueueConfig, TaskworkerConfig } from './config/app-config';
import { ConfigError } from './errors';

/** Doorbell invocations at once per queue: the trigger's `MaximumConcurrency` (2 is its minimum). */
export const DOORBELL_MAX_CONCURRENCY = 2;

/** The queues an SQS trigger wakes the version for. */
export function doorbellQueues(config: TaskworkerConfig): readonly QueueConfig[] {
  return config.queues.filter((q) => q.wakeUp === 'doorbell');
}

/**
 * The batch a doorbell's trigger hands one invocation: the queue's batch size, at most the
 * dispatcher's task slots less one. No message of it waits in the invocation for a slot, and each
 * invocation keeps a slot free to take a quick job from its queue itself: the trigger runs at most
 * {@link DOORBELL_MAX_CONCURRENCY} invocations at once, and slow jobs filling them whole would leave
 * a quick one waiting until one ends.
 */
export function doorbellBatchSize(config: TaskworkerConfig, queue: QueueConfig): number {
  return Math.max(1, Math.min(queue.batchSize, config.dispatcher.concurrency - 1));
}

/**
 * A doorbell function's timeout for `queue`: Lambda refuses an SQS trigger on a queue whose
 * visibility timeout is shorter than the function's timeout, so each doorbell queue has a function
 * of its own, timed out at the queue's visibility timeout (at most the dispatcher's timeout).
 */
export function doorbellTimeoutSeconds(config: TaskworkerConfig, queue: QueueConfig): number {
  return Math.min(config.dispatcher.timeoutSeconds, queue.visibilityTimeoutSeconds);
}

/**
 * Checks that a task on a doorbell queue can run in a doorbell invocation: its time limit, the
 * kill grace and the settle margin within the doorbell's timeout. A message the doorbell could not
 * run would go back to its queue and ring again at once.
 */
export function checkDoorbellFits(
  config: TaskworkerConfig,
  task: { readonly name: string; readonly queue: string; readonly needMs: number },
): void {
  const index = config.queues.findIndex((q) => q.name === task.queue);
  const queue = config.queues[index];
  if (queue?.wakeUp !== 'doorbell') return;
  const timeout = doorbellTimeoutSeconds(config, queue);
  const needMs = task.needMs + config.dispatcher.settleMarginMs;
  if (needMs <= timeout * 1000) return;
  throw new ConfigError(
    `queues[${index}].wakeUp`,
    'doorbell',
    `'schedule', or visibilityTimeoutSeconds ${Math.ceil(needMs / 1000)} or more on queue ${queue.name}: task ${JSON.stringify(task.name)} ` +
      `needs ${task.needMs} ms and settleMarginMs ${config.dispatcher.settleMarginMs} more, and a doorbell invocation lasts at most ${timeout} s ` +
      "(the queue's visibility timeout, which Lambda requires of an SQS trigger's function)",
  );
}

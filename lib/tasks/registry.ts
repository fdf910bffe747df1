import type { TaskworkerConfig } from '../config/app-config';
import { fitsInvocation, fitsVisibility, taskNeedMs } from '../deadlines';
import { ConfigError, TaskDefinitionError } from '../errors';
import { checkDoorbellFits } from '../wake-up';
import type { TaskDefinition, TaskRegistry } from './task';

/**
 * Builds the registry and checks every task against the config: its queue exists, its time limit
 * plus the kill grace fits the queue's visibility timeout (Kale's check) and the dispatcher's
 * timeout (and, on a doorbell queue, a doorbell invocation), and, on an untracked queue, its attempts end before SQS's redrive moves the message to
 * the DLQ.
 */
export function createRegistry(definitions: readonly TaskDefinition[], config: TaskworkerConfig): TaskRegistry {
  const registry = new Map<string, TaskDefinition>();
  const celeryNames = new Map<string, string>();
  for (const def of definitions) {
    if (registry.has(def.name)) throw new TaskDefinitionError(def.name, 'name', def.name, 'a name no other task module uses');
    if (def.celeryName !== undefined) {
      const other = celeryNames.get(def.celeryName);
      if (other)
        throw new TaskDefinitionError(
          def.name,
          'celeryName',
          def.celeryName,
          `a Celery name no other task answers to (task ${other} does)`,
        );
      celeryNames.set(def.celeryName, def.name);
    }
    const queue = config.queues.find((q) => q.name === def.queue);
    if (!queue) {
      throw new TaskDefinitionError(
        def.name,
        'queue',
        def.queue,
        `one of the configured queues (${config.queues.map((q) => q.name).join(', ')})`,
      );
    }
    const needMs = taskNeedMs(def.timeLimitSeconds, config.dispatcher.killGraceMs);
    if (!fitsVisibility(needMs, queue.visibilityTimeoutSeconds)) {
      throw new TaskDefinitionError(
        def.name,
        'timeLimitSeconds',
        def.timeLimitSeconds,
        `a limit that with killGraceMs ${config.dispatcher.killGraceMs} fits queue ${queue.name}'s visibilityTimeoutSeconds ${queue.visibilityTimeoutSeconds}`,
      );
    }
    if (!fitsInvocation(0, needMs, config.dispatcher.timeoutSeconds * 1000, config.dispatcher.settleMarginMs)) {
      throw new TaskDefinitionError(
        def.name,
        'timeLimitSeconds',
        def.timeLimitSeconds,
        `a limit that with killGraceMs and settleMarginMs fits dispatcher.timeoutSeconds ${config.dispatcher.timeoutSeconds}`,
      );
    }
    // A batch task's job may wait for its call to fill before the call's limit starts.
    if (
      def.batch &&
      !fitsInvocation(0, needMs + def.batch.maxWaitMs, config.dispatcher.timeoutSeconds * 1000, config.dispatcher.settleMarginMs)
    ) {
      throw new TaskDefinitionError(
        def.name,
        'batch.maxWaitMs',
        def.batch.maxWaitMs,
        `a wait that with timeLimitSeconds ${def.timeLimitSeconds}, killGraceMs and settleMarginMs fits dispatcher.timeoutSeconds ${config.dispatcher.timeoutSeconds}`,
      );
    }
    checkDoorbellFits(config, { name: def.name, queue: def.queue, needMs: needMs + (def.batch?.maxWaitMs ?? 0) });
    // On an untracked queue (`failures`, `off`) SQS's receive count is the attempt count, so the
    // attempts must end before its redrive. A `full` tracked queue counts attempts in the job
    // record and requeues a message before its redrive (lib/dispatch/batch.ts): no such bound there.
    if (queue.tracking !== 'full' && def.maxRetries + 1 >= queue.maxReceiveCount) {
      throw new TaskDefinitionError(
        def.name,
        'maxRetries',
        def.maxRetries,
        `fewer than queue ${queue.name}'s maxReceiveCount ${queue.maxReceiveCount} minus 1, so the job is archived before SQS moves it to the DLQ`,
      );
    }
    if (def.unique && queue.tracking !== 'full') {
      throw new TaskDefinitionError(
        def.name,
        'unique',
        { for: def.unique.forSeconds, while: def.unique.while },
        `a task on a queue tracked 'full' (queue ${queue.name} is tracked '${queue.tracking}'; the key's holder is kept in the jobs table)`,
      );
    }
    if (def.debounce && queue.tracking !== 'full') {
      throw new TaskDefinitionError(
        def.name,
        'debounce',
        { period: def.debounce.periodSeconds, maxWait: def.debounce.maxWaitSeconds },
        `a task on a queue tracked 'full' (queue ${queue.name} is tracked '${queue.tracking}'; the key's pending job is kept in the jobs table)`,
      );
    }
    if (def.ordered && queue.tracking !== 'full') {
      throw new TaskDefinitionError(
        def.name,
        'ordered',
        def.ordered,
        `a task on a queue tracked 'full' (queue ${queue.name} is tracked '${queue.tracking}'; a job waiting for its turn is kept in the jobs table)`,
      );
    }
    if (def.limits?.per === 'key' && def.limits.concurrency !== undefined && queue.tracking !== 'full') {
      throw new TaskDefinitionError(
        def.name,
        'limits.per',
        def.limits.per,
        `a task on a queue tracked 'full' (queue ${queue.name} is tracked '${queue.tracking}'; a job over its key's concurrency waits in the jobs table)`,
      );
    }
    checkSubscriptions(config, def);
    registry.set(def.name, def);
  }
  checkSchedules(config, registry);
  return registry;
}

/** Every event a task subscribes to or waits for is one its app can receive: its own, or one it subscribes to. */
function checkSubscriptions(config: TaskworkerConfig, def: TaskDefinition): void {
  const receivable = [...config.events.map((e) => e.name), ...config.subscriptions.flatMap((s) => s.events)];
  const named: Array<['on' | 'waitsFor', string]> = [
    ...def.on.map((name): ['on', string] => ['on', name]),
    ...def.waitsFor.map((w): ['waitsFor', string] => ['waitsFor', w.event]),
  ];
  for (const [field, name] of named) {
    if (!receivable.includes(name)) {
      throw new TaskDefinitionError(
        def.name,
        field,
        name,
        `an event the app declares in events or receives through subscriptions (${receivable.join(', ') || 'none'})`,
      );
    }
  }
}

/**
 * Every schedule names a registered task (its crontab's fields are checked by `checkCrontabs`,
 * lib/policy/cron-expressions.ts, where schedules run, list or deploy: the Lambda handler does not carry the parser), publishes to a queue whose visibility fits it, and carries
 * a payload the task's `validate` accepts: a tick that could never run fails start and synth.
 */
function checkSchedules(config: TaskworkerConfig, registry: TaskRegistry): void {
  config.schedules.forEach((schedule, i) => {
    const def = registry.get(schedule.task);
    if (!def) {
      throw new ConfigError(`schedules[${i}].task`, schedule.task, `a registered task (${[...registry.keys()].join(', ') || 'none'})`);
    }
    const queue = config.queues.find((q) => q.name === (schedule.queue ?? def.queue));
    if (queue && !fitsVisibility(taskNeedMs(def.timeLimitSeconds, config.dispatcher.killGraceMs), queue.visibilityTimeoutSeconds)) {
      throw new ConfigError(
        `schedules[${i}].queue`,
        queue.name,
        `a queue whose visibilityTimeoutSeconds fits task ${def.name}'s timeLimitSeconds ${def.timeLimitSeconds}`,
      );
    }
    // Overlap and catch-up see the schedule's runs in the jobs table, which only a `full` tracked queue keeps.
    if (queue && queue.tracking !== 'full') {
      if (schedule.overlap !== undefined && schedule.overlap !== 'allow') {
        throw new ConfigError(
          `schedules[${i}].overlap`,
          schedule.overlap,
          `'allow' (queue ${queue.name} is not tracked 'full', so runs are not seen)`,
        );
      }
      if (schedule.catchUpSeconds > 0) {
        throw new ConfigError(
          `schedules[${i}].catchUp`,
          schedule.catchUpSeconds,
          `none (queue ${queue.name} is not tracked 'full', so ticks are not kept)`,
        );
      }
    }
    if (def.validate) {
      try {
        def.validate(schedule.payload);
      } catch (error) {
        throw new ConfigError(
          `schedules[${i}].payload`,
          schedule.payload,
          `a payload task ${def.name}'s validate accepts (${error instanceof Error ? error.message : String(error)})`,
        );
      }
    }
  });
}

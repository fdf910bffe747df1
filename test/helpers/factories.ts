import { type QueueConfig, resolveConfig, type TaskworkerConfig, type TaskworkerConfigInput } from '../../lib/config';
import type { ReceivedMessage } from '../../lib/ports';
import type { TaskOptions } from '../../lib/tasks/task';

export function queueConfig(overrides: Partial<QueueConfig> & { name: string; priority: number }): QueueConfig {
  return resolveConfig({ app: 'test', queues: [overrides] }).queues[0] as QueueConfig;
}

/** Kale's three queues. */
export function kaleQueues(): QueueConfig[] {
  return [
    queueConfig({ name: 'high_priority', priority: 100, longPollSeconds: 1, iterations: 10 }),
    queueConfig({ name: 'default', priority: 40, longPollSeconds: 1, iterations: 5 }),
    queueConfig({ name: 'low_priority', priority: 5, longPollSeconds: 5, iterations: 5 }),
  ];
}

export function appConfig(overrides: Partial<TaskworkerConfigInput> = {}): TaskworkerConfig {
  return resolveConfig({
    app: 'test',
    queues: [
      { name: 'urgent', priority: 90, visibilityTimeoutSeconds: 30 },
      { name: 'routine', priority: 10, visibilityTimeoutSeconds: 30 },
    ],
    dispatcher: { concurrency: 4, timeoutSeconds: 60, settleMarginMs: 500, killGraceMs: 100 },
    ...overrides,
  });
}

let nextId = 1;

export function received(body: unknown, overrides: Partial<ReceivedMessage> = {}): ReceivedMessage {
  const id = `m-${nextId++}`;
  return {
    messageId: id,
    receiptHandle: `rh-${id}`,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    receiveCount: 1,
    sentTimestamp: Date.UTC(2026, 0, 1),
    attributes: {},
    ...overrides,
  };
}

/** A task on `urgent` that fails every attempt before `succeedOn`, then returns `'done'`. */
export function succeedsOnAttempt(succeedOn: number, overrides: Partial<TaskOptions> = {}): TaskOptions {
  return {
    name: 'flaky',
    queue: 'urgent',
    timeLimitSeconds: 5,
    maxRetries: 2,
    backoff: { baseSeconds: 1, capSeconds: 1 },
    run: (_payload, ctx) => (ctx.attempt < succeedOn ? Promise.reject(new Error('not yet')) : 'done'),
    ...overrides,
  };
}

import { type QueueConfig, resolveConfig, type TaskworkerConfig, type TaskworkerConfigInput } from '../../lib/config/app-config';
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

const b64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/** What Celery 5.2's SQS transport sends for send_task(task, args, kwargs, task_id, eta, expires, serializer). */
export function celeryMessage(
  id: string,
  o: { task?: string; args?: unknown[]; kwargs?: object; eta?: number; expires?: number; contentType?: string } = {},
): string {
  const inner = [o.args ?? [], o.kwargs ?? { x: 1, y: 2 }, { callbacks: null, errbacks: null, chain: null, chord: null }];
  return b64(
    JSON.stringify({
      body: b64(JSON.stringify(inner)),
      'content-encoding': 'utf-8',
      'content-type': o.contentType ?? 'application/json',
      headers: {
        lang: 'py',
        task: o.task ?? 'tasks.add',
        id,
        eta: o.eta !== undefined ? new Date(o.eta).toISOString() : null,
        expires: o.expires !== undefined ? new Date(o.expires).toISOString() : null,
        retries: 0,
        root_id: id,
        parent_id: null,
        group: null,
      },
      properties: { correlation_id: id, delivery_info: { exchange: '', routing_key: 'default' }, body_encoding: 'base64' },
    }),
  );
}

/**
 * What Celery 5.2 sends with task_protocol = 1: empty headers, the task and id in the body (JSON,
 * or a pickle nothing here can read), and the id again as kombu's correlation_id.
 */
export function celeryProtocolOne(id: string, serializer: 'json' | 'pickle'): string {
  const v1 = { task: 'tasks.add', id, args: [1, 2], kwargs: {}, retries: 0, eta: null, expires: null, utc: true };
  const json = serializer === 'json';
  return b64(
    JSON.stringify({
      body: json ? b64(JSON.stringify(v1)) : b64('\x80\x04\x95pickled'),
      'content-encoding': json ? 'utf-8' : 'binary',
      'content-type': json ? 'application/json' : 'application/x-python-serialize',
      headers: {},
      properties: { correlation_id: id, delivery_info: { exchange: '', routing_key: 'default' }, body_encoding: 'base64' },
    }),
  );
}

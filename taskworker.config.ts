import { defineConfig } from 'taskworker';

/**
 * The example app: Kale's three queues. This one module is what the CDK stack, the dispatcher
 * and `taskworker dev` all read.
 */
export default defineConfig({
  app: 'taskworker',
  tasksDir: 'examples/tasks',
  queues: [
    {
      name: 'high_priority',
      priority: 100,
      batchSize: 10,
      visibilityTimeoutSeconds: 60,
      longPollSeconds: 1,
      iterations: 10,
      slaSeconds: 10,
    },
    { name: 'default', priority: 40, batchSize: 10, visibilityTimeoutSeconds: 60, longPollSeconds: 1, iterations: 5, slaSeconds: 60 },
    { name: 'low_priority', priority: 5, batchSize: 10, visibilityTimeoutSeconds: 60, longPollSeconds: 5, iterations: 5, slaSeconds: 300 },
  ],
  dispatcher: { selector: 'sla-aware', concurrency: 10, timeoutSeconds: 300, memoryMb: 1024 },
  // A recurring task: EventBridge Scheduler in AWS, a local timer in `taskworker dev`; same job ids.
  schedules: [{ name: 'refresh-index', task: 'rebuild-index', payload: { shard: 0 }, cron: '*/5 * * * *', timezone: 'Europe/Berlin' }],
  // An event: emitted once (publisher.emit, taskworker emit), it runs every task that subscribes
  // to it with `on` — here send-order-confirmation and award-loyalty-points, each on its own queue.
  events: [
    {
      name: 'orders.placed',
      description: 'A customer placed an order',
      validate(payload) {
        const p = payload as { order?: unknown; email?: unknown; cents?: unknown } | null;
        if (typeof p?.order !== 'string' || typeof p.email !== 'string' || typeof p.cents !== 'number') {
          throw new TypeError('expected { order: string, email: string, cents: number }');
        }
        return p;
      },
    },
  ],
});

import { Simulation } from '../../bench/sim/engine';
import { VirtualClock } from '../../lib/clock';
import type { TaskworkerConfig } from '../../lib/config/app-config';
import type { DispatcherDeps } from '../../lib/dispatch/dispatcher-deps';
import { queueProbes } from '../../lib/dispatch/loop';
import { MemoryJobStore } from '../../lib/fakes/memory-job-store';
import { MemoryLimitStore } from '../../lib/fakes/memory-limits';
import { MemoryQueueService } from '../../lib/fakes/memory-queue';
import { MemoryStatsStore } from '../../lib/fakes/memory-stats-store';
import { createInvocation } from '../../lib/invocation/invocation';
import type { OperatorContext } from '../../lib/operate/operator-context';
import type { QueueUrls } from '../../lib/ports';
import { silentLogger } from '../../lib/ports';
import type { PublisherOptions } from '../../lib/publish/publish-options';
import { Publisher } from '../../lib/publish/publisher';
import { seededRandom } from '../../lib/random';
import { InlineExecutor } from '../../lib/run/inline-executor';
import { createSelector } from '../../lib/select/create-selector';
import type { BatchReport, DispatcherSummary } from '../../lib/settle/report';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask, type TaskContext, type TaskOptions } from '../../lib/tasks/task';
import { appConfig } from './factories';
import { FaultyQueue } from './faulty-queue';

/**
 * A dispatcher on fakes: in-memory SQS (and job/stats stores), a virtual clock, tasks run inline.
 * The VirtualClock moves at each sleep, so jobs sleeping side by side see time pass one after the
 * other; a world on a {@link Simulation} (bench/sim/engine.ts) sees them end in time order, as a
 * real clock would, where a test reads when each of several concurrent jobs started.
 */
export interface World<C extends VirtualClock | Simulation = VirtualClock> {
  readonly clock: C;
  readonly sqs: MemoryQueueService;
  readonly queues: FaultyQueue;
  readonly urls: QueueUrls;
  readonly config: TaskworkerConfig;
  readonly runs: Array<{ task: string; payload: unknown; attempt: number; appData: unknown; ctx: TaskContext }>;
  readonly jobs: MemoryJobStore;
  readonly stats: MemoryStatsStore;
  readonly limits: MemoryLimitStore;
  readonly deps: DispatcherDeps;
  readonly reports: BatchReport[];
  send(queue: string, body: string): Promise<void>;
  /** One plain invocation (lib/invocation/invocation.ts) on the world's ports, `forMs` long. */
  run(options?: { forMs?: number; signal?: AbortSignal }): Promise<DispatcherSummary>;
}

type WorldOptions = {
  tracked?: boolean;
  /** The in-memory queue's long-poll step (lib/fakes/memory-queue.ts): coarser for a simulated day. */
  pollMs?: number;
  deadLetters?: boolean;
  usage?: DispatcherDeps['usage'];
  payloads?: DispatcherDeps['payloads'];
};

export function world(
  tasks: TaskOptions[],
  configOverrides: Parameters<typeof appConfig>[0],
  options: WorldOptions & { simulation: Simulation },
): World<Simulation>;
export function world(tasks?: TaskOptions[], configOverrides?: Parameters<typeof appConfig>[0], options?: WorldOptions): World;
export function world(
  tasks: TaskOptions[] = [],
  configOverrides: Parameters<typeof appConfig>[0] = {},
  options: WorldOptions & { simulation?: Simulation } = {},
): World<VirtualClock | Simulation> {
  const clock = options.simulation ?? new VirtualClock();
  const sqs = new MemoryQueueService(clock, options.pollMs);
  const queues = new FaultyQueue(sqs);
  const config = appConfig(configOverrides);
  // With deadLetters, each queue redrives to `<name>-dlq` after its maxReceiveCount, as deployed.
  const redrive = (q: (typeof config.queues)[number]) =>
    options.deadLetters ? { redrive: { deadLetterUrl: sqs.createQueue(`${q.name}-dlq`), maxReceiveCount: q.maxReceiveCount } } : {};
  const urls: QueueUrls = {
    queues: Object.fromEntries(
      config.queues.map((q) => [q.name, sqs.createQueue(q.name, { visibilityTimeoutSeconds: q.visibilityTimeoutSeconds, ...redrive(q) })]),
    ),
    archive: sqs.createQueue('archive'),
  };
  const runs: World['runs'] = [];
  const recorded = tasks.map((t) => {
    const { run, runBatch } = t;
    // A batch task's calls are recorded item by item (`ctx` is then the call's).
    if (runBatch) {
      return defineTask({
        ...t,
        runBatch: (items, ctx) => {
          for (const item of items) {
            runs.push({
              task: t.name,
              payload: item.payload,
              attempt: item.attempt,
              appData: item.appData,
              ctx: ctx as unknown as TaskContext,
            });
          }
          return runBatch(items, ctx);
        },
      });
    }
    return defineTask({
      ...t,
      run: (payload: unknown, ctx) => {
        runs.push({ task: t.name, payload, attempt: ctx.attempt, appData: ctx.appData, ctx });
        return (run as NonNullable<typeof run>)(payload, ctx);
      },
    });
  });
  const registry = createRegistry(recorded, config);
  const reports: BatchReport[] = [];
  const random = seededRandom(5);
  const jobs = new MemoryJobStore({ historyLimit: config.tracking.historyLimit, retentionDays: config.tracking.jobRetentionDays });
  const stats = new MemoryStatsStore();
  const limits = new MemoryLimitStore();
  const deps: DispatcherDeps = {
    config,
    registry,
    queues,
    urls,
    executor: new InlineExecutor(registry, config.dispatcher.killGraceMs),
    selector: createSelector('reduced-lottery', { queues: config.queues, random, clock, probes: queueProbes(queues, urls) }),
    clock,
    random,
    logger: silentLogger,
    workerId: 'test-worker',
    observer: { onBatch: (r) => reports.push(r) },
    ...(options.tracked ? { tracking: { version: 'v1', jobs, stats, limits } } : {}),
    ...(options.usage ? { usage: options.usage } : {}),
    ...(options.payloads ? { payloads: options.payloads } : {}),
  };
  // The same invocation Lambda runs, on the world's ports and its reduced-lottery selector.
  const invocation = createInvocation(deps);
  return {
    clock,
    sqs,
    queues,
    urls,
    config,
    runs,
    reports,
    jobs,
    stats,
    limits,
    deps,
    send: async (queue, body) => {
      await sqs.sendBatch(urls.queues[queue] as string, [{ id: '0', body }]);
    },
    run: async ({ forMs = 30_000, signal } = {}) => {
      const deadline = clock.now() + forMs;
      const running = invocation.run({ deadline, ...(signal ? { signal } : {}) });
      if (clock instanceof Simulation) {
        let ended = false;
        void running.finally(() => {
          ended = true;
        });
        await clock.runWhile(() => !ended, deadline + 60_000);
      }
      return running;
    },
  };
}

/** What an operator command works on, over the world's fakes (its queues, tables and clock): for replays and the like. */
/** A publisher over the world's queues, jobs table and clock, version v1; `options` adds to or overrides it. */
export function publisherOf(
  w: World,
  options: Partial<Pick<Extract<PublisherOptions, { readonly sqs?: never }>, 'tasks' | 'recordQueued' | 'payloads'>> = {},
): Publisher {
  return new Publisher({ config: w.config, version: 'v1', queues: w.sqs, urls: w.urls, jobs: w.jobs, clock: w.clock, ...options });
}

export function operatorContextOf(w: World<VirtualClock | Simulation>): OperatorContext {
  return {
    config: w.config,
    version: 'v1',
    queues: w.sqs as unknown as OperatorContext['queues'],
    urls: { ...w.urls, deadLetter: {} },
    jobs: w.jobs,
    stats: w.stats,
    clock: w.clock,
  };
}

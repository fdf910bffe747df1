import { VirtualClock } from '../clock';
import { resolveConfig, type TaskworkerConfig, type TaskworkerConfigInput } from '../config/app-config';
import { eventRoutes } from '../events/routes';
import { MemoryControlStore } from '../fakes/memory-controls';
import { MemoryEventBus, memoryTopicArn } from '../fakes/memory-events';
import { MemoryJobStore } from '../fakes/memory-job-store';
import { MemoryLimitStore } from '../fakes/memory-limits';
import { MemoryPayloadStore } from '../fakes/memory-payloads';
import { MemoryQueueService } from '../fakes/memory-queue';
import { MemoryStatsStore } from '../fakes/memory-stats-store';
import { createInvocation } from '../invocation/invocation';
import { SCHEDULE_PERIOD_MS } from '../invocation/scaling';
import { MAX_QUEUE_DELAY_SECONDS } from '../layout/sqs-limits';
import { DUE_SHARDS } from '../policy/due-times';
import { utcDay } from '../policy/stat-sums';
import { silentLogger } from '../ports';
import type { EmitOptions, Emitted, Published, PublishOptions } from '../publish/publish-options';
import { Publisher } from '../publish/publisher';
import { seededRandom } from '../random';
import { InlineExecutor } from '../run/inline-executor';
import type { BatchReport, JobReport } from '../settle/report';
import { createRegistry } from '../tasks/registry';
import type { TaskDefinition } from '../tasks/task';
import type { JobRecord } from '../track/job-record';
import type { QueueDayStats } from '../track/stats-store';
import type { ArchiveReason } from '../wire/archive-reasons';
import { type ArchiveRecord, readArchiveRecord } from '../wire/archive-record';

export interface TestSystemOptions {
  /** The tasks the system runs. */
  readonly tasks: readonly TaskDefinition[];
  /**
   * The app config. @defaultValue one queue per queue the tasks name (visibility wide enough for
   * the longest task), tracked `full`, and every event a task subscribes to (`on`) declared
   */
  readonly config?: TaskworkerConfigInput;
  /** Seed of the backoff jitter and queue selection. @defaultValue 1 */
  readonly seed?: number;
}

/** What a drain did, counted from the batches it settled. */
export interface DrainResult {
  readonly succeeded: number;
  readonly retried: number;
  readonly archived: Readonly<Partial<Record<ArchiveReason, number>>>;
  readonly duplicates: number;
  /** Virtual time the drain took, ms. */
  readonly elapsedMs: number;
}

export interface TestSystem {
  readonly config: TaskworkerConfig;
  /** The system's clock: waits, visibility timeouts and backoff pass in virtual time. */
  readonly clock: VirtualClock;
  readonly publisher: Publisher;
  /** Publishes a task by name or definition, as `Publisher.publish` does. */
  publish<P>(task: TaskDefinition<P> | string, payload: P, options?: PublishOptions): Promise<Published>;
  /**
   * Emits one of the app's events, as `Publisher.emit` does: checked by its declared `validate`,
   * then delivered (by an in-memory SNS, as the deployed topic's filtered subscriptions deliver it)
   * to every queue with a subscriber; `drain` then runs each subscriber once, as job `<id>/<task>`.
   */
  emit(event: string, payload: unknown, options?: EmitOptions): Promise<Emitted>;
  /** Sends a raw message body to a queue, as another service's SDK would. */
  send(queue: string, body: string): Promise<void>;
  /**
   * Runs the dispatcher as the deployed version runs it, on the virtual clock: one scheduled
   * invocation a minute (the schedule's), each the same invocation Lambda runs — it sends the
   * parked jobs that are due (published with a delay or `runAt` past 15 minutes), reads the depths,
   * works what waits and ends when idle. It goes on until no message is left in any queue (visible,
   * in flight or delayed) and no job is parked: retries wait out their backoff and parked jobs
   * their time, all in virtual time (the clock jumps to the next sweep that finds a parked job due).
   * Gives up after `maxMs` of virtual time. Doorbells are not rung: work waits for the next minute,
   * so `elapsedMs` is what scale to zero gives a schedule-only queue.
   */
  drain(options?: { readonly maxMs?: number }): Promise<DrainResult>;
  /** The job's record, as the jobs table holds it. */
  job(jobId: string): Promise<JobRecord | undefined>;
  /** Today's stats of a queue (virtual day), as the stats table holds them. */
  stats(queue: string): Promise<QueueDayStats | undefined>;
  /** The messages in the archive, each with the record of why it is there. */
  archived(): ReadonlyArray<{ readonly body: string; readonly record: ArchiveRecord | undefined }>;
  /** Every settled batch's report, in order. */
  readonly reports: readonly BatchReport[];
}

/**
 * The whole system in memory, for your own tests: publish → dispatch → outcome, with the real
 * dispatcher loop, claims, retries, archive and job records, on in-memory SQS and DynamoDB and a
 * virtual clock; tasks run inline in this process. No emulators, no AWS: what Celery's eager mode
 * gives its users, with the same rules the deployed system follows.
 *
 * @example
 * ```ts
 * import { createTestSystem } from 'taskworker/testing';
 * import sendEmail from '../tasks/send-email';
 *
 * const system = createTestSystem({ tasks: [sendEmail] });
 * const { jobId } = await system.publish(sendEmail, { to: 'a@example.com' });
 * await system.drain();
 * expect(await system.job(jobId)).toMatchObject({ state: 'succeeded' });
 * ```
 */
export function createTestSystem(options: TestSystemOptions): TestSystem {
  const config = resolveConfig(options.config ?? configFor(options.tasks));
  const clock = new VirtualClock();
  const sqs = new MemoryQueueService(clock);
  // Each queue redrives to its DLQ after maxReceiveCount, as deployed.
  const urls = {
    queues: Object.fromEntries(
      config.queues.map((q) => [
        q.name,
        sqs.createQueue(q.name, {
          visibilityTimeoutSeconds: q.visibilityTimeoutSeconds,
          redrive: { deadLetterUrl: sqs.createQueue(`${q.name}-dlq`), maxReceiveCount: q.maxReceiveCount },
        }),
      ]),
    ),
    archive: sqs.createQueue('archive'),
  };
  const registry = createRegistry([...options.tasks], config);
  const random = seededRandom(options.seed ?? 1);
  const jobs = new MemoryJobStore({ historyLimit: config.tracking.historyLimit, retentionDays: config.tracking.jobRetentionDays });
  const stats = new MemoryStatsStore();
  const reports: BatchReport[] = [];
  // Large payloads go to an in-memory bucket, as the deployed version's go to S3 (claim checks).
  const payloads = { store: new MemoryPayloadStore(), bucket: `${config.app}-test-payloads` };
  const invocation = createInvocation({
    config,
    registry,
    queues: sqs,
    urls,
    executor: new InlineExecutor(registry, config.dispatcher.killGraceMs),
    clock,
    random,
    logger: silentLogger,
    workerId: 'test-system',
    observer: { onBatch: (report) => reports.push(report) },
    // Operator controls and rate-limit pauses (RateLimitedError), and the fleet-wide limits' slots and
    // tokens, as the stats table holds them deployed.
    tracking: { version: 'test', jobs, stats, controls: new MemoryControlStore(), limits: new MemoryLimitStore() },
    payloads,
  });
  const events = new MemoryEventBus(sqs, urls, eventRoutes(config, 'test', registry));
  const publisher = new Publisher({
    config,
    version: 'test',
    tasks: [...options.tasks],
    queues: sqs,
    urls,
    jobs,
    clock,
    events: { topicArn: memoryTopicArn(config.app, 'test'), bus: events },
    payloads,
  });
  const messagesLeft = async () => {
    let messages = 0;
    for (const url of Object.values(urls.queues)) {
      const d = await sqs.depth(url);
      messages += d.visible + d.inFlight + d.delayed;
    }
    return messages;
  };
  /** When the earliest parked job is due, if any job is parked. */
  const nextParkedAt = async () => {
    let earliest: number | undefined;
    for (let shard = 0; shard < DUE_SHARDS; shard++) {
      const [first] = await jobs.dueJobs(String(shard), Number.MAX_SAFE_INTEGER, clock.now(), 1);
      if (first && (earliest === undefined || first.runAt < earliest)) earliest = first.runAt;
    }
    return earliest;
  };
  return {
    config,
    clock,
    publisher,
    reports,
    publish: (task, payload, publishOptions) => publisher.publish(task, payload, publishOptions),
    emit: (event, payload, emitOptions) => publisher.emit(event, payload, emitOptions),
    async send(queue, body) {
      const url = urls.queues[queue];
      if (!url) throw new RangeError(`no queue ${queue} (configured: ${Object.keys(urls.queues).join(', ')})`);
      await sqs.sendBatch(url, [{ id: '0', body }]);
    },
    async drain({ maxMs = 86_400_000 } = {}) {
      const started = clock.now();
      const from = reports.length;
      while (clock.now() - started < maxMs) {
        const [messages, parkedAt] = [await messagesLeft(), await nextParkedAt()];
        if (messages === 0 && parkedAt === undefined) break;
        const invokedAt = clock.now();
        await invocation.run({ deadline: invokedAt + config.dispatcher.timeoutSeconds * 1000, role: 'scheduled' });
        // The next scheduled invocation: a minute on; with nothing in the queues, the first whose sweep finds a parked job due.
        let next = invokedAt + SCHEDULE_PERIOD_MS;
        if ((await messagesLeft()) === 0 && parkedAt !== undefined) {
          const sweepsAt = parkedAt - MAX_QUEUE_DELAY_SECONDS * 1000;
          next = Math.max(next, invokedAt + Math.ceil((sweepsAt - invokedAt) / SCHEDULE_PERIOD_MS) * SCHEDULE_PERIOD_MS);
        }
        if (next > clock.now()) clock.advance(Math.min(next, started + maxMs) - clock.now());
      }
      return summarize(reports.slice(from), clock.now() - started);
    },
    job: (jobId) => jobs.get(jobId),
    stats: (queue) => stats.get(queue, utcDay(clock.now())),
    archived: () => sqs.peek(urls.archive).map((m) => ({ body: m.body, record: readArchiveRecord(m.attributes) })),
  };
}

/** A config with one queue per queue the tasks name, each wide enough for its longest task. */
function configFor(tasks: readonly TaskDefinition[]): TaskworkerConfigInput {
  const longest = new Map<string, number>();
  for (const t of tasks) longest.set(t.queue, Math.max(longest.get(t.queue) ?? 0, t.timeLimitSeconds));
  const events = [...new Set(tasks.flatMap((t) => t.on))].map((name) => ({ name }));
  return {
    app: 'test',
    queues: [...longest].map(([name, seconds]) => ({ name, priority: 1, visibilityTimeoutSeconds: Math.max(60, Math.ceil(seconds) + 5) })),
    dispatcher: { timeoutSeconds: 900, killGraceMs: 100 },
    ...(events.length > 0 ? { events } : {}),
  };
}

function summarize(reports: readonly BatchReport[], elapsedMs: number): DrainResult {
  const jobs: JobReport[] = reports.flatMap((r) => r.jobs);
  const archived: Partial<Record<ArchiveReason, number>> = {};
  for (const j of jobs) if (j.outcome === 'archived' && j.reason) archived[j.reason] = (archived[j.reason] ?? 0) + 1;
  const count = (outcome: JobReport['outcome']) => jobs.filter((j) => j.outcome === outcome).length;
  return { succeeded: count('succeeded'), retried: count('retried'), archived, duplicates: count('duplicate'), elapsedMs };
}

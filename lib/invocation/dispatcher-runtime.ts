import { hostname } from 'node:os';
import { resolveQueueUrls, type SqsClientOption, SqsQueueClient } from '../adapters/sqs';
import { type Clock, systemClock } from '../clock';
import { validateVersion } from '../config';
import { queueProbes, runDispatcher } from '../dispatch/loop';
import type { DispatcherObserver, RunOptions, Tracking } from '../dispatch/types';
import { ConfigError, describe } from '../errors';
import {
  type DispatcherLauncher,
  type DoorbellSwitch,
  jsonLogger,
  type Logger,
  type QueueClient,
  type QueueUrls,
  type ReceivedMessage,
} from '../ports';
import type { Random } from '../random';
import { InlineExecutor } from '../run/inline-executor';
import { type MemoryGuardOptions, watchMemory } from '../run/memory-guard';
import { ThreadPoolExecutor } from '../run/thread-pool-executor';
import type { TaskExecutor } from '../run/types';
import { createSelector } from '../select';
import type { QueueSelector } from '../select/types';
import { type BatchReport, type DispatcherSummary, emptySummary } from '../settle/report';
import type { TaskBundle } from '../tasks/bundle';
import { sweepDue } from '../track/sweep';
import { batchItemFailures, doorbellBatches, type SqsEventRecord } from './doorbell';
import {
  doorbellsStayOn,
  fleetCount,
  type InvocationRole,
  idleExit,
  invocationDeadline,
  joinsFleet,
  type ScaleDecision,
  scaleOut,
} from './scaling';
import { StatsBuffer } from './stats-buffer';

export interface DispatcherRuntimeOptions {
  readonly bundle: TaskBundle;
  readonly version: string;
  /** Queue URLs; looked up by name (GetQueueUrl) when absent. */
  readonly urls?: QueueUrls;
  readonly sqs?: SqsClientOption;
  /** Replaces the SQS adapter (tests). */
  readonly queues?: QueueClient;
  /** Replaces the worker-thread pool (tests). */
  readonly executor?: TaskExecutor;
  /** Job records and stats; see {@link trackingFor} to build them on DynamoDB tables. */
  readonly tracking?: Omit<Tracking, 'version'>;
  readonly logger?: Logger;
  readonly observer?: DispatcherObserver;
  readonly clock?: Clock;
  readonly random?: Random;
  readonly workerId?: string;
  /** Starts more dispatcher invocations when a scheduled one finds a backlog (lib/scaling.ts); none: no scaling out. */
  readonly launcher?: DispatcherLauncher;
  /** Turns the doorbells off while the scheduled fleet works a backlog, and on when it finds none. */
  readonly doorbells?: DoorbellSwitch;
  /** The function's actual reserved concurrency, when the stack set one other than the config's `maxConcurrency`. */
  readonly maxConcurrency?: number;
  /** How the resident-set guard reads memory (tests). The limit is the config's `dispatcher.rssLimitMb`. */
  readonly memory?: Omit<MemoryGuardOptions, 'limitBytes'>;
}

const MB = 1_048_576;
/** The most of a scheduled invocation the sweep takes; what it leaves is swept a minute later, still before it is due. */
const SWEEP_BUDGET_MS = 30_000;
/** A plain invocation sweeps when this runtime has not for this long (the schedule's period). */
const SWEEP_PERIOD_MS = 60_000;

/** A doorbell invocation's summary: Lambda reads `batchItemFailures`, the rest is for logs and tests. */
export type DoorbellSummary = DispatcherSummary & { readonly batchItemFailures: ReadonlyArray<{ readonly itemIdentifier: string }> };

/**
 * Everything one dispatcher keeps between invocations (a warm Lambda container): clients, the
 * thread pool, the selector's memory. Each `invoke` runs the loop until its deadline.
 */
export class DispatcherRuntime {
  private readonly queues: QueueClient;
  private readonly executor: TaskExecutor;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly workerId: string;
  private selector: QueueSelector<ReceivedMessage> | undefined;
  private urls: QueueUrls | undefined;
  /** When this runtime last swept parked jobs (epoch ms). */
  private lastSweepAt = Number.NEGATIVE_INFINITY;
  /** The tracking's stats, coalesced across the batches of an invocation. */
  private readonly stats: StatsBuffer | undefined;

  constructor(private readonly options: DispatcherRuntimeOptions) {
    validateVersion(options.version, 'TASKWORKER_VERSION');
    const { config } = options.bundle;
    this.logger = options.logger ?? jsonLogger({ service: 'taskworker-dispatcher' });
    this.queues = options.queues ?? new SqsQueueClient(options.sqs);
    this.executor =
      options.executor ??
      (config.dispatcher.isolation === 'inline'
        ? new InlineExecutor(options.bundle.registry, config.dispatcher.killGraceMs)
        : new ThreadPoolExecutor({
            bundlePath: options.bundle.path,
            size: config.dispatcher.concurrency,
            killGraceMs: config.dispatcher.killGraceMs,
            logger: this.logger,
          }));
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.workerId = options.workerId ?? `${hostname()}-${process.pid}`;
    this.urls = options.urls;
    const stats = options.tracking?.stats;
    this.stats = stats ? new StatsBuffer(stats, this.clock, this.logger) : undefined;
  }

  /** Starts worker threads ahead of the first batch. */
  warm(): void {
    if (this.executor instanceof ThreadPoolExecutor) this.executor.warm();
  }

  /**
   * Runs the loop until `deadline`, `signal` aborts, or the process's resident set passes
   * `dispatcher.rssLimitMb`. A `scheduled` invocation first reads the queues' depths: it ends at
   * once if nothing waits, and scales the fleet out if the backlog needs it. A `doorbell` one runs
   * the `given` batches (its trigger's) first. All but `plain` ones end early once idle (scaling in),
   * and a `scale-out` one by the next scheduled decision at the latest. Past the memory limit running
   * tasks finish, unstarted ones are released, every batch is settled, and the summary carries
   * `memoryStop`: the caller should replace this runtime (its worker threads) before taking more work.
   */
  async invoke(
    deadline: number,
    signal?: AbortSignal,
    role: InvocationRole = 'plain',
    given: RunOptions['given'] = [],
  ): Promise<DispatcherSummary> {
    const startedAt = this.clock.now();
    const urls = await this.queueUrls();
    const { config, registry } = this.options.bundle;
    this.selector ??= createSelector(config.dispatcher.selector, {
      queues: config.queues,
      random: this.random,
      clock: this.clock,
      probes: queueProbes(this.queues, urls),
    });
    // Parked jobs due within 15 minutes go back to their queues first, so the depths below count
    // them: at every scheduled invocation, and at the start of a plain one (a dispatcher that runs
    // back to back, as `taskworker dev --always-on` does) once a minute at most; an invocation
    // lasts at most 15 minutes, so no parked job is swept after it is due.
    if (role === 'scheduled' || (role === 'plain' && startedAt - this.lastSweepAt >= SWEEP_PERIOD_MS)) {
      this.lastSweepAt = startedAt;
      await this.sweep(Math.min(deadline, startedAt + SWEEP_BUDGET_MS), urls);
    }
    const limits = this.options.tracking?.limits;
    const fleet = limits ? fleetCount(limits) : undefined;
    let decision: ScaleDecision | undefined;
    if (role === 'scheduled') {
      // The minute's first question: is there work? In an idle version the answer costs one
      // GetQueueAttributes per queue and ends the invocation; with a backlog it scales out.
      const max = this.options.maxConcurrency ?? config.dispatcher.maxConcurrency;
      const scaling = { ...config, dispatcher: { ...config.dispatcher, maxConcurrency: max } };
      decision = await scaleOut({
        config: scaling,
        queues: this.queues,
        urls,
        logger: this.logger,
        ...(this.options.launcher ? { launcher: this.options.launcher } : {}),
        ...(fleet ? { fleet: { count: fleet, now: startedAt } } : {}),
      });
      // While the fleet works a backlog it selects by priority; the doorbells wait until it is done.
      // A trickle is taken in passing: the doorbells stay on.
      if (decision) await this.switchDoorbells(doorbellsStayOn(decision));
      if (decision?.waiting === 0) return emptySummary();
    }
    const exit = idleExit(role, startedAt, decision);
    const runDeadline = invocationDeadline(role, startedAt, deadline);
    // Working a backlog, it counts itself in the fleet later decisions see.
    const holder = fleet && joinsFleet(role, decision) ? `${this.workerId}@${startedAt}` : undefined;
    if (fleet && holder) await this.fleetStep('join', () => fleet.join(holder, startedAt, runDeadline));
    const guard = watchMemory({
      limitBytes: config.dispatcher.rssLimitMb * MB,
      ...this.options.memory,
      ...(signal ? { stop: signal } : {}),
    });
    let summary: DispatcherSummary;
    try {
      summary = await runDispatcher(
        {
          config,
          registry,
          queues: this.queues,
          urls,
          executor: this.executor,
          selector: this.selector,
          clock: this.clock,
          random: this.random,
          logger: this.logger,
          workerId: this.workerId,
          ...(this.options.observer ? { observer: this.options.observer } : {}),
          ...(this.options.tracking
            ? { tracking: { version: this.options.version, ...this.options.tracking, ...(this.stats ? { stats: this.stats } : {}) } }
            : {}),
        },
        {
          deadline: runDeadline,
          signal: guard.signal,
          given,
          waitingIn: decision?.waitingIn ?? [],
          ...(exit ? { idleExit: exit } : {}),
        },
      );
    } finally {
      guard.stop();
      // Whatever ended the invocation, the stats it gathered are written before it returns.
      await this.stats?.flush();
      if (fleet && holder) await this.fleetStep('leave', () => fleet.leave(holder, this.clock.now()));
    }
    // The fleet ran out of work: the doorbells take over waiting for it.
    if (summary.endedIdle && (role === 'scheduled' || role === 'scale-out')) await this.switchDoorbells(true);
    const tripped = guard.tripped;
    if (!tripped) return summary;
    const memoryStop = { rssMb: Math.round(tripped.rssBytes / MB), limitMb: config.dispatcher.rssLimitMb };
    this.logger.warn('resident set over dispatcher.rssLimitMb: stopped taking work, released what had not started', memoryStop);
    return { ...summary, memoryStop };
  }

  /**
   * A doorbell invocation: runs the trigger's batch under the dispatcher's rules, keeps selecting
   * while there is work, and says which of the trigger's messages it did not delete (Lambda's
   * partial batch response) so the trigger leaves those in their queue.
   */
  async ring(records: readonly SqsEventRecord[], deadline: number, signal?: AbortSignal): Promise<DoorbellSummary> {
    const urls = await this.queueUrls();
    const { batches, foreign } = doorbellBatches(records, this.options.bundle.config, urls);
    if (foreign.length > 0) {
      this.logger.error("records from a queue that is not this version's: left in their queue (check the trigger)", {
        queues: [...new Set(foreign.map((r) => r.eventSourceARN))],
      });
    }
    if (batches.length === 0) return { ...emptySummary(), batchItemFailures: records.map((r) => ({ itemIdentifier: r.messageId })) };
    const reports: BatchReport[] = [];
    const given = batches.map((b) => ({ ...b, settled: (report: BatchReport) => reports.push(report) }));
    const summary = await this.invoke(deadline, signal, 'doorbell', given);
    return {
      ...summary,
      batchItemFailures: batchItemFailures(
        reports,
        records.map((r) => r.messageId),
      ),
    };
  }

  /** Joining or leaving the fleet count is best effort: the count only sizes the next scale-out. */
  private async fleetStep(step: 'join' | 'leave', run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (error) {
      this.logger.warn(`could not ${step} the fleet count`, { error: describe(error) });
    }
  }

  /** Sends the parked jobs that are due (lib/track/sweep.ts); a version without a jobs table parks none. */
  private async sweep(deadline: number, urls: QueueUrls): Promise<void> {
    const jobs = this.options.tracking?.jobs;
    if (!jobs) return;
    const swept = await sweepDue({ jobs, queues: this.queues, urls, clock: this.clock, logger: this.logger }, deadline);
    if (swept.sent > 0 || swept.left > 0) this.logger.info('swept parked jobs that are due', { ...swept });
  }

  /** Never fails the invocation: a switch that did not turn costs latency or order, never a job. */
  private async switchDoorbells(on: boolean): Promise<void> {
    try {
      await this.options.doorbells?.set(on);
    } catch (error) {
      this.logger.warn(`could not turn the doorbells ${on ? 'on' : 'off'}`, { error: describe(error) });
    }
  }

  async close(): Promise<void> {
    await this.executor.close();
  }

  private async queueUrls(): Promise<QueueUrls> {
    if (!this.urls) {
      if (!(this.queues instanceof SqsQueueClient))
        throw new ConfigError('urls', undefined, 'queue URLs when a custom queue client is used');
      this.urls = await resolveQueueUrls(this.queues.sqs, this.options.bundle.config, this.options.version);
    }
    return this.urls;
  }
}

/** Parses `TASKWORKER_QUEUE_URLS` (`{"queues":{name:url},"archive":url}`), naming the variable on error. */
export function queueUrlsFromEnv(value: string | undefined): QueueUrls | undefined {
  if (value === undefined || value === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new ConfigError('TASKWORKER_QUEUE_URLS', value, 'JSON {"queues":{"<name>":"<url>"},"archive":"<url>"}');
  }
  const urls = parsed as Partial<QueueUrls>;
  if (typeof urls?.archive !== 'string' || typeof urls.queues !== 'object' || urls.queues === null) {
    throw new ConfigError('TASKWORKER_QUEUE_URLS', value, 'JSON {"queues":{"<name>":"<url>"},"archive":"<url>"}');
  }
  return urls as QueueUrls;
}

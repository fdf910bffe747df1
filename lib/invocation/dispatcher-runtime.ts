import { hostname } from 'node:os';
import type { UsageMeter } from '../adapters/usage-meter';
import type { S3ClientOption, SqsClientOption } from '../aws/clients';
import { dispatcherUsage, lookUpQueueUrls, s3PayloadStore, sqsQueues } from '../aws/wiring';
import { type Clock, systemClock } from '../clock';
import { validateVersion } from '../config/app-config';
import type { DispatcherObserver, Tracking } from '../dispatch/dispatcher-deps';
import { ConfigError } from '../errors';
import { payloadBucketNear, subscribedEventBuckets } from '../layout/payloads';
import {
  type DispatcherLauncher,
  type DoorbellSwitch,
  jsonLogger,
  type Logger,
  type PayloadStore,
  type QueueClient,
  type QueueUrls,
} from '../ports';
import type { Random } from '../random';
import type { TaskExecutor } from '../run/executor-types';
import { InlineExecutor } from '../run/inline-executor';
import type { MemoryGuardOptions } from '../run/memory-guard';
import { ThreadPoolExecutor } from '../run/thread-pool-executor';
import type { DispatcherSummary } from '../settle/report';
import type { TaskBundle } from '../tasks/bundle';
import type { WorkerPlace } from '../track/worker-registry';
import type { SqsEventRecord } from './doorbell';
import type { InvocationRequest } from './invocation';
import { createInvocation, type DoorbellSummary, type Invocation } from './invocation';
import type { InvocationRole } from './scaling';

export type { DoorbellSummary } from './invocation';

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
  /** Starts more dispatcher invocations when a scheduled one finds a backlog (lib/invocation/scaling.ts); none: no scaling out. */
  readonly launcher?: DispatcherLauncher;
  /** Turns the doorbells off while the scheduled fleet works a backlog, and on when it finds none. */
  readonly doorbells?: DoorbellSwitch;
  /** The function's actual reserved concurrency, when the stack set one other than the config's `maxConcurrency`. */
  readonly maxConcurrency?: number;
  /** How the resident-set guard reads memory (tests). The limit is the config's `dispatcher.rssLimitMb`. */
  readonly memory?: Omit<MemoryGuardOptions, 'limitBytes'>;
  /**
   * Claim-checked payloads: the version's bucket (`TASKWORKER_PAYLOAD_BUCKET`; by default
   * `<app>-<version>-<account>-<region>` from the queue URLs) and where to read it: S3 (`s3` configures
   * its client, `sdk` loads `@aws-sdk/client-s3` for a bundle that carries it) or another
   * {@link PayloadStore}.
   */
  readonly payloads?: {
    readonly bucket?: string;
    readonly store?: PayloadStore;
    readonly s3?: S3ClientOption;
    readonly sdk?: Parameters<typeof s3PayloadStore>[1];
  };
}

/**
 * Everything one dispatcher keeps between invocations (a warm Lambda container, a dev container):
 * the AWS clients, the thread pool, and its {@link Invocation} (selector, stats buffer, last sweep).
 * It builds the ports from its options; what an invocation does is lib/invocation/invocation.ts's.
 */
export class DispatcherRuntime {
  private readonly queues: QueueClient;
  private readonly executor: TaskExecutor;
  private readonly logger: Logger;
  private readonly clock: Clock;
  private invocation: Invocation | undefined;
  /** The SQS requests and DynamoDB write units of this container's clients, attributed to tasks by the stats. */
  private readonly usage: UsageMeter;

  constructor(private readonly options: DispatcherRuntimeOptions) {
    validateVersion(options.version, 'TASKWORKER_VERSION');
    const { config } = options.bundle;
    this.logger = options.logger ?? jsonLogger({ service: 'taskworker-dispatcher' });
    this.queues = options.queues ?? sqsQueues(options.sqs);
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
    this.usage = dispatcherUsage(this.queues, options.tracking, () => this.clock.now());
  }

  /** Starts worker threads ahead of the first batch. */
  warm(): void {
    if (this.executor instanceof ThreadPoolExecutor) this.executor.warm();
  }

  /** Runs one invocation (see {@link Invocation.run}). */
  async invoke(
    deadline: number,
    signal?: AbortSignal,
    role: InvocationRole = 'plain',
    given: InvocationRequest['given'] = [],
    place?: WorkerPlace,
  ): Promise<DispatcherSummary> {
    const invocation = await this.container();
    return invocation.run({ deadline, ...(signal ? { signal } : {}), role, given, ...(place ? { place } : {}) });
  }

  /** A doorbell invocation (see {@link Invocation.ring}). */
  async ring(records: readonly SqsEventRecord[], deadline: number, signal?: AbortSignal, place?: WorkerPlace): Promise<DoorbellSummary> {
    const invocation = await this.container();
    return invocation.ring(records, deadline, signal, place);
  }

  async close(): Promise<void> {
    await this.executor.close();
  }

  /** The container's invocation, assembled once its queue URLs are known. */
  private async container(): Promise<Invocation> {
    if (this.invocation) return this.invocation;
    const { bundle, version, tracking } = this.options;
    const urls = this.options.urls ?? (await this.lookUpUrls());
    this.invocation ??= createInvocation({
      config: bundle.config,
      registry: bundle.registry,
      queues: this.queues,
      urls,
      executor: this.executor,
      clock: this.clock,
      random: this.options.random ?? Math.random,
      logger: this.logger,
      workerId: this.options.workerId ?? `${hostname()}-${process.pid}`,
      memory: this.options.memory ?? {},
      usage: this.usage,
      ...this.payloadsOn(urls),
      ...(this.options.observer ? { observer: this.options.observer } : {}),
      ...(tracking ? { tracking: { version, ...tracking } } : {}),
      ...(this.options.launcher ? { launcher: this.options.launcher } : {}),
      ...(this.options.doorbells ? { doorbells: this.options.doorbells } : {}),
      ...(this.options.maxConcurrency !== undefined ? { maxConcurrency: this.options.maxConcurrency } : {}),
    });
    return this.invocation;
  }

  /** The payload bucket and store; none (every claim check archived, said once) where no bucket can be named. */
  private payloadsOn(urls: QueueUrls): { payloads?: { store: PayloadStore; bucket: string; eventBuckets: string[] } } {
    const given = this.options.payloads ?? {};
    const { config } = this.options.bundle;
    const queueUrl = Object.values(urls.queues)[0] ?? urls.archive;
    let bucket = given.bucket;
    try {
      bucket ??= payloadBucketNear(queueUrl, config.app, this.options.version);
    } catch (error) {
      this.logger.warn('no payload bucket: claim-checked payloads will be archived (bad-payload-ref)', { error: String(error) });
      return {};
    }
    const eventBuckets = subscribedEventBuckets(config.subscriptions, queueUrl);
    return { payloads: { bucket, store: given.store ?? s3PayloadStore(given.s3, given.sdk), eventBuckets } };
  }

  private async lookUpUrls(): Promise<QueueUrls> {
    return lookUpQueueUrls(this.queues, this.options.bundle.config, this.options.version);
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

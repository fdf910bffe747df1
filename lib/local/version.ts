import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import type { SNSClient } from '@aws-sdk/client-sns';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createVersionTables } from '../adapters/dynamo-admin';
import type { DynamoControlStore } from '../adapters/dynamo-controls';
import type { DynamoJobStore } from '../adapters/dynamo-job-store';
import type { DynamoStatsStore } from '../adapters/dynamo-stats-store';
import { createPayloadBucket } from '../adapters/s3-admin';
import { createVersionEvents, type VersionEvents } from '../adapters/sns-admin';
import type { SqsQueueClient } from '../adapters/sqs';
import { createVersionQueues } from '../adapters/sqs-admin';
import { snsEventBus, sqsQueues, versionStores } from '../aws/wiring';
import { DispatcherRuntime, type DispatcherRuntimeOptions } from '../invocation/dispatcher-runtime';
import { payloadBucketNear } from '../layout/payloads';
import type { QueueUrls } from '../ports';
import { Publisher } from '../publish/publisher';
import { SHARED_PROCESS } from '../run/memory-guard';
import type { TaskBundle } from '../tasks/bundle';
import type { LimitStore } from '../track/fleet-limits';
import type { JobStore } from '../track/job-stores';

/** One release version's queues and tables on an SQS and a DynamoDB endpoint, and what works on them. */
export interface ProvisionedVersion {
  readonly version: string;
  readonly bundle: TaskBundle;
  readonly urls: QueueUrls & { readonly deadLetter: Readonly<Record<string, string>> };
  readonly tables: { readonly jobs: string; readonly stats: string };
  /** The job and stats stores on the tables (DynamoDB adapters: they meter their write units). */
  readonly jobs: DynamoJobStore;
  readonly stats: DynamoStatsStore;
  /** The operator controls (paused queues, priority and SLA overrides) the dispatchers read. */
  readonly controls: DynamoControlStore;
  readonly queues: SqsQueueClient;
  /** A publisher for the version that knows the bundle's tasks and records queued jobs (and emits its events, given SNS). */
  readonly publisher: Publisher;
  /** The version's event topic and its queues' subscriptions, when provisioned with SNS. */
  readonly events?: VersionEvents;
  /** The version's payload bucket (claim checks), when provisioned with S3. */
  readonly payloadBucket?: string;
  /**
   * A dispatcher in this process on the version: the real runtime, adapters and thread pool. It
   * shares the process, so its memory guard is off. `sqs`/`dynamo` replace the clients it uses
   * (a faulty one, say); `tracked: false` runs it without job records or stats.
   */
  dispatcher(options: InProcessDispatcherOptions): DispatcherRuntime;
}

export type InProcessDispatcherOptions = Omit<DispatcherRuntimeOptions, 'bundle' | 'version' | 'urls' | 'tracking' | 'sqs' | 'memory'> & {
  readonly sqs?: SQSClient;
  readonly dynamo?: DynamoDBClient;
  /** @defaultValue true */
  readonly tracked?: boolean;
  /** Wraps the dispatcher's job store (interference with leases, in tests). */
  readonly wrapJobs?: (jobs: JobStore) => JobStore;
  /** Wraps the dispatcher's fleet-limit store (what the rate limit granted, in tests). */
  readonly wrapLimits?: (limits: LimitStore) => LimitStore;
};

/**
 * Creates a version's queues (with their DLQs and the archive) and tables from the shared layout,
 * as the stack does in AWS, on the given clients: what `taskworker dev`, the tests and the
 * benchmarks all start from. Idempotent.
 */
export async function provisionVersion(options: {
  readonly bundle: TaskBundle;
  readonly version: string;
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  /** SNS (fauxqs's, on the SQS endpoint): the version's event topic and its queues' subscriptions are created on it. */
  readonly sns?: SNSClient;
  /**
   * S3 (fauxqs's, on the SQS endpoint): the version's payload bucket is created on it
   * (`<app>-<version>-000000000000-<region>`, from the queue URLs as in AWS), and the publisher and
   * in-process dispatchers keep and read large payloads there.
   */
  readonly s3?: S3Client;
  /** Whether the publisher writes `queued` records. @defaultValue true */
  readonly recordQueued?: boolean;
}): Promise<ProvisionedVersion> {
  const { bundle, version } = options;
  const urls = await createVersionQueues(options.sqs, bundle.config, version);
  const tables = await createVersionTables(options.dynamo, bundle.config, version);
  const { jobs, stats, limits, controls } = versionStores(bundle.config, tables, { client: options.dynamo });
  const queues = sqsQueues({ client: options.sqs });
  const events = options.sns
    ? await createVersionEvents(options.sns, options.sqs, bundle.config, version, bundle.registry, urls)
    : undefined;
  const payloadBucket = options.s3
    ? payloadBucketNear(Object.values(urls.queues)[0] ?? urls.archive, bundle.config.app, version)
    : undefined;
  if (options.s3 && payloadBucket) await createPayloadBucket(options.s3, payloadBucket);
  const payloads = options.s3 && payloadBucket ? { bucket: payloadBucket, s3: { client: options.s3 } } : undefined;
  return {
    version,
    bundle,
    urls,
    tables,
    jobs,
    stats,
    controls,
    queues,
    ...(events ? { events } : {}),
    ...(payloadBucket ? { payloadBucket } : {}),
    publisher: new Publisher({
      config: bundle.config,
      version,
      tasks: bundle.tasks,
      queues,
      urls,
      ...(options.recordQueued === false ? {} : { jobs }),
      ...(options.sns
        ? { events: { ...(events?.topicArn ? { topicArn: events.topicArn } : {}), bus: snsEventBus({ client: options.sns }) } }
        : {}),
      ...(payloads ? { payloads } : {}),
    }),
    dispatcher: ({ sqs, dynamo, tracked = true, wrapJobs, wrapLimits, ...rest }) => {
      // On the version's own client the dispatcher shares its stores (and their write meters).
      const stores = dynamo ? versionStores(bundle.config, tables, { client: dynamo }) : { jobs, stats, limits, controls };
      const tracking = wrapLimits && stores.limits ? { ...stores, limits: wrapLimits(stores.limits) } : stores;
      return new DispatcherRuntime({
        bundle,
        version,
        urls,
        sqs: { client: sqs ?? options.sqs },
        ...(tracked ? { tracking: wrapJobs && tracking.jobs ? { ...tracking, jobs: wrapJobs(tracking.jobs) } : tracking } : {}),
        memory: SHARED_PROCESS,
        ...(payloads ? { payloads } : {}),
        ...rest,
      });
    },
  };
}

/** What a second provisioning of a version (a dev's reload) created or removed for its new config, named as the config names them. */
export interface ProvisionChanges {
  readonly queues: readonly string[];
  readonly topics: readonly string[];
  readonly subscribed: ReadonlyArray<{ readonly queue: string; readonly topic: string }>;
  readonly unsubscribed: ReadonlyArray<{ readonly queue: string; readonly topic: string }>;
}

/** What a second provisioning made or removed that the first had not: queues, topics, subscriptions. */
export function provisionChanges(before: ProvisionedVersion, after: ProvisionedVersion): ProvisionChanges {
  const topicName = (arn: string) => arn.slice(arn.lastIndexOf(':') + 1);
  const topics = (p: ProvisionedVersion) => [
    ...(p.events?.topicArn ? [p.events.topicArn] : []),
    ...(p.events?.subscriptions.map((s) => s.topicArn) ?? []),
  ];
  const hadTopics = new Set(topics(before));
  const hadSubscriptions = new Set(before.events?.subscriptions.map((s) => s.subscriptionArn));
  return {
    queues: Object.keys(after.urls.queues).filter((q) => before.urls.queues[q] === undefined),
    topics: [...new Set(topics(after).filter((arn) => !hadTopics.has(arn)))].map(topicName),
    subscribed: (after.events?.subscriptions ?? [])
      .filter((s) => !hadSubscriptions.has(s.subscriptionArn))
      .map((s) => ({ queue: s.queue, topic: topicName(s.topicArn) })),
    unsubscribed: (after.events?.unsubscribed ?? []).map((u) => ({ queue: u.queue, topic: topicName(u.topicArn) })),
  };
}

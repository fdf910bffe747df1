import type { Clock } from '../clock';
import type { TaskworkerConfig } from '../config/app-config';
import type { EventBus, PayloadStore, QueueClient, QueueUrls } from '../ports';
import type { TaskDefinition } from '../tasks/task';
import type { JobRef } from '../track/job-record';
import type { JobStore } from '../track/job-stores';

/**
 * What the publisher's parts (prepare, send, job records, flows, emit, job queries) share: the
 * config and version it is pinned to, the tasks it knows, its ports (each made on first use) and
 * what it keeps between calls. The {@link Publisher} makes one and hands it to each part.
 */
export interface PublishContext {
  readonly config: TaskworkerConfig;
  readonly version: string;
  readonly tasks: ReadonlyMap<string, TaskDefinition>;
  readonly clock: Clock;
  readonly queues: QueueClient;
  /** The version's queue URLs, resolved once and cached; a failed lookup is retried on the next publish. */
  queueUrls(): Promise<QueueUrls>;
  /** The store that records `queued` jobs, when this publisher records them. */
  readonly jobs: JobStore | undefined;
  /** The store for cancel, results, dependencies and tags: the given one, or the version's table's, made on first use. */
  jobStore(): JobStore;
  /** The version's bucket's client (payloads put, results read), made on first use. */
  payloadStore(): PayloadStore;
  /** The version's bucket: given, or named from its queue URLs (which name the account and region). */
  bucketNear(urls: QueueUrls): string;
  /** Where events are published, made on first use. */
  eventBus(): EventBus;
  /** The event topic given in the options, if any. */
  readonly givenTopicArn: string | undefined;
  /** The jobs this publisher sent lately (see lib/publish/job-records.ts, `remember`). */
  readonly recent: Map<string, JobRef>;
  /** Whether a failed `queued` or `scheduled` record write has been warned of (once per publisher). */
  warnedAboutTracking: boolean;
}

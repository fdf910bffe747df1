/** What every operator command works on, one release version's queues and tables, and how it is found. */
import type { DynamoClientOption, SqsClientOption } from '../aws/clients';
import { s3PayloadStore, sqsQueues, versionStores } from '../aws/wiring';
import { type Clock, systemClock } from '../clock';
import type { TaskworkerConfig } from '../config/app-config';
import { TaskworkerError } from '../errors';
import { archiveQueueName, deadLetterQueueName, queueResourceName } from '../layout/queues';
import { tableNames } from '../layout/tables';
import type { MetricsThroughput } from '../policy/throughput';
import type { DeadLetterMover, OldestAge, PayloadStore, QueueClient, QueueDirectory, QueueLister, QueueUrls } from '../ports';
import { type StoredResultReader, storedResultReader } from '../publish/results';
import type { JobLogReader } from '../track/job-logs';
import type { JobStore } from '../track/job-stores';
import type { OperationLog } from '../track/operation-log';
import type { ControlStore } from '../track/operator-controls';
import type { StatsStore } from '../track/stats-store';
import type { WorkerRegistry } from '../track/worker-registry';
import type { KeyUsageReader } from './keys';

/** The version's queues or tables are not there: it was never deployed, or was destroyed. */
export class VersionNotFoundError extends TaskworkerError {
  readonly version: string;
  constructor(version: string, resource: string, options?: { cause?: unknown }) {
    super(`version ${version} is not deployed here: ${resource} does not exist`, options);
    this.name = 'VersionNotFoundError';
    this.version = version;
  }
}

export interface VersionUrls extends QueueUrls {
  readonly deadLetter: Readonly<Record<string, string>>;
}

/** What every operator command works on: one release version's queues and tables. */
export interface OperatorContext {
  readonly config: TaskworkerConfig;
  readonly version: string;
  readonly queues: QueueClient & DeadLetterMover;
  readonly urls: VersionUrls;
  readonly jobs: JobStore;
  readonly stats: StatsStore;
  /** The operator controls (paused queues, priority and SLA set at run time); without it status shows the config. */
  readonly controls?: ControlStore;
  /** The worker registry (`taskworker workers`); without it no worker is listed. */
  readonly workers?: WorkerRegistry;
  /** The operations log (bulk operations, who ran them); without it they are not logged. */
  readonly operations?: OperationLog;
  readonly clock: Clock;
  /** Reads a result the dispatcher kept in the version's bucket (over 1 KB); without it such a result shows its size only. */
  readonly readStoredResult?: StoredResultReader;
  /** Age of the oldest message per queue resource name (CloudWatch), when available. */
  readonly oldestAge?: OldestAge;
  /** Jobs per queue and minute from CloudWatch (AWS); without it {@link throughput} reads the stats table's minute counters. */
  readonly metricsThroughput?: MetricsThroughput;
  /** Where the version's job log lines are read (dev's log file, CloudWatch Logs); without it `jobs logs` says it cannot. */
  readonly jobLogs?: JobLogReader;
  /** Each key's limit item (`taskworker keys`); without it no key is listed. */
  readonly keys?: KeyUsageReader;
}

/** Seconds, per queue resource name; undefined where unknown. */

export interface OperatorOptions {
  readonly config: TaskworkerConfig;
  readonly version: string;
  readonly sqs?: SqsClientOption;
  readonly dynamo?: DynamoClientOption;
  /** Age of the oldest message per queue resource name, e.g. {@link cloudWatchOldestAge}'s (AWS only; emulators have none). */
  readonly oldestAge?: OldestAge;
  /** Jobs per queue and minute, e.g. {@link cloudWatchThroughput}'s (AWS only). */
  readonly metricsThroughput?: MetricsThroughput;
  /** Where the version's job log lines are read. */
  readonly jobLogs?: JobLogReader;
  readonly clock?: Clock;
}

/** Resolves a version's queue URLs by name; a missing queue becomes {@link VersionNotFoundError}. */
export async function resolveVersionUrls(directory: QueueDirectory, config: TaskworkerConfig, version: string): Promise<VersionUrls> {
  const lookup = async (name: string) => {
    const url = await directory.urlOf(name);
    if (url === undefined) throw new VersionNotFoundError(version, `queue ${name}`);
    return url;
  };
  // One at a time, in config order: a version that is not deployed is reported by its first queue.
  const queues: Record<string, string> = {};
  const deadLetter: Record<string, string> = {};
  for (const q of config.queues) {
    queues[q.name] = await lookup(queueResourceName(config.app, version, q.name));
    deadLetter[q.name] = await lookup(deadLetterQueueName(config.app, version, q.name));
  }
  return { queues, deadLetter, archive: await lookup(archiveQueueName(config.app, version)) };
}

export async function operatorContext(options: OperatorOptions): Promise<OperatorContext> {
  const queues = sqsQueues(options.sqs);
  const urls = await resolveVersionUrls(queues, options.config, options.version);
  let s3: PayloadStore | undefined;
  const { jobs, stats, controls, workers, operations, limits } = versionStores(
    options.config,
    tableNames(options.config.app, options.version),
    options.dynamo,
  );
  return {
    config: options.config,
    version: options.version,
    queues,
    urls,
    jobs,
    stats,
    controls,
    workers,
    operations,
    keys: limits,
    clock: options.clock ?? systemClock,
    // The S3 client (and @aws-sdk/client-s3) is made only when a kept result is first read.
    readStoredResult: storedResultReader(() => {
      s3 ??= s3PayloadStore();
      return s3;
    }),
    ...(options.oldestAge ? { oldestAge: options.oldestAge } : {}),
    ...(options.jobLogs ? { jobLogs: options.jobLogs } : {}),
    ...(options.metricsThroughput ? { metricsThroughput: options.metricsThroughput } : {}),
  };
}

/** The release versions deployed where `lister` looks (account and region): those with an archive queue. */
export async function deployedVersions(lister: QueueLister, app: string): Promise<string[]> {
  // The archive queue's name without app and version: what follows `<app>-<version>`.
  const suffix = archiveQueueName('', '').slice(1);
  const names = await lister.namesWithPrefix(`${app}-`);
  return names
    .filter((name) => name.endsWith(suffix))
    .map((name) => name.slice(app.length + 1, name.length - suffix.length))
    .filter((version) => version.length > 0)
    .sort();
}

/**
 * AWS wired in one place: the adapters of lib/adapters/ on the clients of clients.ts, as the
 * publisher, the operator, the dispatcher runtime, a local version and the CLI take them. Nothing
 * outside lib/aws/ makes an SDK client or an adapter; what is built here is typed as what it is,
 * so no caller casts it.
 */
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type * as S3 from '@aws-sdk/client-s3';
import { DynamoControlStore } from '../adapters/dynamo-controls';
import { DynamoJobStore } from '../adapters/dynamo-job-store';
import { DynamoLimitStore } from '../adapters/dynamo-limits';
import { DynamoOperationLog } from '../adapters/dynamo-operation-log';
import { DynamoStatsStore } from '../adapters/dynamo-stats-store';
import { DynamoWorkerRegistry } from '../adapters/dynamo-workers';
import { S3PayloadStore } from '../adapters/s3';
import { SnsEventBus } from '../adapters/sns';
import { resolveQueueUrls, SqsQueueClient } from '../adapters/sqs';
import { UsageMeter } from '../adapters/usage-meter';
import type { TaskworkerConfig } from '../config/app-config';
import { ConfigError } from '../errors';
import { tableNames } from '../layout/tables';
import { listedSucceeded } from '../policy/job-rules';
import type { QueueClient, QueueUrls } from '../ports';
import {
  type DynamoClientOption,
  dynamoClientFrom,
  type S3ClientOption,
  type SnsClientOption,
  type SqsClientOption,
  s3ClientFrom,
  snsClientFrom,
  sqsClientFrom,
} from './clients';
import { type DevState, LOCAL_CREDENTIALS } from './dev-file';

/** A queue client on SQS (it lists, moves and measures queues too). */
export function sqsQueues(option: SqsClientOption = {}): SqsQueueClient {
  return new SqsQueueClient(sqsClientFrom(option));
}

/** A version's queue URLs, looked up by name on SQS; the SQS adapter's only (a custom queue client must be given them). */
export function lookUpQueueUrls(queues: QueueClient, config: TaskworkerConfig, version: string): Promise<QueueUrls> {
  if (!(queues instanceof SqsQueueClient)) throw new ConfigError('urls', undefined, 'queue URLs when a custom queue client is used');
  return resolveQueueUrls(queues.sqs, config, version);
}

/** An event bus on SNS. */
export function snsEventBus(option: SnsClientOption = {}): SnsEventBus {
  return new SnsEventBus(snsClientFrom(option));
}

/** A payload store on S3; `sdk` loads `@aws-sdk/client-s3` for a bundle that carries it. */
export function s3PayloadStore(option: S3ClientOption = {}, sdk?: () => typeof S3): S3PayloadStore {
  return new S3PayloadStore(s3ClientFrom(option), sdk);
}

/** A job store on the version's jobs table (`<app>-<version>-jobs`), on a client of its own. */
export function versionJobStore(config: TaskworkerConfig, version: string, dynamo: DynamoClientOption = {}): DynamoJobStore {
  return jobStoreOn(config, tableNames(config.app, version).jobs, dynamoClientFrom(dynamo));
}

function jobStoreOn(config: TaskworkerConfig, table: string, client: DynamoDBClient): DynamoJobStore {
  return new DynamoJobStore(
    table,
    {
      historyLimit: config.tracking.historyLimit,
      retentionDays: config.tracking.jobRetentionDays,
      listSucceeded: listedSucceeded(config.queues),
    },
    client,
  );
}

function statsStoresOn(
  table: string,
  client: DynamoDBClient,
): {
  stats: DynamoStatsStore;
  limits: DynamoLimitStore;
  controls: DynamoControlStore;
  workers: DynamoWorkerRegistry;
  operations: DynamoOperationLog;
} {
  return {
    stats: new DynamoStatsStore(table, client),
    operations: new DynamoOperationLog(table, client),
    limits: new DynamoLimitStore(table, client),
    controls: new DynamoControlStore(table, client),
    workers: new DynamoWorkerRegistry(table, client),
  };
}

/** Job and stats stores on a version's DynamoDB tables, with the config's retention settings. */
export function trackingFor(
  config: TaskworkerConfig,
  tables: { jobs?: string | undefined; stats?: string | undefined },
  dynamo: DynamoClientOption = {},
): {
  jobs?: DynamoJobStore;
  stats?: DynamoStatsStore;
  limits?: DynamoLimitStore;
  controls?: DynamoControlStore;
  workers?: DynamoWorkerRegistry;
  operations?: DynamoOperationLog;
} {
  const client = dynamoClientFrom(dynamo);
  return {
    ...(tables.jobs ? { jobs: jobStoreOn(config, tables.jobs, client) } : {}),
    ...(tables.stats ? statsStoresOn(tables.stats, client) : {}),
  };
}

/** Every store on both of a version's tables, on one client: {@link trackingFor} where both tables are known. */
export function versionStores(
  config: TaskworkerConfig,
  tables: { readonly jobs: string; readonly stats: string },
  dynamo: DynamoClientOption = {},
): {
  jobs: DynamoJobStore;
  stats: DynamoStatsStore;
  limits: DynamoLimitStore;
  controls: DynamoControlStore;
  workers: DynamoWorkerRegistry;
  operations: DynamoOperationLog;
} {
  const client = dynamoClientFrom(dynamo);
  return { jobs: jobStoreOn(config, tables.jobs, client), ...statsStoresOn(tables.stats, client) };
}

/**
 * What a dispatcher's own clients cost (lib/adapters/usage-meter.ts): the SQS adapter's requests and
 * the write units of every tracking store that has a DynamoDB client.
 */
export function dispatcherUsage(queues: QueueClient, tracking: object | undefined, now: () => number): UsageMeter {
  const usage = new UsageMeter(now);
  if (queues instanceof SqsQueueClient) usage.meterSqs(queues.sqs);
  for (const store of Object.values(tracking ?? {})) {
    const client = (store as { dynamo?: unknown } | undefined)?.dynamo;
    if (client && typeof client === 'object') usage.meterDynamo(client);
  }
  return usage;
}

/**
 * The clients of a running `taskworker dev` (its `.taskworker/dev.json`): its emulators' endpoints
 * and region and the local credentials. fauxqs serves SNS and S3 on its SQS endpoint.
 */
export function devClients(dev: DevState): {
  sqs: SqsClientOption;
  dynamo: DynamoClientOption;
  sns: SnsClientOption;
  s3: S3ClientOption;
} {
  const at = (endpoint: string) => ({ region: dev.region, endpoint, credentials: LOCAL_CREDENTIALS });
  return {
    sqs: { clientConfig: at(dev.sqsEndpoint) },
    dynamo: { clientConfig: at(dev.dynamodbEndpoint) },
    sns: { clientConfig: at(dev.sqsEndpoint) },
    s3: { clientConfig: { ...at(dev.sqsEndpoint), forcePathStyle: true } },
  };
}

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { createVersionTables } from '../../../lib/adapters/dynamo-admin';
import { SqsQueueClient } from '../../../lib/adapters/sqs';
import { createVersionQueues } from '../../../lib/adapters/sqs-admin';
import { SHARED_PROCESS } from '../../../lib/dispatching/memory-guard';
import { DispatcherRuntime, trackingFor } from '../../../lib/dispatching/runtime';
import type { BatchReport } from '../../../lib/dispatching/summary';
import { type Logger, silentLogger } from '../../../lib/ports';
import { Publisher } from '../../../lib/publishing/publisher';
import type { TaskBundle } from '../../../lib/tasks/bundle';
import type { JobStore, StatsStore } from '../../../lib/tracking/model';
import { createEffectsTable } from './stage';

/**
 * A version (queues, tables, the effects table) on the emulators, with dispatchers running in
 * this process: the real runtime, adapters and worker-thread pool, on whatever SDK clients the
 * suite hands them (faulted ones, for the fault suite).
 */
export async function inProcessVersion(clean: { sqs: SQSClient; dynamo: DynamoDBClient }, bundle: TaskBundle, version: string) {
  const { config } = bundle;
  const urls = await createVersionQueues(clean.sqs, config, version);
  const tables = await createVersionTables(clean.dynamo, config, version);
  const effectsTable = await createEffectsTable(clean.dynamo, `${config.app}-${version}-effects`);
  const { jobs, stats } = trackingFor(config, tables, { client: clean.dynamo }) as { jobs: JobStore; stats: StatsStore };
  const queues = new SqsQueueClient({ client: clean.sqs });
  const publisher = new Publisher({ config, version, tasks: bundle.tasks, queues, urls, jobs });
  const reports: Array<BatchReport & { workerId: string }> = [];
  const runtimes: DispatcherRuntime[] = [];
  const dispatcher = (
    workerId: string,
    clients: { sqs: SQSClient; dynamo: DynamoDBClient } = clean,
    logger: Logger = silentLogger,
  ): DispatcherRuntime => {
    const runtime = new DispatcherRuntime({
      bundle,
      version,
      urls,
      sqs: { client: clients.sqs },
      tracking: trackingFor(config, tables, { client: clients.dynamo }),
      logger,
      memory: SHARED_PROCESS,
      workerId,
      observer: { onBatch: (report) => reports.push({ ...report, workerId }) },
    });
    runtimes.push(runtime);
    return runtime;
  };
  const depth = (url: string) => queues.depth(url);
  const close = () => Promise.all(runtimes.map((r) => r.close()));
  return { version, urls, tables, effectsTable, jobs, stats, queues, publisher, reports, dispatcher, depth, close };
}

export type InProcessVersion = Awaited<ReturnType<typeof inProcessVersion>>;

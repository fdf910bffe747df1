import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { DispatcherRuntime } from '../../../lib/invocation/dispatcher-runtime';
import { provisionVersion } from '../../../lib/local/version';
import { type Logger, silentLogger } from '../../../lib/ports';
import type { BatchReport } from '../../../lib/settle/report';
import type { TaskBundle } from '../../../lib/tasks/bundle';
import { createEffectsTable } from './stage';

/**
 * A version (queues, tables, the effects table) on the emulators, with dispatchers running in
 * this process: the real runtime, adapters and worker-thread pool, on whatever SDK clients the
 * suite hands them (faulted ones, for the fault suite).
 */
export async function inProcessVersion(clean: { sqs: SQSClient; dynamo: DynamoDBClient }, bundle: TaskBundle, version: string) {
  const provisioned = await provisionVersion({ bundle, version, ...clean });
  const effectsTable = await createEffectsTable(clean.dynamo, `${bundle.config.app}-${version}-effects`);
  const reports: Array<BatchReport & { workerId: string }> = [];
  const runtimes: DispatcherRuntime[] = [];
  const dispatcher = (
    workerId: string,
    clients: { sqs: SQSClient; dynamo: DynamoDBClient } = clean,
    logger: Logger = silentLogger,
  ): DispatcherRuntime => {
    const runtime = provisioned.dispatcher({
      ...clients,
      logger,
      workerId,
      observer: { onBatch: (report) => reports.push({ ...report, workerId }) },
    });
    runtimes.push(runtime);
    return runtime;
  };
  const depth = (url: string) => provisioned.queues.depth(url);
  const close = () => Promise.all(runtimes.map((r) => r.close()));
  return { ...provisioned, effectsTable, reports, dispatcher, depth, close };
}

export type InProcessVersion = Awaited<ReturnType<typeof inProcessVersion>>;

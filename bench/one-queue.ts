import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import type { TrackingMode } from '../lib/config/app-config';
import { provisionVersion } from '../lib/local/version';
import { buildTasksBundle } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';

/**
 * The benchmarks' app: one queue `work` (tracking `mode`, visibility 30 s, no long poll, succeeded
 * jobs listed from the index as the config's default has it unless told), the
 * task modules of `workDir/tasks`, built as the artifact is and provisioned on the emulators as
 * version `version`.
 */
export async function oneQueueVersion(options: {
  readonly workDir: string;
  readonly run: number;
  readonly version: string;
  readonly mode: TrackingMode;
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly recordQueued?: boolean;
  /** The queue's `listSucceeded`; the config's default (on for `full`) when absent. */
  readonly listSucceeded?: boolean;
  /** Events the app declares (for tasks that wait for them). */
  readonly events?: readonly string[];
}) {
  const configFile = join(options.workDir, `config-${options.run}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      app: 'bench',
      tasksDir: 'tasks',
      queues: [
        {
          name: 'work',
          priority: 1,
          visibilityTimeoutSeconds: 30,
          longPollSeconds: 0,
          tracking: options.mode,
          ...(options.listSucceeded === undefined ? {} : { listSucceeded: options.listSucceeded }),
        },
      ],
      dispatcher: { concurrency: 10 },
      ...(options.events ? { events: options.events.map((name) => ({ name })) } : {}),
    }),
  );
  const { tasksFile } = await buildTasksBundle({ configFile, outFile: join(options.workDir, `tasks-${options.run}.cjs`) });
  const bundle = loadTaskBundle(tasksFile);
  return provisionVersion({
    bundle,
    version: options.version,
    sqs: options.sqs,
    dynamo: options.dynamo,
    ...(options.recordQueued === false ? { recordQueued: false } : {}),
  });
}

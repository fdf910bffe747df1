import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import { createVersionTables } from '../adapters/dynamo-admin';
import { SqsQueueClient } from '../adapters/sqs';
import { createVersionQueues } from '../adapters/sqs-admin';
import { buildArtifact } from '../build';
import { loadTaskBundle, type TaskBundle } from '../bundle';
import { validateVersion } from '../config';
import type { QueueUrls } from '../dispatcher';
import { Publisher } from '../publisher';
import { trackingFor } from '../runtime';
import type { BatchReport, DispatcherSummary } from '../summary';
import type { JobStore, StatsStore } from '../tracking/model';
import { type Emulators, startEmulators } from './emulators';
import type { RunnerMessage } from './runner';

export interface LocalStackOptions {
  readonly configFile: string;
  /** Overrides the config's tasksDir. */
  readonly tasksDir?: string;
  /** @defaultValue 'dev' */
  readonly version?: string;
  /** Dispatcher processes to start. @defaultValue 1 */
  readonly dispatchers?: number;
  readonly sqsPort?: number;
  readonly dynamodbPort?: number;
  /** @defaultValue 'us-east-1' */
  readonly region?: string;
  /** Dispatcher log level. @defaultValue 'WARN' */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';
  /** Invocation length of local dispatchers, seconds. @defaultValue the config's dispatcher.timeoutSeconds */
  readonly invocationSeconds?: number;
  readonly onBatch?: (report: BatchReport, dispatcher: number) => void;
  readonly onInvocation?: (summary: DispatcherSummary, dispatcher: number) => void;
  readonly onDispatcherError?: (message: string, dispatcher: number) => void;
}

export interface LocalStack {
  readonly bundle: TaskBundle;
  readonly version: string;
  readonly region: string;
  readonly endpoints: { readonly sqs: string; readonly dynamodb: string };
  readonly urls: QueueUrls & { readonly deadLetter: Readonly<Record<string, string>> };
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly tables: { readonly jobs: string; readonly stats: string };
  readonly jobs: JobStore;
  readonly stats: StatsStore;
  readonly publisher: Publisher;
  /** Environment that points the AWS SDK (and a dispatcher) at this stack. */
  readonly env: Readonly<Record<string, string>>;
  readonly dispatchers: readonly ChildProcess[];
  /**
   * Starts one more dispatcher process; returns its index. `env` adds to (or overrides) the
   * environment the stack gives it, e.g. its own endpoints.
   */
  startDispatcher(options?: { readonly env?: Readonly<Record<string, string>> }): number;
  /** Stops the dispatcher processes gracefully (running tasks finish, batches settle); the emulators keep running. */
  stopDispatchers(): Promise<void>;
  /** Stops dispatchers gracefully (running tasks finish), then the emulators. */
  stop(): Promise<void>;
}

/** Credentials the emulators accept; never valid anywhere else. */
const LOCAL_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'local', AWS_SECRET_ACCESS_KEY: 'local' };

/**
 * The whole system on one machine: builds the same artifact Lambda runs, starts the SQS and
 * DynamoDB emulators, creates the version's queues from the shared layout, and runs dispatcher
 * processes that invoke the real handler.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const version = validateVersion(options.version ?? 'dev', '--version');
  const region = options.region ?? 'us-east-1';
  const buildDir = await mkdtemp(join(tmpdir(), 'taskworker-dev-'));
  const artifact = await buildArtifact({
    configFile: options.configFile,
    ...(options.tasksDir ? { tasksDir: options.tasksDir } : {}),
    outDir: buildDir,
    localRunner: true,
  });
  const bundle = loadTaskBundle(artifact.tasksFile);
  let emulators: Emulators | undefined;
  try {
    emulators = await startEmulators({
      ...(options.sqsPort !== undefined ? { sqsPort: options.sqsPort } : {}),
      ...(options.dynamodbPort !== undefined ? { dynamodbPort: options.dynamodbPort } : {}),
    });
  } catch (error) {
    await rm(buildDir, { recursive: true, force: true });
    throw error;
  }
  const credentials = { accessKeyId: LOCAL_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: LOCAL_CREDENTIALS.AWS_SECRET_ACCESS_KEY };
  const sqs = new SQSClient({ region, endpoint: emulators.sqsEndpoint, credentials });
  const dynamo = new DynamoDBClient({ region, endpoint: emulators.dynamodbEndpoint, credentials });
  const urls = await createVersionQueues(sqs, bundle.config, version);
  const tables = await createVersionTables(dynamo, bundle.config, version);
  const { jobs, stats } = trackingFor(bundle.config, tables, { client: dynamo }) as { jobs: JobStore; stats: StatsStore };
  const env: Record<string, string> = {
    AWS_REGION: region,
    AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
    ...LOCAL_CREDENTIALS,
  };
  const dispatcherEnv: Record<string, string> = {
    ...env,
    TASKWORKER_VERSION: version,
    TASKWORKER_QUEUE_URLS: JSON.stringify({ queues: urls.queues, archive: urls.archive }),
    TASKWORKER_JOBS_TABLE: tables.jobs,
    TASKWORKER_STATS_TABLE: tables.stats,
    TASKWORKER_LOCAL_TIMEOUT_SECONDS: String(options.invocationSeconds ?? bundle.config.dispatcher.timeoutSeconds),
    TASKWORKER_LOG_LEVEL: options.logLevel ?? 'WARN',
    AWS_LAMBDA_FUNCTION_NAME: `${bundle.config.app}-${version}-dispatcher`,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(bundle.config.dispatcher.memoryMb),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // EMF metrics are for CloudWatch; locally the batch log and the summary show the same counts.
    POWERTOOLS_METRICS_DISABLED: 'true',
  };
  const dispatchers: ChildProcess[] = [];
  const startDispatcher = (more: { readonly env?: Readonly<Record<string, string>> } = {}): number => {
    const index = dispatchers.length;
    const child = fork(artifact.runnerFile as string, [], {
      env: { ...process.env, ...dispatcherEnv, ...more.env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    readiness.set(
      child,
      new Promise<void>((resolve) => {
        child.on('message', (message: RunnerMessage) => message.type === 'ready' && resolve());
        child.once('exit', () => resolve());
      }),
    );
    child.on('message', (message: RunnerMessage) => {
      if (message.type === 'ready') return;
      if (message.type === 'batch') options.onBatch?.(message.report, index);
      else if (message.type === 'invocation') options.onInvocation?.(message.summary, index);
      else options.onDispatcherError?.(message.message, index);
    });
    dispatchers.push(child);
    return index;
  };
  for (let i = 0; i < (options.dispatchers ?? 1); i++) startDispatcher();

  const stopDispatchers = async () => {
    await Promise.all(dispatchers.map((child) => stopChild(child)));
  };
  let stopped: Promise<void> | undefined;
  const stop = () => {
    stopped ??= (async () => {
      await stopDispatchers();
      sqs.destroy();
      dynamo.destroy();
      await emulators?.stop();
      await rm(buildDir, { recursive: true, force: true });
    })();
    return stopped;
  };
  return {
    bundle,
    version,
    region,
    endpoints: { sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamodbEndpoint },
    urls,
    sqs,
    dynamo,
    tables,
    jobs,
    stats,
    publisher: new Publisher({
      config: bundle.config,
      version,
      tasks: bundle.tasks,
      queues: new SqsQueueClient({ client: sqs }),
      urls,
      jobs,
    }),
    env,
    dispatchers,
    startDispatcher,
    stopDispatchers,
    stop,
  };
}

/** Resolves once a dispatcher process has its stop handlers installed (or has exited). */
const readiness = new WeakMap<ChildProcess, Promise<void>>();

/** Asks a dispatcher to stop (it finishes running tasks and settles), and kills it if it has not exited in time. */
async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  // A process still starting has no SIGTERM handler yet and would die of the signal: wait for it.
  await readiness.get(child);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await exited;
  clearTimeout(timer);
}

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { Clock } from '../../lib/clock';
import type { DispatcherRuntime } from '../../lib/invocation/dispatcher-runtime';
import { provisionVersion } from '../../lib/local/version';
import { type Logger, type QueueClient, silentLogger } from '../../lib/ports';
import type { Random } from '../../lib/random';
import type { BatchReport, JobReport } from '../../lib/settle/report';
import type { TaskBundle } from '../../lib/tasks/bundle';
import type { LimitStore } from '../../lib/track/fleet-limits';
import type { JobStore } from '../../lib/track/job-stores';
import { readArchiveRecord } from '../../lib/wire/archive-record';
import { buildFixtureBundle, type EmulatorHarness, nextVersion, startHarness, stopHarness } from './emulators';

export interface SystemOptions {
  /** Wraps the SQS adapter (fault injection, interference). */
  readonly wrapQueues?: (sqs: QueueClient) => QueueClient;
  /** Job records and stats on dynalite. */
  readonly tracked?: boolean;
  /** Wraps the job store of one dispatcher (interference with leases). */
  readonly wrapJobs?: (jobs: JobStore) => JobStore;
  /** Wraps the fleet-limit store of one dispatcher (what the rate limit granted). */
  readonly wrapLimits?: (limits: LimitStore) => LimitStore;
  readonly logger?: Logger;
  readonly workerId?: string;
  /** The dispatcher's clock (tests that move time). */
  readonly clock?: Clock;
  /** The dispatcher's source of randomness (a backoff's jitter, the selector's draws). */
  readonly random?: Random;
}

/** Fresh queues (and tables) on the emulators, a publisher, and a way to start dispatchers on them. */
export async function system(h: EmulatorHarness, bundle: TaskBundle, options: SystemOptions = {}) {
  const dynamo = new DynamoDBClient({
    region: 'us-east-1',
    endpoint: h.emulators.dynamodbEndpoint,
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  const tracked = options.tracked === true;
  const provisioned = await provisionVersion({ bundle, version: nextVersion(), sqs: h.sqs, dynamo, recordQueued: tracked });
  const { version, urls, queues: sqs, publisher } = provisioned;
  const reports: BatchReport[] = [];
  const runtimes: DispatcherRuntime[] = [];
  const dispatcher = (more: SystemOptions = {}) => {
    const wrap = more.wrapQueues ?? options.wrapQueues;
    const runtime = provisioned.dispatcher({
      tracked,
      ...(wrap ? { queues: wrap(sqs) } : {}),
      ...(more.wrapJobs ? { wrapJobs: more.wrapJobs } : {}),
      ...(more.wrapLimits ? { wrapLimits: more.wrapLimits } : {}),
      logger: more.logger ?? options.logger ?? silentLogger,
      workerId: more.workerId ?? options.workerId ?? `dispatcher-${runtimes.length + 1}`,
      ...((more.clock ?? options.clock) ? { clock: (more.clock ?? options.clock) as Clock } : {}),
      ...((more.random ?? options.random) ? { random: (more.random ?? options.random) as Random } : {}),
      observer: { onBatch: (r) => reports.push(r) },
    });
    runtimes.push(runtime);
    return runtime;
  };
  const runtime = dispatcher();
  const tracking = tracked ? { jobs: provisioned.jobs, stats: provisioned.stats } : undefined;
  const tables = tracked ? provisioned.tables : undefined;
  const jobs = (): JobReport[] => reports.flatMap((r) => r.jobs);
  const archive = async () => {
    const messages = await sqs.receive(urls.archive, { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 30 });
    return messages.map((m) => ({ body: m.body, record: readArchiveRecord(m.attributes) }));
  };
  const depth = (queue: string) => sqs.depth(urls.queues[queue] as string);
  const drained = async (queue: string) => {
    const d = await depth(queue);
    return d.visible + d.inFlight + d.delayed === 0;
  };
  const close = async () => {
    await Promise.all(runtimes.map((r) => r.close()));
    dynamo.destroy();
  };
  // What points a CLI command run in this process (tests' `cli(...)`) at these emulators.
  const env = {
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_SQS: h.emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: h.emulators.dynamodbEndpoint,
    AWS_ACCESS_KEY_ID: 'test',
    AWS_SECRET_ACCESS_KEY: 'test',
  };
  return { version, urls, tables, tracking, runtime, dispatcher, publisher, reports, jobs, archive, depth, drained, close, sqs, env };
}

export type System = Awaited<ReturnType<typeof system>>;

/**
 * For one test file: the emulators and the fixture bundle once, and a fresh system per test
 * (`fresh(options)`), closed after the test.
 */
export function systemPerTest(
  /** The app's config (default: test/fixtures/taskworker.config.ts), bundled with its tasks. */
  configFile?: string,
): (options?: SystemOptions) => Promise<System> {
  let h: EmulatorHarness | undefined;
  let bundle: TaskBundle | undefined;
  let current: System | undefined;
  beforeAll(async () => {
    h = await startHarness();
    bundle = await buildFixtureBundle(configFile);
  });
  afterAll(() => stopHarness(h));
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return async (options = {}) => {
    current = await system(h as EmulatorHarness, bundle as TaskBundle, options);
    return current;
  };
}

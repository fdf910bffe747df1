import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_CREDENTIALS as LOCAL } from '../aws/dev-file';
import { type EmulatorClients, emulatorClients } from '../aws/emulator-clients';
import { snsEventBus } from '../aws/wiring';
import { validateVersion } from '../config/app-config';
import { describe, RestartRequiredError, TaskworkerError } from '../errors';
import { checkCrontabs } from '../policy/cron-expressions';
import type { EventBus, QueueUrls } from '../ports';
import { Publisher } from '../publish/publisher';
import { type Artifact, buildArtifact } from '../tasks/build';
import { loadTaskBundle, type TaskBundle } from '../tasks/bundle';
import type { JobStore } from '../track/job-stores';
import { ControlsCache } from '../track/operator-controls';
import type { StatsStore } from '../track/stats-store';
import { claimDevState, type DevStateDir, type DevStateFound } from './dev-state';
import { type Emulators, startEmulators } from './emulators';
import { LocalFleet } from './fleet';
import { type Restored, restoreAndRemove, saveSnapshot } from './snapshot';
import type { DispatcherProcessOptions, LocalStackOptions } from './stack-options';
import { type ProvisionChanges, type ProvisionedVersion, provisionChanges, provisionVersion } from './version';

export type { DispatcherExit, DispatcherProcessOptions, HeldJob, LocalStackOptions, LogLevel } from './stack-options';

/** With {@link LocalStackOptions.stateDir}: how the start found it, and what it put back. */
export interface StateAtStart {
  readonly dir: string;
  readonly found: DevStateFound;
  /** The messages and objects of the last clean stop, put back. */
  readonly restored?: Restored;
}

export type { ProvisionChanges } from './version';

export interface Reloaded {
  readonly bundle: TaskBundle;
  readonly provisioned: ProvisionChanges;
}

export interface LocalStack {
  /** The tasks bundle the dispatchers run (the latest one after a {@link LocalStack.reload}). */
  readonly bundle: TaskBundle;
  readonly version: string;
  readonly region: string;
  readonly endpoints: { readonly sqs: string; readonly dynamodb: string };
  /** With a `stateDir`: what was kept from the last run and put back. */
  readonly state?: StateAtStart;
  /** The version's queues (those of the latest config after a {@link LocalStack.reload}). */
  readonly urls: QueueUrls & { readonly deadLetter: Readonly<Record<string, string>> };
  readonly sqs: SQSClient;
  readonly dynamo: DynamoDBClient;
  readonly tables: { readonly jobs: string; readonly stats: string };
  readonly jobs: JobStore;
  readonly stats: StatsStore;
  /** A publisher for this version that knows the bundle's tasks. */
  readonly publisher: Publisher;
  /** Environment that points the AWS SDK (and a dispatcher) at this stack. */
  readonly env: Readonly<Record<string, string>>;
  readonly dispatchers: readonly ChildProcess[];
  /** Dispatcher processes running now. */
  alive(): number;
  /** Dispatcher processes that ended while the stack ran (not stopped by it). */
  deaths(): number;
  /**
   * Starts one more dispatcher process; returns its index. `env` adds to (or overrides) the
   * environment the stack gives it, e.g. its own endpoints. When `on-demand`, `fn` says which
   * function it is a container of (the dispatcher's by default).
   */
  startDispatcher(options?: DispatcherProcessOptions): number;
  /** Invocations started by the schedule, the doorbells and scaling out (`on-demand` only), by function. */
  invocationsByFunction(): Readonly<Record<string, number>>;
  /** Containers of each function now (`on-demand` only): the ones started up front and the ones started since because all were busy. */
  containersByFunction(): Readonly<Record<string, number>>;
  /** Each ended invocation (`on-demand` only): its function and how long it ran, ms, as Lambda would bill it. */
  invocationDurations(): ReadonlyArray<{ readonly fn: string; readonly ms: number }>;
  /** Stops the dispatcher processes gracefully (running tasks finish, batches settle); the emulators keep running. */
  stopDispatchers(): Promise<void>;
  /**
   * Builds the config and tasks again, provisions what the new config needs (queues added or
   * changed, the event topic, subscriptions added, moved or taken out: provisioning is idempotent)
   * and restarts the dispatchers on the new build, as many as ran: running tasks finish, unstarted
   * ones are released. The stack's urls, publisher and dispatchers' environment follow. A build
   * that fails (a syntax error, a task that does not fit the config) throws and leaves the running
   * dispatchers as they were; so does another app name ({@link RestartRequiredError}: every
   * resource is named after it, a new stack is needed).
   */
  reload(): Promise<Reloaded>;
  /**
   * Stops dispatchers gracefully (running tasks finish), then, with a `stateDir`, writes the queues'
   * messages and the buckets' objects there, then stops the emulators.
   */
  stop(): Promise<void>;
}

/** The emulators' credentials, as the environment gives them. */
const LOCAL_CREDENTIALS = { AWS_ACCESS_KEY_ID: LOCAL.accessKeyId, AWS_SECRET_ACCESS_KEY: LOCAL.secretAccessKey };

/** A build of the dispatcher artifact in a directory of its own, loaded and checked. */
interface Build {
  readonly dir: string;
  readonly artifact: Artifact;
  readonly bundle: TaskBundle;
}

/** Builds the artifact into a fresh temporary directory; a build that fails leaves no directory behind. */
async function buildInto(options: LocalStackOptions): Promise<Build> {
  const dir = await mkdtemp(join(tmpdir(), 'taskworker-dev-'));
  try {
    const artifact = await buildArtifact({
      configFile: options.configFile,
      ...(options.tasksDir ? { tasksDir: options.tasksDir } : {}),
      outDir: dir,
      localRunner: true,
    });
    const bundle = loadTaskBundle(artifact.tasksFile);
    checkCrontabs(bundle.config);
    return { dir, artifact, bundle };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * Claims the state directory and starts the emulators (or takes the joined ones). Nothing may be
 * left behind by a start that failed: not the build, not half the emulators.
 */
async function openEmulators(options: LocalStackOptions, build: Build): Promise<{ emulators: Emulators; state: DevStateDir | undefined }> {
  let state: DevStateDir | undefined;
  try {
    state =
      options.stateDir !== undefined && !options.join ? claimDevState(options.stateDir, { reset: options.reset === true }) : undefined;
    const emulators = options.join
      ? { ...options.join, stop: async () => {} }
      : await startEmulators({
          ...(options.sqsPort !== undefined ? { sqsPort: options.sqsPort } : {}),
          ...(options.dynamodbPort !== undefined ? { dynamodbPort: options.dynamodbPort } : {}),
          ...(state ? { dynamodbPath: state.dynamodbPath } : {}),
        });
    return { emulators, state };
  } catch (error) {
    state?.release();
    await rm(build.dir, { recursive: true, force: true });
    throw error;
  }
}

/** The version's queues, tables, topic and bucket for the first build, and the state kept from the last run put back; a failure stops what started. */
async function provisionFirst(
  provision: (bundle: TaskBundle) => Promise<ProvisionedVersion>,
  build: Build,
  emulators: Emulators,
  clients: EmulatorClients,
  state: DevStateDir | undefined,
): Promise<{ provisioned: ProvisionedVersion; stateAtStart: StateAtStart | undefined }> {
  const { sqs, dynamo, sns, s3 } = clients;
  try {
    const provisioned = await provision(build.bundle);
    const restored = state ? await restoreAndRemove(state.snapshotDir, sqs, s3) : undefined;
    const stateAtStart = state ? { dir: state.dir, found: state.found, ...(restored ? { restored } : {}) } : undefined;
    return { provisioned, stateAtStart };
  } catch (error) {
    for (const client of [sqs, dynamo, sns, s3]) client.destroy();
    await emulators.stop();
    state?.release();
    await rm(build.dir, { recursive: true, force: true });
    throw error;
  }
}

/** Environment that points the AWS SDK (and a dispatcher) at the emulators. */
function emulatorEnv(region: string, emulators: Emulators): Record<string, string> {
  return {
    AWS_REGION: region,
    // Python's boto3 and the AWS CLI read this one, not AWS_REGION.
    AWS_DEFAULT_REGION: region,
    AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_SNS: emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_S3: emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
    ...LOCAL_CREDENTIALS,
  };
}

/** What a started stack works on: fixed for its life but for `live`, which a reload replaces. */
interface Running {
  readonly options: LocalStackOptions;
  readonly version: string;
  readonly emulators: Emulators;
  readonly clients: EmulatorClients;
  readonly state: DevStateDir | undefined;
  readonly env: Readonly<Record<string, string>>;
  readonly tables: ProvisionedVersion['tables'];
  readonly eventBus: EventBus;
  readonly provision: (bundle: TaskBundle) => Promise<ProvisionedVersion>;
  readonly live: {
    /** The build the dispatchers run, the version as provisioned for it, and a publisher for both. */
    build: Build;
    current: ProvisionedVersion;
    publisher: Publisher;
    /** Once the stack stops: the stop. */
    stopped?: Promise<void>;
  };
}

/** A dispatcher process's environment: the emulators', the version's queues and tables, and what Lambda would set. */
function dispatcherEnv({ options, version, env, tables, live }: Running, bundle: TaskBundle): Record<string, string> {
  return {
    ...env,
    TASKWORKER_VERSION: version,
    TASKWORKER_QUEUE_URLS: JSON.stringify({ queues: live.current.urls.queues, archive: live.current.urls.archive }),
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
}

/** A publisher for the version as provisioned that knows the bundle's tasks. */
function publisherFor(
  { version, eventBus, clients }: Pick<Running, 'version' | 'eventBus' | 'clients'>,
  current: ProvisionedVersion,
  bundle: TaskBundle,
): Publisher {
  return new Publisher({
    config: bundle.config,
    version,
    tasks: bundle.tasks,
    queues: current.queues,
    urls: current.urls,
    jobs: current.jobs,
    events: { ...(current.events?.topicArn ? { topicArn: current.events.topicArn } : {}), bus: eventBus },
    payloads: { s3: { client: clients.s3 } },
  });
}

const UNCHANGED: ProvisionChanges = { queues: [], topics: [], subscribed: [], unsubscribed: [] };

/** {@link LocalStack.reload}: the new build is made and provisioned before the dispatchers restart on it. */
async function reloadStack(running: Running, fleet: LocalFleet): Promise<Reloaded> {
  const { options, live } = running;
  const next = await buildInto(options);
  if (live.stopped) {
    // The stack stopped while this build ran: nothing to restart, nothing to keep.
    await rm(next.dir, { recursive: true, force: true });
    return { bundle: live.build.bundle, provisioned: UNCHANGED };
  }
  const was = live.build.bundle.config;
  const now = next.bundle.config;
  let provisioned: ProvisionedVersion;
  try {
    // Every queue, table, topic and bucket is named after the app: another one is another stack.
    if (now.app !== was.app) throw new RestartRequiredError('app', was.app, now.app);
    // Before the dispatchers stop: the running ones go on meanwhile, on queues that stay.
    provisioned = await running.provision(next.bundle);
  } catch (error) {
    await rm(next.dir, { recursive: true, force: true });
    throw error;
  }
  const changes = provisionChanges(live.current, provisioned);
  const count = options.invocations === 'on-demand' ? (options.dispatchers ?? 1) : Math.max(1, fleet.alive());
  await fleet.stopDispatchers();
  const old = live.build;
  live.build = next;
  live.current = provisioned;
  live.publisher = publisherFor(running, provisioned, next.bundle);
  await rm(old.dir, { recursive: true, force: true });
  fleet.startAll(count);
  return { bundle: next.bundle, provisioned: changes };
}

/** {@link LocalStack.stop}, once. */
async function stopStack({ emulators, clients, state, live }: Running, fleet: LocalFleet): Promise<void> {
  const { sqs, dynamo, sns, s3 } = clients;
  await fleet.stopAll();
  // fauxqs keeps its queues and buckets in memory only: written out while it still runs.
  const saved = state
    ? await saveSnapshot(state.snapshotDir, emulators.sqsEndpoint, s3).then(
        () => undefined,
        (error: unknown) => error,
      )
    : undefined;
  for (const client of [sqs, dynamo, sns, s3]) client.destroy();
  await emulators.stop();
  await rm(live.build.dir, { recursive: true, force: true });
  if (saved !== undefined) {
    // Left claimed: the next start finds the tables without their messages and starts empty, saying why.
    throw new TaskworkerError(`taskworker dev could not keep its queues and objects in ${state?.dir}: ${describe(saved)}`, {
      cause: saved,
    });
  }
  state?.release();
}

/**
 * The whole system on one machine: builds the same artifact Lambda runs, starts the SQS and
 * DynamoDB emulators, creates the version's queues from the shared layout, and runs dispatcher
 * processes that invoke the real handler.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const version = validateVersion(options.version ?? 'dev', '--version');
  const region = options.region ?? 'us-east-1';
  const build = await buildInto(options);
  const { emulators, state } = await openEmulators(options, build);
  const credentials = { accessKeyId: LOCAL_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: LOCAL_CREDENTIALS.AWS_SECRET_ACCESS_KEY };
  const clients = emulatorClients(region, emulators, credentials);
  const { sqs, dynamo, sns, s3 } = clients;
  const provision = (bundle: TaskBundle) => provisionVersion({ bundle, version, sqs, dynamo, sns, s3 });
  const { provisioned, stateAtStart } = await provisionFirst(provision, build, emulators, clients, state);
  const { tables } = provisioned;
  // The local triggers skip a paused queue, as its disabled event-source mapping does in AWS.
  const controls = new ControlsCache(provisioned.controls, () => Date.now());
  const env = emulatorEnv(region, emulators);
  const eventBus = snsEventBus({ client: sns });
  const fixed = { options, version, emulators, clients, state, env, tables, eventBus, provision };
  const live: Running['live'] = { build, current: provisioned, publisher: publisherFor(fixed, provisioned, build.bundle) };
  const running: Running = { ...fixed, live };
  const fleet = new LocalFleet({
    options,
    version,
    region,
    sqs,
    controls,
    build: () => live.build,
    urls: () => live.current.urls,
    env: (bundle) => dispatcherEnv(running, bundle),
  });
  fleet.startAll(options.dispatchers ?? 1);
  return {
    get bundle() {
      return live.build.bundle;
    },
    version,
    region,
    endpoints: { sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamodbEndpoint },
    ...(stateAtStart ? { state: stateAtStart } : {}),
    get urls() {
      return live.current.urls;
    },
    sqs,
    dynamo,
    tables,
    get jobs() {
      return live.current.jobs;
    },
    get stats() {
      return live.current.stats;
    },
    get publisher() {
      return live.publisher;
    },
    env,
    dispatchers: fleet.dispatchers,
    alive: () => fleet.alive(),
    deaths: () => fleet.deaths(),
    startDispatcher: (more?: DispatcherProcessOptions) => fleet.startDispatcher(more),
    invocationsByFunction: () => fleet.containers.invocationCounts(),
    containersByFunction: () => fleet.containers.containerCounts(),
    invocationDurations: () => fleet.containers.durations(),
    stopDispatchers: () => fleet.stopDispatchers(),
    reload: () => reloadStack(running, fleet),
    stop: () => {
      live.stopped ??= stopStack(running, fleet);
      return live.stopped;
    },
  };
}

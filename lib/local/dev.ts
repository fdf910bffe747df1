import { type ChildProcess, fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_CREDENTIALS as LOCAL } from '../aws/dev-file';
import { emulatorClients } from '../aws/emulator-clients';
import { snsEventBus } from '../aws/wiring';
import { systemClock } from '../clock';
import { validateVersion } from '../config/app-config';
import { describe, RestartRequiredError, TaskworkerError } from '../errors';
import type { QueueUrls } from '../ports';
import { Publisher } from '../publish/publisher';
import type { BatchReport, DispatcherSummary } from '../settle/report';
import { type Artifact, buildArtifact } from '../tasks/build';
import { loadTaskBundle, type TaskBundle } from '../tasks/bundle';
import { ControlsCache, pausedQueues } from '../track/controls';
import { checkCrontabs } from '../track/cron';
import type { JobStore, StatsStore } from '../track/model';
import { DOORBELL_MAX_CONCURRENCY, doorbellQueues } from '../wake-up';
import { ContainerPool } from './containers';
import { claimDevState, type DevStateDir, type DevStateFound } from './dev-state';
import { RestartBackoff, readiness, stopChild } from './dispatcher-processes';
import { type Emulators, startEmulators } from './emulators';
import { type LocalSchedules, startLocalSchedules } from './recurring-timers';
import type { RunnerMessage } from './runner';
import { type Restored, restoreAndRemove, saveSnapshot } from './snapshot';
import { type ProvisionChanges, type ProvisionedVersion, provisionChanges, provisionVersion } from './version';
import { DISPATCHER_FUNCTION, doorbellFunction, type LocalWakeUp, startLocalWakeUp } from './wake';

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

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
  /**
   * The emulators of another running stack (a second app beside the first, `taskworker dev
   * --join DIR`): none are started here, and stopping this stack leaves them running. Its queues,
   * tables, topic and subscriptions are created on them, so one app's events reach the other's
   * subscribers as on AWS.
   */
  readonly join?: { readonly sqsEndpoint: string; readonly dynamodbEndpoint: string };
  /**
   * Keep the emulators' state in this directory between runs (`taskworker dev` gives
   * `.taskworker/emulators`): DynamoDB keeps its tables there as it writes them, and a clean
   * {@link LocalStack.stop} writes the queues' messages and the buckets' objects there, put back at
   * the next start (lib/local/dev-state.ts says what a start does after a dev that was killed).
   * Ignored with `join`: the dev that owns the emulators keeps their state. @defaultValue in
   * memory, gone at the stop
   */
  readonly stateDir?: string;
  /** With `stateDir`: start empty, dropping what was kept there. @defaultValue false */
  readonly reset?: boolean;
  /** @defaultValue 'us-east-1' */
  readonly region?: string;
  /** Dispatcher log level. @defaultValue 'WARN' */
  readonly logLevel?: LogLevel;
  /** Invocation length of local dispatchers, seconds. @defaultValue the config's dispatcher.timeoutSeconds */
  readonly invocationSeconds?: number;
  /**
   * How the dispatchers are invoked. `back-to-back`: each process invokes the handler again as soon
   * as an invocation ends, so dispatchers always listen (harnesses, benchmarks). `on-demand`: as
   * in AWS — the schedule invokes the dispatcher function every minute, each doorbell queue's
   * trigger invokes its doorbell function when a message arrives (lib/local/wake.ts), and an idle
   * version has nothing running; `dispatchers` is then the dispatcher function's containers started
   * up front, and each doorbell queue has one more. As in Lambda, an invocation that finds every
   * container of its function busy starts a new one (lib/local/containers.ts): up to
   * `dispatcher.maxConcurrency` (the reserved concurrency) for the dispatcher and the trigger's
   * `MaximumConcurrency` for a doorbell; one that idled {@link LocalStackOptions.idleContainerMs}
   * is stopped again. @defaultValue 'back-to-back'
   */
  readonly invocations?: 'back-to-back' | 'on-demand';
  /** The schedule's period when `on-demand`, ms. @defaultValue one minute */
  readonly schedulePeriodMs?: number;
  /**
   * When `on-demand`, a container started because the others were busy is stopped after idling
   * this long, ms (Lambda keeps one for minutes; dev gives the memory back sooner).
   * @defaultValue 60 s
   */
  readonly idleContainerMs?: number;
  /**
   * Start a new dispatcher process when one exits while the stack runs (a task killed its process,
   * the OOM killer, a native crash, a stop past `rssLimitMb`), as Lambda starts a new container.
   * Quick deaths in a row back off, from 0.5 s doubling to 30 s. Off for harnesses that manage
   * their processes themselves. @defaultValue true
   */
  readonly replaceDeadDispatchers?: boolean;
  /**
   * Each line a dispatcher process writes (its JSON log lines, a task's console output). Without
   * it the processes write to this process's stdout and stderr directly.
   */
  readonly onOutput?: (line: string, dispatcher: number) => void;
  readonly onBatch?: (report: BatchReport, dispatcher: number) => void;
  readonly onInvocation?: (summary: DispatcherSummary, dispatcher: number) => void;
  readonly onDispatcherError?: (message: string, dispatcher: number) => void;
  /** A dispatcher process ended while the stack ran: how, what it held, and its replacement if any. */
  readonly onDispatcherExit?: (exit: DispatcherExit) => void;
  /** A dispatcher process was started (at the start, as a replacement, after a reload, or for an invocation that found the others busy). */
  readonly onDispatcherStart?: (dispatcher: number) => void;
  /** `on-demand`: a container started for an invocation that found the others busy was stopped after it idled (no death). */
  readonly onDispatcherRetired?: (dispatcher: number) => void;
  /** Fire the config's `schedules` (as EventBridge Scheduler does in AWS). @defaultValue true */
  readonly schedules?: boolean;
  /** A schedule sent a tick. */
  readonly onScheduleTick?: (tick: { readonly schedule: string; readonly scheduledTime: string; readonly jobId: string }) => void;
}

/** A job a dispatcher had received and not yet settled. */
export interface HeldJob {
  readonly queue: string;
  readonly messageId: string;
  readonly jobId?: string;
  readonly task?: string;
}

export interface DispatcherExit {
  readonly dispatcher: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** Jobs it held: their messages come back once their visibility lapses. */
  readonly held: readonly HeldJob[];
  /** The dispatcher started in its place, and after how long. */
  readonly replacement?: { readonly dispatcher: number; readonly afterMs: number };
}

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

export interface DispatcherProcessOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly fn?: string;
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
 * The whole system on one machine: builds the same artifact Lambda runs, starts the SQS and
 * DynamoDB emulators, creates the version's queues from the shared layout, and runs dispatcher
 * processes that invoke the real handler.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  const version = validateVersion(options.version ?? 'dev', '--version');
  const region = options.region ?? 'us-east-1';
  let build = await buildInto(options);
  let emulators: Emulators;
  let state: DevStateDir | undefined;
  try {
    state =
      options.stateDir !== undefined && !options.join ? claimDevState(options.stateDir, { reset: options.reset === true }) : undefined;
    emulators = options.join
      ? { ...options.join, stop: async () => {} }
      : await startEmulators({
          ...(options.sqsPort !== undefined ? { sqsPort: options.sqsPort } : {}),
          ...(options.dynamodbPort !== undefined ? { dynamodbPort: options.dynamodbPort } : {}),
          ...(state ? { dynamodbPath: state.dynamodbPath } : {}),
        });
  } catch (error) {
    // Nothing may be left behind by a start that failed: not the build, not half the emulators.
    state?.release();
    await rm(build.dir, { recursive: true, force: true });
    throw error;
  }
  const credentials = { accessKeyId: LOCAL_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: LOCAL_CREDENTIALS.AWS_SECRET_ACCESS_KEY };
  const { sqs, dynamo, sns, s3 } = emulatorClients(region, emulators, credentials);
  const provision = (bundle: TaskBundle) => provisionVersion({ bundle, version, sqs, dynamo, sns, s3 });
  let current: ProvisionedVersion;
  let stateAtStart: StateAtStart | undefined;
  try {
    current = await provision(build.bundle);
    const restored = state ? await restoreAndRemove(state.snapshotDir, sqs, s3) : undefined;
    stateAtStart = state ? { dir: state.dir, found: state.found, ...(restored ? { restored } : {}) } : undefined;
  } catch (error) {
    for (const client of [sqs, dynamo, sns, s3]) client.destroy();
    await emulators.stop();
    state?.release();
    await rm(build.dir, { recursive: true, force: true });
    throw error;
  }
  const { tables } = current;
  // The local triggers skip a paused queue, as its disabled event-source mapping does in AWS.
  const controlsCache = new ControlsCache(current.controls, () => Date.now());
  const env: Record<string, string> = {
    AWS_REGION: region,
    // Python's boto3 and the AWS CLI read this one, not AWS_REGION.
    AWS_DEFAULT_REGION: region,
    AWS_ENDPOINT_URL_SQS: emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_SNS: emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_S3: emulators.sqsEndpoint,
    AWS_ENDPOINT_URL_DYNAMODB: emulators.dynamodbEndpoint,
    ...LOCAL_CREDENTIALS,
  };
  const dispatcherEnv = (bundle: TaskBundle): Record<string, string> => ({
    ...env,
    TASKWORKER_VERSION: version,
    TASKWORKER_QUEUE_URLS: JSON.stringify({ queues: current.urls.queues, archive: current.urls.archive }),
    TASKWORKER_JOBS_TABLE: tables.jobs,
    TASKWORKER_STATS_TABLE: tables.stats,
    TASKWORKER_LOCAL_TIMEOUT_SECONDS: String(options.invocationSeconds ?? bundle.config.dispatcher.timeoutSeconds),
    TASKWORKER_LOG_LEVEL: options.logLevel ?? 'WARN',
    AWS_LAMBDA_FUNCTION_NAME: `${bundle.config.app}-${version}-dispatcher`,
    AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(bundle.config.dispatcher.memoryMb),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    // EMF metrics are for CloudWatch; locally the batch log and the summary show the same counts.
    POWERTOOLS_METRICS_DISABLED: 'true',
  });
  const eventBus = snsEventBus({ client: sns });
  const publisherFor = (bundle: TaskBundle) =>
    new Publisher({
      config: bundle.config,
      version,
      tasks: bundle.tasks,
      queues: current.queues,
      urls: current.urls,
      jobs: current.jobs,
      events: { ...(current.events?.topicArn ? { topicArn: current.events.topicArn } : {}), bus: eventBus },
      payloads: { s3: { client: s3 } },
    });
  let publisher = publisherFor(build.bundle);

  const dispatchers: ChildProcess[] = [];
  const onDemand = options.invocations === 'on-demand';
  /** Containers the pool let go after they idled: their exit is no death. */
  const retired = new WeakSet<ChildProcess>();
  const warmCount = (fn: string) => (fn === DISPATCHER_FUNCTION ? (options.dispatchers ?? 1) : 1);
  const containers = new ContainerPool<ChildProcess>({
    start: (fn) => (stopping ? undefined : dispatchers[startDispatcher({ fn })]),
    // The dispatcher function's reserved concurrency (more when more were asked for up front); a doorbell's trigger.
    concurrency: (fn) =>
      fn === DISPATCHER_FUNCTION ? Math.max(warmCount(fn), build.bundle.config.dispatcher.maxConcurrency) : DOORBELL_MAX_CONCURRENCY,
    warm: warmCount,
    retire: (child) => {
      retired.add(child);
      void stopChild(child);
    },
    ...(options.idleContainerMs !== undefined ? { idleMs: options.idleContainerMs } : {}),
  });
  const replace = options.replaceDeadDispatchers ?? true;
  let stopping = false;
  let deaths = 0;
  const restarts = new RestartBackoff();
  const pendingRestarts = new Set<NodeJS.Timeout>();
  const alive = () => dispatchers.filter((c) => c.exitCode === null && c.signalCode === null).length;

  const startDispatcher = (more: DispatcherProcessOptions = {}): number => {
    const index = dispatchers.length;
    const startedAt = Date.now();
    const piped = options.onOutput !== undefined;
    const fn = more.fn ?? DISPATCHER_FUNCTION;
    const child = fork(build.artifact.runnerFile as string, [], {
      env: {
        ...process.env,
        ...dispatcherEnv(build.bundle),
        ...(onDemand
          ? {
              TASKWORKER_LOCAL_INVOKE: 'on-demand',
              AWS_LAMBDA_FUNCTION_NAME: `${build.bundle.config.app}-${version}-${fn}`,
            }
          : {}),
        ...more.env,
      },
      // The handler's own stack traces point at the library's and the tasks' sources, as in Lambda.
      execArgv: ['--enable-source-maps'],
      stdio: ['ignore', piped ? 'pipe' : 'inherit', piped ? 'pipe' : 'inherit', 'ipc'],
    });
    if (options.onOutput) {
      const onOutput = options.onOutput;
      for (const stream of [child.stdout, child.stderr]) {
        if (stream) createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => onOutput(line, index));
      }
    }
    const holding = new Map<string, HeldJob>();
    readiness.set(
      child,
      new Promise<void>((resolve) => {
        child.on('message', (message: RunnerMessage) => message.type === 'ready' && resolve());
        child.once('exit', () => resolve());
      }),
    );
    child.on('message', (message: RunnerMessage) => {
      switch (message.type) {
        case 'ready':
          return;
        case 'started':
          for (const job of message.start.jobs) holding.set(job.messageId, { queue: message.start.queue, ...job });
          return;
        case 'batch':
          for (const job of message.report.jobs) holding.delete(job.messageId);
          options.onBatch?.(message.report, index);
          return;
        case 'invocation':
          options.onInvocation?.(message.summary, index);
          return;
        case 'error':
          options.onDispatcherError?.(message.message, index);
          return;
        case 'invoked':
          containers.finished(child, {
            ...(message.result !== undefined ? { result: message.result } : {}),
            ...(message.error !== undefined ? { error: message.error } : {}),
          });
          return;
        case 'doorbells':
          wakeUp?.setDoorbells(message.on, message.off ?? []);
          return;
        case 'launch':
          for (let i = 0; i < message.count; i++)
            void containers.invoke(DISPATCHER_FUNCTION, message.event, build.bundle.config.dispatcher.timeoutSeconds);
      }
    });
    if (onDemand) containers.add(child, fn);
    child.once('exit', (code, signal) => {
      containers.exited(child);
      if (retired.has(child) && !stopping) options.onDispatcherRetired?.(index);
      if (stopping || retired.has(child)) return;
      deaths += 1;
      const held = [...holding.values()];
      if (!replace) {
        options.onDispatcherExit?.({ dispatcher: index, code, signal, held });
        return;
      }
      const afterMs = restarts.next(Date.now() - startedAt);
      // Replacements already waiting take the numbers before this one: they start first (unless a
      // dispatcher that lived a minute reset the backoff meanwhile; then only the message is off).
      const replacement = { dispatcher: dispatchers.length + pendingRestarts.size, afterMs };
      options.onDispatcherExit?.({ dispatcher: index, code, signal, held, replacement });
      const timer = setTimeout(() => {
        pendingRestarts.delete(timer);
        startDispatcher({ ...more, fn });
      }, afterMs);
      pendingRestarts.add(timer);
    });
    dispatchers.push(child);
    options.onDispatcherStart?.(index);
    return index;
  };
  /** Starts the functions' containers and, when on demand, what invokes them. */
  const startAll = (dispatcherCount: number) => {
    for (let i = 0; i < dispatcherCount; i++) startDispatcher();
    if (options.schedules !== false) {
      schedules = startLocalSchedules({
        config: build.bundle.config,
        registry: build.bundle.registry,
        urls: current.urls,
        sqs,
        clock: systemClock,
        ...(options.onScheduleTick ? { onFire: options.onScheduleTick } : {}),
        onError: (message) => options.onDispatcherError?.(message, -1),
      });
    }
    if (!onDemand) return;
    for (const queue of doorbellQueues(build.bundle.config)) startDispatcher({ fn: doorbellFunction(queue.name) });
    wakeUp = startLocalWakeUp({
      config: build.bundle.config,
      urls: current.urls,
      sqs,
      region,
      functions: containers,
      ...(options.schedulePeriodMs !== undefined ? { schedulePeriodMs: options.schedulePeriodMs } : {}),
      onError: (message) => options.onDispatcherError?.(message, -1),
      paused: async () => pausedQueues(await controlsCache.get()),
    });
  };
  let wakeUp: LocalWakeUp | undefined;
  let schedules: LocalSchedules | undefined;
  startAll(options.dispatchers ?? 1);

  const stopAll = async () => {
    stopping = true;
    containers.stopping();
    for (const timer of pendingRestarts) clearTimeout(timer);
    pendingRestarts.clear();
    await Promise.all([wakeUp?.stop(), schedules?.stop()]);
    wakeUp = undefined;
    schedules = undefined;
    await Promise.all(dispatchers.map((child) => stopChild(child)));
    containers.clear();
  };
  const stopDispatchers = async () => {
    await stopAll();
    stopping = false;
  };
  let stopped: Promise<void> | undefined;
  const unchanged: ProvisionChanges = { queues: [], topics: [], subscribed: [], unsubscribed: [] };
  const reload = async (): Promise<Reloaded> => {
    const next = await buildInto(options);
    if (stopped) {
      // The stack stopped while this build ran: nothing to restart, nothing to keep.
      await rm(next.dir, { recursive: true, force: true });
      return { bundle: build.bundle, provisioned: unchanged };
    }
    const was = build.bundle.config;
    const now = next.bundle.config;
    let provisioned: ProvisionedVersion;
    try {
      // Every queue, table, topic and bucket is named after the app: another one is another stack.
      if (now.app !== was.app) throw new RestartRequiredError('app', was.app, now.app);
      // Before the dispatchers stop: the running ones go on meanwhile, on queues that stay.
      provisioned = await provision(next.bundle);
    } catch (error) {
      await rm(next.dir, { recursive: true, force: true });
      throw error;
    }
    const changes = provisionChanges(current, provisioned);
    const running = onDemand ? (options.dispatchers ?? 1) : Math.max(1, alive());
    await stopDispatchers();
    const old = build;
    build = next;
    current = provisioned;
    publisher = publisherFor(next.bundle);
    await rm(old.dir, { recursive: true, force: true });
    startAll(running);
    return { bundle: next.bundle, provisioned: changes };
  };
  const stop = () => {
    stopped ??= (async () => {
      await stopAll();
      // fauxqs keeps its queues and buckets in memory only: written out while it still runs.
      const saved = state
        ? await saveSnapshot(state.snapshotDir, emulators.sqsEndpoint, s3).then(
            () => undefined,
            (error: unknown) => error,
          )
        : undefined;
      for (const client of [sqs, dynamo, sns, s3]) client.destroy();
      await emulators.stop();
      await rm(build.dir, { recursive: true, force: true });
      if (saved !== undefined) {
        // Left claimed: the next start finds the tables without their messages and starts empty, saying why.
        throw new TaskworkerError(`taskworker dev could not keep its queues and objects in ${state?.dir}: ${describe(saved)}`, {
          cause: saved,
        });
      }
      state?.release();
    })();
    return stopped;
  };
  return {
    get bundle() {
      return build.bundle;
    },
    version,
    region,
    endpoints: { sqs: emulators.sqsEndpoint, dynamodb: emulators.dynamodbEndpoint },
    ...(stateAtStart ? { state: stateAtStart } : {}),
    get urls() {
      return current.urls;
    },
    sqs,
    dynamo,
    tables,
    get jobs() {
      return current.jobs;
    },
    get stats() {
      return current.stats;
    },
    get publisher() {
      return publisher;
    },
    env,
    dispatchers,
    alive,
    deaths: () => deaths,
    startDispatcher,
    invocationsByFunction: () => containers.invocationCounts(),
    containersByFunction: () => containers.containerCounts(),
    invocationDurations: () => containers.durations(),
    stopDispatchers,
    reload,
    stop,
  };
}

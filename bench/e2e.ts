/**
 * End-to-end benchmark on the emulators (fauxqs, dynalite, in this process): no-op tasks through
 * the real dispatcher (DispatcherRuntime: worker threads, SQS and DynamoDB adapters) per tracking
 * mode, against its peers run as their maintainers run them, on the same queue and tasks: a raw
 * receive/delete loop and bbc's sqs-consumer, each with as many loops/instances as the dispatcher
 * holds batches (`--instances`), and, for `full`, Lambda's SQS trigger with Powertools idempotency
 * polling as an event-source mapping does (five concurrent invocations, then up to 300 more a
 * minute); I/O-bound tasks at batch concurrency 1, 4 and 10; cost per million tasks and idle cost
 * per hour.
 *
 *   npm run bench:e2e -- [--json] [--tasks 10000] [--io-tasks 300] [--rounds 5] [--peer-rounds 5]
 *                        [--instances 2] [--trigger-pollers 5] [--trigger-added-per-minute 300]
 *                        [--sections full,trigger,failures,off,handle-message,io] [--profile DIR]
 *
 * `--sections` runs a part (a short check, or one consumer under `node --cpu-prof`): the JSON and
 * the tables need every section, so a partial run prints its rows only.
 *
 * Every SQS and DynamoDB request the consumer makes is counted by SDK middleware, per HTTP attempt
 * (as AWS bills them); DynamoDB units are summed from the ConsumedCapacity dynalite returns.
 * The emulators run in a child process (this same file), as the services are remote to a real
 * consumer: their work does not take the consumer's CPU. Throughput is wall-clock on this machine:
 * compare the rows with each other, not with AWS. Requests and units per task do not depend on it.
 */

import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { Consumer } from 'sqs-consumer';
import { withSdkLogger } from '../lib/aws/sdk-logger';
import type { IsolationMode, TrackingMode } from '../lib/config/app-config';
import { AHEAD_PER_SLOT } from '../lib/dispatch/slots';
import { startEmulators } from '../lib/local/emulators';
import { provisionVersion } from '../lib/local/version';
import { costUsd, gbSeconds } from '../lib/policy/cost-attribution';
import { taskStatsKey, utcDay } from '../lib/policy/stat-sums';
import { silentLogger } from '../lib/ports';
import { ThreadPoolExecutor } from '../lib/run/thread-pool-executor';
import { buildTasksBundle } from '../lib/tasks/build';
import { loadTaskBundle } from '../lib/tasks/bundle';
import type { TaskCost } from '../lib/track/stats-store';
import { decodeEnvelope } from '../lib/wire/envelope';
import {
  awsModel,
  type CriticalPath,
  criticalPath,
  type InFlight,
  MODEL_DYNAMO_WRITE_MS,
  MODEL_FORMULA,
  MODEL_SQS_MS,
  messagesInFlight,
} from './critical-path';
import { askCapacity, type Meter, meter, newMeter, type Span, timeline, total } from './meter';
import {
  createIdempotencyTable,
  runPowertoolsTrigger,
  TRIGGER_BATCH_SIZE,
  TRIGGER_SCALING,
  type TriggerScaling,
} from './peers/powertools-trigger';
import { PRICES, round, TRIGGER_IDLE_POLLERS_PER_QUEUE, triggerIdleRequestsPerHour } from './prices';
import { printResults } from './results';
import { runSimulation } from './sim/run';
import { SCALING_WORKLOADS } from './sim/workloads';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    tasks: { type: 'string', default: '10000' },
    'io-tasks': { type: 'string', default: '300' },
    rounds: { type: 'string', default: '5' },
    'peer-rounds': { type: 'string', default: '5' },
    instances: { type: 'string', default: '2' },
    'trigger-pollers': { type: 'string', default: String(TRIGGER_SCALING.initial) },
    'trigger-added-per-minute': { type: 'string', default: String(TRIGGER_SCALING.addedPerMinute) },
    sections: { type: 'string', default: 'full,trigger,failures,off,handle-message,io' },
    profile: { type: 'string' },
  },
});
const TASKS = Number(values.tasks);
const IO_TASKS = Number(values['io-tasks']);
/** Rounds of `full` against the Powertools trigger, alternating; medians reported. */
const PEER_ROUNDS = Number(values['peer-rounds']);
/** Rounds of tracking `off` against the raw loop and sqs-consumer, alternating; medians reported. */
const ROUNDS = Number(values.rounds);
/**
 * The raw loop's concurrent loops and sqs-consumer's instances (each one batch of 10 at a time):
 * the batches the dispatcher holds at once with its 10 slots (it receives the next batch while one
 * settles: the messages it holds are measured in every run, `concurrency.messagesInFlight`).
 * sqs-consumer's maintainers answer concurrency requests with "run several instances"
 * (bbc/sqs-consumer#229).
 */
const INSTANCES = Number(values.instances);
/** The trigger's mapping: five concurrent invocations, then up to 300 more a minute while messages are available. */
const SCALING: TriggerScaling = {
  ...TRIGGER_SCALING,
  initial: Number(values['trigger-pollers']),
  addedPerMinute: Number(values['trigger-added-per-minute']),
};
const SECTIONS = new Set(values.sections.split(','));
const ALL_SECTIONS = ['full', 'trigger', 'failures', 'off', 'handle-message', 'io'] as const;
for (const section of SECTIONS) {
  if (!(ALL_SECTIONS as readonly string[]).includes(section))
    throw new Error(`--sections: no section '${section}' (${ALL_SECTIONS.join(', ')})`);
}
const POWERTOOLS_VERSION = '2.35.0';
const IO_TASK_MS = 50;
const progress = (line: string) => process.stderr.write(`${line}\n`);

/**
 * `--profile DIR`: the main thread's CPU profile of each taskworker run's measured part only (from
 * its clock's start to its last task), written as `<consumer>-<n>.cpuprofile` for
 * `npm run bench:cpu-profile -- DIR`. Publishing and the threads' load stay out of it, which
 * `node --cpu-prof` (the whole process, and refused in NODE_OPTIONS on Node 20) cannot do.
 */
async function profiled<T>(name: string, measure: () => Promise<T>): Promise<T> {
  const dir = values.profile;
  if (!dir) return measure();
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name.replace(/[^a-z0-9]+/gi, '-')}-${Date.now()}`);
  const stop = await startProfile();
  await askEmulators({ profile: 'start' });
  try {
    return await measure();
  } finally {
    await stop(`${file}.cpuprofile`);
    await askEmulators({ profile: 'stop', file: `${file}-emulators.cpuprofile` });
  }
}

/** Starts this thread's CPU profiler; the function returned stops it and writes the profile to a file. */
async function startProfile(): Promise<(file: string) => Promise<void>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async (file) => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    writeFileSync(file, JSON.stringify(profile));
  };
}

/** The emulators' process, once started (profiles are asked of it too). */
let emulatorProcess: ChildProcess | undefined;

/** Sends the emulators' process a request and waits for its answer (`{ answer }`). */
function askEmulators<T>(request: object): Promise<T> {
  const child = emulatorProcess;
  if (!child) throw new Error('the emulators have not started');
  return new Promise<T>((resolve) => {
    const onMessage = (m: unknown) => {
      if (typeof m !== 'object' || m === null || !('answer' in m)) return;
      child.off('message', onMessage);
      resolve((m as { answer: T }).answer);
    };
    child.on('message', onMessage);
    child.send(request);
  });
}
/** The example app's dispatcher memory. */
const DISPATCHER_GB = 1;

const TASK_MODULES = {
  'noop.ts': "export default { name: 'noop', queue: 'work', timeLimitSeconds: 5, run() {} };",
  'io.ts':
    "export default { name: 'io', queue: 'work', timeLimitSeconds: 5, run(p) { return new Promise((resolve) => setTimeout(resolve, p.ms)); } };",
};

/** Requests by operation, and DynamoDB units, seen by one SDK client. */

interface Endpoints {
  readonly sqsEndpoint: string;
  readonly dynamodbEndpoint: string;
}

/** The emulators in a child process (this file, forked with BENCH_EMULATORS=1). */
async function startEmulatorProcess(): Promise<{ endpoints: Endpoints; child: ChildProcess }> {
  const child = fork(__filename, [], { env: { ...process.env, BENCH_EMULATORS: '1' }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  const endpoints = await new Promise<Endpoints>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Endpoints));
    child.once('exit', (code) => reject(new Error(`emulator process exited with ${code}`)));
  });
  return { endpoints, child };
}

async function serveEmulators(): Promise<void> {
  const emulators = await startEmulators();
  process.send?.({ sqsEndpoint: emulators.sqsEndpoint, dynamodbEndpoint: emulators.dynamodbEndpoint });
  // The emulators' own CPU, so their slowness can be told from the consumer's.
  let stopProfile: ((file: string) => Promise<void>) | undefined;
  process.on('message', (m) => {
    if (m === 'cpu') process.send?.({ cpu: process.cpuUsage() });
    const asked = m as { profile?: 'start' | 'stop'; file?: string };
    if (asked.profile === 'start') {
      void startProfile().then((stop) => {
        stopProfile = stop;
        process.send?.({ answer: true });
      });
    } else if (asked.profile === 'stop' && stopProfile && asked.file) {
      void stopProfile(asked.file).then(() => process.send?.({ answer: true }));
      stopProfile = undefined;
    }
  });
  process.once('disconnect', () => {
    void emulators.stop().then(() => process.exit(0));
  });
}

interface Env {
  readonly emulators: Endpoints;
  /** CPU ms the emulator process has used so far. */
  readonly emulatorCpuMs: () => Promise<number>;
  readonly workDir: string;
  readonly publisherSqs: SQSClient;
  readonly admin: DynamoDBClient;
  run: number;
}

const credentials = { accessKeyId: 'bench', secretAccessKey: 'bench' };
// Every consumer's clients alike: the logger taskworker's own clients get (no redacted copy of each
// request built for a discarded info log, lib/aws/sdk-logger.ts), for the peers as well.
const sqsClient = (env: Env, m?: Meter) => {
  const client = new SQSClient(
    withSdkLogger({ region: 'us-east-1', endpoint: env.emulators.sqsEndpoint, credentials, useQueueUrlAsEndpoint: false }),
  );
  return m ? meter(client, m) : client;
};
const dynamoClient = (env: Env, m?: Meter) => {
  const client = new DynamoDBClient(withSdkLogger({ region: 'us-east-1', endpoint: env.emulators.dynamodbEndpoint, credentials }));
  return m ? meter(client, m) : client;
};

/** A fresh version (queues, tables) with a one-queue config, its bundle, and `count` tasks published (not counted). */
async function prepare(
  env: Env,
  options: { mode: TrackingMode; concurrency: number; task: 'noop' | 'io'; count: number; isolation?: IsolationMode },
) {
  env.run += 1;
  const configFile = join(env.workDir, `config-${env.run}.json`);
  writeFileSync(
    configFile,
    JSON.stringify({
      app: 'bench',
      tasksDir: 'tasks',
      queues: [
        // Without the succeeded list (`listSucceeded`, on by default on a full queue): the trigger with
        // Powertools keeps no such list, so like for like; bench:tracking measures what it adds (an index write per job).
        {
          name: 'work',
          priority: 1,
          visibilityTimeoutSeconds: 30,
          longPollSeconds: 1,
          iterations: 10,
          tracking: options.mode,
          listSucceeded: false,
        },
      ],
      dispatcher: { concurrency: options.concurrency, isolation: options.isolation ?? 'threads' },
    }),
  );
  const { tasksFile } = await buildTasksBundle({ configFile, outFile: join(env.workDir, `tasks-${env.run}.cjs`) });
  const bundle = loadTaskBundle(tasksFile);
  const version = `r${env.run}`;
  const provisioned = await provisionVersion({ bundle, version, sqs: env.publisherSqs, dynamo: env.admin, recordQueued: false });
  const { publisher } = provisioned;
  const payload = options.task === 'io' ? { ms: IO_TASK_MS } : {};
  for (let i = 0; i < options.count; i += 500) {
    await publisher.publishBatch(Array.from({ length: Math.min(500, options.count - i) }, () => ({ task: options.task, payload })));
  }
  return provisioned;
}

interface Figures {
  readonly consumer: string;
  /** Throughput of each round, when the figure is the median of several. */
  readonly rounds?: readonly number[];
  readonly tasks: number;
  readonly seconds: number;
  readonly tasksPerSecond: number;
  readonly sqsRequests: Record<string, number>;
  readonly sqsRequestsPerTask: number;
  readonly dynamoRequests?: Record<string, number>;
  readonly dynamoWriteUnitsPerTask?: number;
  readonly dynamoReadUnitsPerTask?: number;
  /**
   * CPU ms per task: this process (the consumer, its worker threads included), its main thread
   * (event-loop active time: what one thread can do at most), and the emulators' process.
   */
  readonly cpuMsPerTask?: { readonly consumer: number; readonly consumerMainThread: number; readonly emulators: number };
  /**
   * The concurrency it ran at: its loops, instances or pollers (the trigger's at the start and the
   * most it reached), and the messages it held at once (received, not yet deleted).
   */
  readonly concurrency?: {
    readonly loops?: number;
    readonly pollers?: { readonly initial: number; readonly peak: number };
    readonly messagesInFlight: InFlight;
  };
  /**
   * Seconds its worker threads took to load before the clock started (a cold container's first
   * invocation pays them; a warm one has them loaded): not in `seconds`.
   */
  readonly threadsLoadSeconds?: number;
  /** Where the time goes (traced runs). */
  readonly criticalPath?: CriticalPath;
  /** The task's attributed cost against the metered whole (runs that keep stats). */
  readonly costAttribution?: CostAttribution;
}

/**
 * The task's attributed usage (summed by the stats from each settled batch's share) against the
 * whole the SDK middleware counted for the run: the parts should add up to the whole (ratio ≈ 1).
 * What the invocation does after its last batch (its last stats flush, the release) is counted by
 * the meters and attributed to no batch, so the ratio sits a little under 1.
 */
interface CostAttribution {
  readonly attributedSqs: number;
  readonly meteredSqs: number;
  readonly attributedWcu: number;
  readonly meteredWcu: number;
  /** attributed ÷ metered, SQS requests and write units together. */
  readonly ratio: number;
  readonly sqsRatio: number;
  readonly wcuRatio: number;
  readonly attributedGbSeconds: number;
  /** The attributed figure per million tasks at list prices (Lambda at this run's measured rate). */
  readonly usdPerMillionTasks: number;
}

function costAttribution(attributed: TaskCost, meteredSqs: number, meteredWcu: number, count: number): CostAttribution {
  return {
    attributedSqs: round(attributed.sqsRequests, 2),
    meteredSqs,
    attributedWcu: round(attributed.writeUnits, 2),
    meteredWcu: round(meteredWcu, 2),
    ratio: round((attributed.sqsRequests + attributed.writeUnits) / Math.max(1, meteredSqs + meteredWcu), 4),
    sqsRatio: round(attributed.sqsRequests / Math.max(1, meteredSqs), 4),
    wcuRatio: round(attributed.writeUnits / Math.max(1, meteredWcu), 4),
    attributedGbSeconds: round(gbSeconds(attributed), 3),
    usdPerMillionTasks: round((costUsd(attributed) / count) * 1e6, 4),
  };
}

/** CPU ms of this process so far (all its threads). */
const ownCpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

/** Spans and CPU of a traced run. */
interface Trace {
  readonly sqs: Span[];
  readonly dynamo: Span[];
  ownCpuMs: number;
  emulatorCpuMs: number;
  loop: EventLoopUtilization;
}

/** The clients' spans from now (an SQS client's, when there is one); call {@link startClock} when the measured run begins. */
function traceClients(sqs: SQSClient | undefined, dynamo: DynamoDBClient): Trace {
  const trace: Trace = { sqs: [], dynamo: [], ownCpuMs: 0, emulatorCpuMs: 0, loop: performance.eventLoopUtilization() };
  if (sqs) timeline(sqs, trace.sqs);
  timeline(dynamo, trace.dynamo);
  return trace;
}

async function startClock(env: Env, trace: Trace): Promise<void> {
  trace.emulatorCpuMs = await env.emulatorCpuMs();
  trace.ownCpuMs = ownCpuMs();
  trace.loop = performance.eventLoopUtilization();
}

async function endTrace(
  env: Env,
  trace: Trace,
  count: number,
  seconds: number,
  keyOf: (jobId: string) => string,
  loops?: ReadonlyArray<readonly Span[]>,
) {
  return {
    cpuMsPerTask: {
      consumer: round((ownCpuMs() - trace.ownCpuMs) / count, 4),
      consumerMainThread: round(performance.eventLoopUtilization(trace.loop).active / count, 4),
      emulators: round(((await env.emulatorCpuMs()) - trace.emulatorCpuMs) / count, 4),
    },
    criticalPath: criticalPath({ sqs: trace.sqs, ...(loops ? { loops } : {}), dynamo: trace.dynamo, keyOf, seconds }),
  };
}

/**
 * What runs: the product as configured by default (tasks in worker threads, stats kept), the
 * product with `dispatcher.isolation: 'inline'`, or, for the breakdown of where time goes, the
 * default without the per-batch stats write.
 */
type Variant = 'product' | 'inline' | 'no-stats';

/**
 * Starts the pool's `size` threads and waits until each has loaded the tasks bundle: every one
 * reserved at once (a reservation is a loaded, free thread), then given back unused.
 */
async function loadEveryThread(pool: ThreadPoolExecutor, size: number): Promise<void> {
  pool.warm();
  const held = await Promise.all(Array.from({ length: size }, () => pool.reserve(Date.now() + 60_000)));
  for (const thread of held) thread?.release();
  if (held.some((thread) => thread === undefined))
    throw new Error(`${held.filter(Boolean).length} of ${size} threads loaded the tasks bundle`);
}

/** The slots of the dispatcher `full` is compared with the trigger at (the product's default). */
const DISPATCHER_CONCURRENCY = 10;

/** The real dispatcher, until every task has succeeded. */
async function taskworker(
  env: Env,
  mode: TrackingMode,
  task: 'noop' | 'io',
  count: number,
  concurrency = 10,
  variant: Variant = 'product',
  traced = false,
): Promise<Figures> {
  const isolation = variant === 'inline' ? 'inline' : 'threads';
  const provisioned = await prepare(env, { mode, concurrency, task, count, isolation });
  const sqsMeter = newMeter();
  const dynamoMeter = newMeter();
  const sqs = sqsClient(env, sqsMeter);
  const dynamo = dynamoClient(env, dynamoMeter);
  const trace = traced ? traceClients(sqs, dynamo) : undefined;
  // Untraced, only what the messages held needs: no job ids read from the bodies.
  const sqsSpans = trace ? trace.sqs : [];
  if (!trace) timeline(sqs, sqsSpans, { jobIds: false });
  let succeeded = 0;
  // The pool the runtime would build itself, held here to wait for its threads: each costs a Node
  // bootstrap (about a second of CPU here), which a warm container has paid before its invocation.
  const { config } = provisioned.bundle;
  const pool =
    isolation === 'threads'
      ? new ThreadPoolExecutor({
          bundlePath: provisioned.bundle.path,
          size: config.dispatcher.concurrency,
          killGraceMs: config.dispatcher.killGraceMs,
          logger: silentLogger,
        })
      : undefined;
  const runtime = provisioned.dispatcher({
    sqs,
    dynamo,
    tracked: variant !== 'no-stats',
    logger: silentLogger,
    workerId: `bench-${mode}`,
    observer: { onBatch: (r) => (succeeded += r.jobs.filter((j) => j.outcome === 'succeeded').length) },
    ...(pool ? { executor: pool } : {}),
  });
  const loading = performance.now();
  if (pool) await loadEveryThread(pool, config.dispatcher.concurrency);
  const threadsLoadSeconds = (performance.now() - loading) / 1000;
  if (trace) await startClock(env, trace);
  const stop = new AbortController();
  const started = performance.now();
  const running = runtime.invoke(Date.now() + 600_000, stop.signal);
  await profiled(`taskworker-${mode}-${variant}`, async () => {
    while (succeeded < count) await new Promise((resolve) => setTimeout(resolve, 5));
  });
  const seconds = (performance.now() - started) / 1000;
  // The job record is written under the job id.
  const traced_ = trace ? await endTrace(env, trace, count, seconds, (id) => id) : {};
  stop.abort();
  await running;
  await runtime.close();
  // What the stats attributed to the task (lib/policy/cost-attribution.ts) against what the meters counted.
  const attributed = variant === 'no-stats' ? undefined : (await provisioned.stats.get(taskStatsKey(task), utcDay(Date.now())))?.cost;
  sqs.destroy();
  dynamo.destroy();
  return {
    ...(attributed ? { costAttribution: costAttribution(attributed, total(sqsMeter), dynamoMeter.writeUnits, count) } : {}),
    consumer: `taskworker (tracking ${mode}${task === 'io' ? `, concurrency ${concurrency}` : ''}${VARIANT_LABEL[variant]})`,
    tasks: count,
    seconds: round(seconds),
    tasksPerSecond: round(count / seconds, 1),
    sqsRequests: sqsMeter.requests,
    sqsRequestsPerTask: round(total(sqsMeter) / count, 4),
    dynamoRequests: dynamoMeter.requests,
    dynamoWriteUnitsPerTask: round(dynamoMeter.writeUnits / count, 4),
    dynamoReadUnitsPerTask: round(dynamoMeter.readUnits / count, 4),
    concurrency: { loops: 1, messagesInFlight: messagesInFlight(sqsSpans, seconds) },
    ...(pool ? { threadsLoadSeconds: round(threadsLoadSeconds) } : {}),
    ...traced_,
  };
}

/**
 * The peer that pays the same price (bench/peers/powertools-trigger.ts): the same no-op task and
 * count on a fresh queue, the idempotency table on the same dynalite, its DynamoDB client metered
 * by the same middleware (and asked for the units of every request, which Powertools does not ask).
 * Each poller has an SQS client of its own (on the same meter), so each loop's spans are its own.
 */
async function powertoolsPeer(env: Env, count: number, scaling: TriggerScaling): Promise<Figures> {
  const { bundle, urls } = await prepare(env, { mode: 'off', concurrency: 10, task: 'noop', count });
  const tableName = `bench-idempotency-${env.run}`;
  await createIdempotencyTable(env.admin, tableName);
  const sqsMeter = newMeter();
  const dynamoMeter = newMeter();
  const dynamo = askCapacity(dynamoClient(env, dynamoMeter));
  const trace = traceClients(undefined, dynamo);
  const pollerClients: SQSClient[] = [];
  const loops: Span[][] = [];
  const pollerSqs = (poller: number) => {
    let client = pollerClients[poller];
    if (!client) {
      const spans: Span[] = [];
      client = timeline(sqsClient(env, sqsMeter), spans);
      pollerClients[poller] = client;
      loops[poller] = spans;
    }
    return client;
  };
  await startClock(env, trace);
  const noop = bundle.registry.get('noop');
  const keyPrefix = 'bench-powertools-trigger';
  const run = await profiled('powertools-trigger', () =>
    runPowertoolsTrigger({
      sqs: pollerSqs,
      dynamo,
      queueUrl: urls.queues.work as string,
      tableName,
      count,
      scaling,
      keyPrefix,
      run: async (job) => {
        await noop?.run(job.payload, undefined as never);
      },
    }),
  );
  trace.sqs.push(...loops.flat());
  // Powertools' key: the prefix and the MD5 of the JSON of what eventKeyJmesPath selects (the id).
  const keyOf = (id: string) => `${keyPrefix}#${createHash('md5').update(JSON.stringify(id)).digest('base64')}`;
  const traced = await endTrace(env, trace, count, run.seconds, keyOf, loops);
  for (const client of pollerClients) client.destroy();
  dynamo.destroy();
  return {
    consumer: `Lambda SQS trigger + Powertools idempotency ${POWERTOOLS_VERSION} (${triggerLabel(scaling)})`,
    tasks: count,
    seconds: round(run.seconds),
    tasksPerSecond: round(count / run.seconds, 1),
    sqsRequests: sqsMeter.requests,
    sqsRequestsPerTask: round(total(sqsMeter) / count, 4),
    dynamoRequests: dynamoMeter.requests,
    dynamoWriteUnitsPerTask: round(dynamoMeter.writeUnits / count, 4),
    dynamoReadUnitsPerTask: round(dynamoMeter.readUnits / count, 4),
    concurrency: { pollers: run.pollers, messagesInFlight: messagesInFlight(trace.sqs, run.seconds) },
    ...traced,
  };
}

/** How the trigger's pollers were set up, for its row's name. */
function triggerLabel(scaling: TriggerScaling): string {
  const start = `${scaling.initial} poller${scaling.initial === 1 ? '' : 's'}`;
  return scaling.addedPerMinute > 0 ? `${start}, +${scaling.addedPerMinute}/min` : start;
}

const VARIANT_LABEL: Record<Variant, string> = {
  product: '',
  inline: ', isolation inline',
  'no-stats': ', no stats write',
};

/** The median run of several (by throughput). */
function median(runs: Figures[]): Figures {
  return [...runs].sort((a, b) => a.tasksPerSecond - b.tasksPerSecond)[Math.floor(runs.length / 2)] as Figures;
}

/** `n` of something, its noun in the plural when n is not 1. */
const counted = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** The floor: `loops` loops side by side, each receiving 10 (long poll), decoding, running the no-ops, deleting the batch. */
async function rawLoop(env: Env, count: number, loops: number): Promise<Figures> {
  const { bundle, urls } = await prepare(env, { mode: 'off', concurrency: 10, task: 'noop', count });
  const m = newMeter();
  const spans: Span[] = [];
  const sqs = timeline(sqsClient(env, m), spans, { jobIds: false });
  const noop = bundle.registry.get('noop');
  const url = urls.queues.work as string;
  let done = 0;
  // Timed to the last delete, as the others are: a loop still in its long poll of the emptied
  // queue (up to WaitTimeSeconds) is not the loop's work.
  let finished = 0;
  const loop = async () => {
    while (done < count) {
      const out = await sqs.send(
        new ReceiveMessageCommand({
          QueueUrl: url,
          MaxNumberOfMessages: 10,
          WaitTimeSeconds: 1,
          MessageSystemAttributeNames: ['SentTimestamp'],
        }),
      );
      const messages = out.Messages ?? [];
      if (messages.length === 0) continue;
      for (const message of messages) {
        const job = decodeEnvelope(message.Body ?? '', { messageId: message.MessageId ?? '', sentTimestamp: Date.now() });
        await noop?.run(job.payload, undefined as never);
      }
      await sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: url,
          Entries: messages.map((msg, i) => ({ Id: String(i), ReceiptHandle: msg.ReceiptHandle })),
        }),
      );
      done += messages.length;
      if (done >= count && finished === 0) finished = performance.now();
    }
  };
  const started = performance.now();
  await profiled('raw-loop', () => Promise.all(Array.from({ length: loops }, loop)));
  const seconds = (finished - started) / 1000;
  sqs.destroy();
  return {
    ...rawFigures(`raw receive/delete loop (${counted(loops, 'loop')})`, count, seconds, m),
    concurrency: { loops, messagesInFlight: messagesInFlight(spans, seconds) },
  };
}

/**
 * bbc/sqs-consumer on the same queue and tasks, `instances` consumers side by side (as its
 * maintainers answer concurrency requests: bbc/sqs-consumer#229): handleMessageBatch (one
 * DeleteMessageBatch per batch) or handleMessage (one DeleteMessage each).
 */
async function sqsConsumer(env: Env, count: number, batch: boolean, instances: number): Promise<Figures> {
  const { bundle, urls } = await prepare(env, { mode: 'off', concurrency: 10, task: 'noop', count });
  const m = newMeter();
  const spans: Span[] = [];
  const sqs = timeline(sqsClient(env, m), spans, { jobIds: false });
  const noop = bundle.registry.get('noop');
  let done = 0;
  const run = async (body: string | undefined, id: string | undefined) => {
    const job = decodeEnvelope(body ?? '', { messageId: id ?? '', sentTimestamp: Date.now() });
    await noop?.run(job.payload, undefined as never);
  };
  const consumers = Array.from({ length: instances }, () => {
    const consumer = Consumer.create({
      queueUrl: urls.queues.work as string,
      sqs,
      useQueueUrlAsEndpoint: false,
      batchSize: 10,
      waitTimeSeconds: 1,
      ...(batch
        ? {
            handleMessageBatch: async (messages) => {
              for (const message of messages) await run(message.Body, message.MessageId);
              return messages;
            },
          }
        : {
            handleMessage: async (message) => {
              await run(message.Body, message.MessageId);
              return message;
            },
          }),
    });
    // Counted once deleted (sqs-consumer emits message_processed after the delete), as the others are.
    consumer.on('message_processed', () => {
      done += 1;
    });
    // Stopping aborts its in-flight poll; that is not a failure of the run.
    consumer.on('error', () => {});
    return consumer;
  });
  const started = performance.now();
  for (const consumer of consumers) consumer.start();
  await profiled(`sqs-consumer-${batch ? 'batch' : 'message'}`, async () => {
    while (done < count) await new Promise((resolve) => setTimeout(resolve, 5));
  });
  const seconds = (performance.now() - started) / 1000;
  for (const consumer of consumers) consumer.stop({ abort: true });
  await new Promise((resolve) => setTimeout(resolve, 100));
  sqs.destroy();
  return {
    ...rawFigures(
      `sqs-consumer 14.2.8 (${batch ? 'handleMessageBatch' : 'handleMessage'}, ${counted(instances, 'instance')})`,
      count,
      seconds,
      m,
    ),
    concurrency: { loops: instances, messagesInFlight: messagesInFlight(spans, seconds) },
  };
}

function rawFigures(consumer: string, count: number, seconds: number, m: Meter): Figures {
  return {
    consumer,
    tasks: count,
    seconds: round(seconds),
    tasksPerSecond: round(count / seconds, 1),
    sqsRequests: m.requests,
    sqsRequestsPerTask: round(total(m) / count, 4),
  };
}

/** Cost per million tasks from counted requests and units at published prices. */
function costPerMillion(f: Figures, lambdaGbSecondsPerTask: number) {
  const sqs = f.sqsRequestsPerTask * PRICES.sqsPerMillionRequests;
  const dynamo =
    (f.dynamoWriteUnitsPerTask ?? 0) * PRICES.dynamoPerMillionWriteUnits +
    (f.dynamoReadUnitsPerTask ?? 0) * PRICES.dynamoPerMillionReadUnits;
  const lambda = lambdaGbSecondsPerTask * 1e6 * PRICES.lambdaPerGbSecond;
  return { sqs: round(sqs, 4), dynamo: round(dynamo, 4), lambda: round(lambda, 4), total: round(sqs + dynamo + lambda, 4) };
}

/**
 * The design this replaces, modelled: a Lambda SQS trigger (event-source mapping, batches of 10)
 * with Powertools idempotency (a conditional PutItem when a record starts, an UpdateItem when it
 * completes). Nothing here is measured; the assumptions are listed with the figures.
 */
const TRIGGER_MODEL = {
  batchSize: 10,
  /** ESM receive + DeleteMessageBatch per full batch. */
  sqsRequestsPerTask: 0.2,
  /** One write unit to mark a record in progress, one to complete it (items under 1 KB). */
  dynamoWriteUnitsPerTask: 2,
  invocationsPerTask: 0.1,
  memoryGb: 0.5,
  /** Per batch of 10 no-op records: 20 DynamoDB calls, 5–10 ms each, 10 at a time, plus the handler. */
  batchDurationSeconds: 0.05,
  idlePollersPerQueue: TRIGGER_IDLE_POLLERS_PER_QUEUE,
  queues: 3,
};

function triggerCostPerMillion() {
  const t = TRIGGER_MODEL;
  const sqs = t.sqsRequestsPerTask * PRICES.sqsPerMillionRequests;
  const dynamo = t.dynamoWriteUnitsPerTask * PRICES.dynamoPerMillionWriteUnits;
  const lambda =
    t.invocationsPerTask * PRICES.lambdaPerMillionInvocations +
    ((t.batchDurationSeconds * t.memoryGb) / t.batchSize) * 1e6 * PRICES.lambdaPerGbSecond;
  return { sqs: round(sqs, 4), dynamo: round(dynamo, 4), lambda: round(lambda, 4), total: round(sqs + dynamo + lambda, 4) };
}

/** Idle cost per hour: taskworker from the simulated idle hour (Kale's three queues), the trigger from its pollers. */
async function idleCost() {
  const idle = SCALING_WORKLOADS.find((w) => w.name === 'idle-hour');
  if (!idle) throw new Error('no idle-hour workload');
  const rows = [];
  for (const autoscale of [true, false]) {
    const r = await runSimulation({
      workload: idle,
      selector: 'sla-aware',
      seeds: [1],
      fleet: { dispatchers: 5, concurrency: 10, invocationSeconds: 300, schedule: { maxConcurrency: 12, autoscale } },
    });
    const requestsPerHour = r.requestsPerMinute * 60;
    const lambdaGbSeconds = r.dispatcherSeconds * DISPATCHER_GB * (60 / idle.minutes);
    const invocationsPerHour = 60;
    const sqs = (requestsPerHour / 1e6) * PRICES.sqsPerMillionRequests;
    const lambda = lambdaGbSeconds * PRICES.lambdaPerGbSecond + (invocationsPerHour / 1e6) * PRICES.lambdaPerMillionInvocations;
    rows.push({
      design: `taskworker, ${autoscale ? 'idle dispatchers end (default)' : 'every scheduled dispatcher runs to its timeout'}`,
      averageDispatchers: round(r.dispatcherSeconds / (idle.minutes * 60), 2),
      sqsRequestsPerHour: Math.round(requestsPerHour),
      lambdaGbSecondsPerHour: Math.round(lambdaGbSeconds),
      usdPerHour: round(sqs + lambda, 4),
    });
  }
  const t = TRIGGER_MODEL;
  const triggerRequests = triggerIdleRequestsPerHour(t.queues);
  rows.push({
    design: `Lambda SQS trigger (modelled: ${t.idlePollersPerQueue} pollers × ${t.queues} queues, 20 s long polls)`,
    averageDispatchers: 0,
    sqsRequestsPerHour: triggerRequests,
    lambdaGbSecondsPerHour: 0,
    usdPerHour: round((triggerRequests / 1e6) * PRICES.sqsPerMillionRequests, 4),
  });
  return rows;
}

async function main() {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const began = performance.now();
  const { endpoints: emulators, child } = await startEmulatorProcess();
  emulatorProcess = child;
  const workDir = mkdtempSync(join(tmpdir(), 'tw-bench-e2e-'));
  mkdirSync(join(workDir, 'tasks'));
  for (const [file, source] of Object.entries(TASK_MODULES)) writeFileSync(join(workDir, 'tasks', file), source);
  const emulatorCpuMs = () =>
    new Promise<number>((resolve) => {
      child.once('message', (m) => {
        const cpu = (m as { cpu: NodeJS.CpuUsage }).cpu;
        resolve((cpu.user + cpu.system) / 1000);
      });
      child.send('cpu');
    });
  const env: Env = { emulators, emulatorCpuMs, workDir, publisherSqs: undefined as never, admin: undefined as never, run: 0 };
  Object.assign(env, { publisherSqs: sqsClient(env), admin: dynamoClient(env) });
  const saturation: Figures[] = [];
  const breakdown: Figures[] = [];
  const concurrency: Figures[] = [];
  const fullRuns: Figures[] = [];
  const peerRuns: Figures[] = [];
  const runs = (part: (typeof ALL_SECTIONS)[number]) => SECTIONS.has(part);
  try {
    // Warm-up, not reported: the emulators' and the SDK's first requests are slow.
    await rawLoop(env, 300, 1);
    await taskworker(env, 'off', 'noop', 300);
    // `full` against the peer that pays the same price: alternating rounds, medians reported.
    for (let round = 0; round < PEER_ROUNDS && (runs('full') || runs('trigger')); round++) {
      if (runs('full')) {
        fullRuns.push(await taskworker(env, 'full', 'noop', TASKS, DISPATCHER_CONCURRENCY, 'product', true));
        progress(`  taskworker full: ${fullRuns.at(-1)?.tasksPerSecond} tasks/s`);
      }
      if (runs('trigger')) {
        peerRuns.push(await powertoolsPeer(env, TASKS, SCALING));
        const peer = peerRuns.at(-1);
        progress(`  ${peer?.consumer}: ${peer?.tasksPerSecond} tasks/s (pollers up to ${peer?.concurrency?.pollers?.peak})`);
      }
    }
    for (const r of [fullRuns, peerRuns]) if (r.length > 0) saturation.push({ ...median(r), rounds: r.map((f) => f.tasksPerSecond) });
    if (runs('failures')) {
      saturation.push(await taskworker(env, 'failures', 'noop', TASKS));
      progress(`  taskworker failures: ${saturation.at(-1)?.tasksPerSecond} tasks/s`);
    }
    // The comparison the goals are about: ROUNDS rounds, alternating, medians reported.
    const rounds: Record<string, Figures[]> = {};
    const record = (f: Figures) => {
      rounds[f.consumer] = [...(rounds[f.consumer] ?? []), f];
      progress(`  ${f.consumer}: ${f.tasksPerSecond} tasks/s (messages in flight ${f.concurrency?.messagesInFlight.mean} mean)`);
    };
    for (let round = 0; round < ROUNDS && runs('off'); round++) {
      record(await taskworker(env, 'off', 'noop', TASKS));
      record(await rawLoop(env, TASKS, INSTANCES));
      record(await sqsConsumer(env, TASKS, true, INSTANCES));
      for (const variant of ['inline', 'no-stats'] as const) record(await taskworker(env, 'off', 'noop', TASKS, 10, variant));
    }
    for (const r of Object.values(rounds)) {
      const figure = { ...median(r), rounds: r.map((f) => f.tasksPerSecond) };
      (figure.consumer.includes('no stats write') ? breakdown : saturation).push(figure);
    }
    if (runs('handle-message')) {
      saturation.push(await sqsConsumer(env, TASKS, false, INSTANCES));
      progress(`  ${saturation.at(-1)?.consumer}: ${saturation.at(-1)?.tasksPerSecond} tasks/s`);
    }
    for (const c of runs('io') ? [1, 4, 10] : []) {
      concurrency.push(await taskworker(env, 'off', 'io', IO_TASKS, c));
      progress(`  io concurrency ${c}: ${concurrency.at(-1)?.tasksPerSecond} tasks/s`);
    }
  } finally {
    env.publisherSqs.destroy();
    env.admin.destroy();
    child.disconnect();
    rmSync(workDir, { recursive: true, force: true });
  }
  if (ALL_SECTIONS.some((part) => !runs(part))) {
    if (values.json) throw new Error('--json needs every section (leave out --sections)');
    printPartial(saturation, breakdown, concurrency);
    return;
  }
  const find = (prefix: string) => saturation.find((f) => f.consumer.startsWith(prefix)) as Figures;
  const off = find('taskworker (tracking off)');
  const inline = find('taskworker (tracking off, isolation inline)');
  const raw = find('raw');
  const consumerBatch = find('sqs-consumer 14.2.8 (handleMessageBatch');
  const full = find('taskworker (tracking full)');
  const peer = find('Lambda SQS trigger + Powertools idempotency');
  /**
   * The AWS model: a dispatcher is one pipelined loop; the mapping is `SCALING.initial` sequential
   * loops as it starts (each invocation on a CPU of its own), and grows from there by up to
   * `addedPerMinute` a minute, as taskworker's fleet adds dispatchers (lib/invocation/scaling.ts).
   */
  const modelOf = (f: Figures, loops: number) => {
    const path = f.criticalPath as CriticalPath;
    const mainThreadMsPerBatch = round(((f.cpuMsPerTask?.consumerMainThread ?? 0) * f.tasks) / path.batches, 2);
    const pipelined = f === full;
    const model = (n: number) =>
      awsModel(path, {
        batchSize: TRIGGER_BATCH_SIZE,
        mainThreadMsPerBatch,
        pipelined,
        loops: n,
        // The claim is written while the message is pending (before it takes a slot), and at most
        // AHEAD_PER_SLOT messages a slot are pending; the completion is written after the slot is released.
        ...(pipelined ? { pending: { most: AHEAD_PER_SLOT * DISPATCHER_CONCURRENCY, writesWhilePending: 1 } } : {}),
      });
    return { mainThreadMsPerBatch, pipelined, loops, tasksPerSecond: model(loops), perLoop: model(1) };
  };
  const fullModel = modelOf(full, 1);
  const peerModel = modelOf(peer, SCALING.initial);
  type ModelKey = keyof typeof fullModel.tasksPerSecond;
  const modelRatio = (a: Record<ModelKey, number>, b: Record<ModelKey, number>) =>
    Object.fromEntries(Object.entries(a).map(([k, v]) => [k, round(v / b[k as ModelKey])])) as Record<ModelKey, number>;
  const fullVsPeer = {
    tasksPerSecond: round(full.tasksPerSecond / peer.tasksPerSecond),
    dynamoWriteUnitsPerTask: round((full.dynamoWriteUnitsPerTask ?? 0) / (peer.dynamoWriteUnitsPerTask ?? 1), 4),
    sqsRequestsPerTask: round(full.sqsRequestsPerTask / peer.sqsRequestsPerTask, 4),
    /** One dispatcher against the mapping's first five invocations. */
    awsModel: modelRatio(fullModel.tasksPerSecond, peerModel.tasksPerSecond),
    /** One dispatcher against one of the trigger's invocations: the work a Lambda-second buys. */
    awsModelPerInvocation: modelRatio(fullModel.perLoop, peerModel.perLoop),
    /** Dispatchers that do what the mapping's first five invocations do. */
    dispatchersForFivePollers: Object.fromEntries(
      Object.entries(peerModel.tasksPerSecond).map(([k, v]) => [k, Math.ceil(v / fullModel.tasksPerSecond[k as ModelKey])]),
    ) as Record<ModelKey, number>,
  };
  const cost = saturation
    .filter((f) => f.consumer.startsWith('taskworker'))
    .map((f) => ({
      design: f.consumer,
      // Lambda time per task at this measured rate (emulators: a pessimistic rate), 1 GB.
      lambdaGbSecondsPerTask: round(DISPATCHER_GB / f.tasksPerSecond, 6),
      usdPerMillionTasks: costPerMillion(f, DISPATCHER_GB / f.tasksPerSecond),
    }));
  cost.push({
    design: 'Lambda SQS trigger + Powertools idempotency (modelled)',
    lambdaGbSecondsPerTask: round((TRIGGER_MODEL.batchDurationSeconds * TRIGGER_MODEL.memoryGb) / TRIGGER_MODEL.batchSize, 6),
    usdPerMillionTasks: triggerCostPerMillion(),
  });
  const document = {
    benchmark: 'e2e',
    command: 'npm run bench:e2e -- --json',
    node: process.version,
    tasks: TASKS,
    saturation,
    instances: {
      count: INSTANCES,
      why:
        `${counted(INSTANCES, 'raw loop')} and ${counted(INSTANCES, 'sqs-consumer instance')} (each one batch of 10 at a time; ` +
        'sqs-consumer\'s maintainers answer concurrency requests with "run several instances", bbc/sqs-consumer#229) against one ' +
        'dispatcher with 10 slots, which receives the next batch while one settles: each row gives the messages it held at once',
    },
    ratios: {
      taskworkerOffVsRaw: round(off.tasksPerSecond / raw.tasksPerSecond),
      taskworkerOffVsSqsConsumer: round(off.tasksPerSecond / consumerBatch.tasksPerSecond),
      inlineOffVsRaw: round(inline.tasksPerSecond / raw.tasksPerSecond),
      inlineOffVsSqsConsumer: round(inline.tasksPerSecond / consumerBatch.tasksPerSecond),
    },
    breakdown,
    peer: {
      package: `@aws-lambda-powertools/idempotency@${POWERTOOLS_VERSION}`,
      scaling: SCALING,
      rounds: PEER_ROUNDS,
      concurrency:
        `the mapping's pollers as AWS documents them: ${SCALING.initial} concurrent invocations once messages are available, ` +
        `up to ${SCALING.addedPerMinute} more a minute while they still are (to ${SCALING.maximum}), one batch of ${TRIGGER_BATCH_SIZE} ` +
        `at a time each, every record of a batch at once; taskworker: one dispatcher, 10 slots`,
      full: full.consumer,
      trigger: peer.consumer,
      fullVsPeer,
      goals: {
        throughputAtLeast1x: full.tasksPerSecond >= peer.tasksPerSecond,
        writeUnitsPerTaskAtMost1x: (full.dynamoWriteUnitsPerTask ?? 0) <= (peer.dynamoWriteUnitsPerTask ?? 0),
      },
      awsModel: {
        formula: MODEL_FORMULA,
        sqsMs: MODEL_SQS_MS,
        dynamoWriteMs: MODEL_DYNAMO_WRITE_MS,
        full: fullModel,
        trigger: peerModel,
      },
    },
    goals: {
      sqsRequestsPerTaskAtMost0_21: saturation
        .filter((f) => f.consumer.startsWith('taskworker'))
        .every((f) => f.sqsRequestsPerTask <= 0.21),
      atLeast0_8xRawWithTrackingOff: {
        threads: off.tasksPerSecond >= 0.8 * raw.tasksPerSecond,
        inline: inline.tasksPerSecond >= 0.8 * raw.tasksPerSecond,
      },
      atLeast1xSqsConsumer: {
        threads: off.tasksPerSecond >= consumerBatch.tasksPerSecond,
        inline: inline.tasksPerSecond >= consumerBatch.tasksPerSecond,
      },
    },
    ioConcurrency: { taskMs: IO_TASK_MS, runs: concurrency },
    prices: PRICES,
    costPerMillionTasks: cost,
    // The attribution check (issue 23): the full-tracking rows' attributed parts against the metered whole.
    costAttribution: saturation.filter((f) => f.costAttribution).map((f) => ({ consumer: f.consumer, ...f.costAttribution })),
    triggerModel: TRIGGER_MODEL,
    idleCostPerHour: await idleCost(),
    elapsedSeconds: round((performance.now() - began) / 1000, 1),
  };
  if (values.json) {
    printResults(document);
    return;
  }
  printTables(document);
}

/** The saturation rows as text: throughput, requests and units per task, messages held at once. */
function saturationLines(rows: readonly Figures[]): string[] {
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  const width = Math.max(46, ...rows.map((f) => f.consumer.length + 2));
  return [
    `${'consumer'.padEnd(width)}${pad('tasks/s', 9)}${pad('SQS req/task', 14)}${pad('DDB WCU/task', 14)}${pad('DDB RCU/task', 14)}${pad('held mean/peak', 16)}`,
    ...rows.map((f) => {
      const held = f.concurrency ? `${f.concurrency.messagesInFlight.mean}/${f.concurrency.messagesInFlight.peak}` : '-';
      return `${f.consumer.padEnd(width)}${pad(f.tasksPerSecond, 9)}${pad(f.sqsRequestsPerTask, 14)}${pad(f.dynamoWriteUnitsPerTask ?? '-', 14)}${pad(f.dynamoReadUnitsPerTask ?? '-', 14)}${pad(held, 16)}`;
    }),
  ];
}

/** What a run of some sections measured: its rows, and the ratios the rows it has allow. */
function printPartial(saturation: readonly Figures[], breakdown: readonly Figures[], io: readonly Figures[]): void {
  const find = (prefix: string) => saturation.find((f) => f.consumer.startsWith(prefix));
  const ratio = (a: Figures | undefined, b: Figures | undefined) => (a && b ? round(a.tasksPerSecond / b.tasksPerSecond) : '-');
  const full = find('taskworker (tracking full)');
  const trigger = find('Lambda SQS trigger');
  const off = find('taskworker (tracking off)');
  const lines = [
    ...saturationLines([...saturation, ...breakdown, ...io]),
    '',
    `full / trigger ${ratio(full, trigger)}; off / raw ${ratio(off, find('raw'))}; off / sqs-consumer ${ratio(off, find('sqs-consumer 14.2.8 (handleMessageBatch'))}`,
    '(a partial run: not the benchmark’s figures)',
  ];
  for (const f of [full, trigger]) {
    const cpu = f?.cpuMsPerTask;
    if (cpu)
      lines.push(
        `${f?.consumer}: CPU ms/task consumer ${cpu.consumer} (main thread ${cpu.consumerMainThread}), emulators ${cpu.emulators}`,
      );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

function printTables(doc: {
  saturation: Figures[];
  breakdown: Figures[];
  peer: {
    fullVsPeer: Record<string, unknown>;
    goals: Record<string, boolean>;
    awsModel: {
      formula: string;
      full: { mainThreadMsPerBatch: number; tasksPerSecond: Record<string, number> };
      trigger: { mainThreadMsPerBatch: number; tasksPerSecond: Record<string, number> };
    };
  };
  instances: { why: string };
  ratios: Record<string, number>;
  goals: Record<string, boolean | Record<string, boolean>>;
  ioConcurrency: { taskMs: number; runs: Figures[] };
  costPerMillionTasks: Array<{
    design: string;
    lambdaGbSecondsPerTask: number;
    usdPerMillionTasks: { sqs: number; dynamo: number; lambda: number; total: number };
  }>;
  idleCostPerHour: Array<{
    design: string;
    averageDispatchers: number;
    sqsRequestsPerHour: number;
    lambdaGbSecondsPerHour: number;
    usdPerHour: number;
  }>;
  elapsedSeconds: number;
  node: string;
}) {
  const lines: string[] = [];
  const pad = (s: string | number, n: number) => String(s).padStart(n);
  lines.push(`End-to-end on fauxqs + dynalite (${doc.node}); ${doc.saturation[0]?.tasks} no-op tasks each, queued before the run`);
  lines.push(...saturationLines(doc.saturation), `(${doc.instances.why})`);
  lines.push(
    '',
    '`full` against the Lambda SQS trigger + Powertools idempotency, where the time goes (mean ms per batch on the emulators)',
  );
  const traced = doc.saturation.filter((f) => f.criticalPath);
  for (const f of traced) {
    const p = f.criticalPath as CriticalPath;
    const m = p.meanMs;
    lines.push(
      `${f.consumer}: ${f.tasksPerSecond} tasks/s; writes per job ${p.dynamoWritesPerJob.first}+${p.dynamoWritesPerJob.second}, per batch ${p.dynamoWritesPerBatch}; ` +
        `CPU ms/task consumer ${f.cpuMsPerTask?.consumer}, emulators ${f.cpuMsPerTask?.emulators}`,
      `  receive ${m.receive}, →first writes ${m.receiveToFirstWrites}, first writes ${m.firstWrites}, →second ${m.firstToSecondWrites}, second writes ${m.secondWrites}, ` +
        `→delete ${m.secondWritesToDelete}, delete ${m.delete}; cycle ${m.cycle}; receive→deleted ${m.receiveToDeleted}`,
      `  ended before the next receive: ${JSON.stringify(p.endedWithinCycle)}; round trips on the cycle ${JSON.stringify(p.roundTripsOnCycle)}; DynamoDB in flight ${p.dynamoInFlight}`,
    );
  }
  const model = doc.peer.awsModel;
  lines.push(
    `AWS model (${model.formula})`,
    `  full: ${JSON.stringify(model.full)}`,
    `  trigger: ${JSON.stringify(model.trigger)}`,
    `full / trigger: ${JSON.stringify(doc.peer.fullVsPeer)}  goals: ${JSON.stringify(doc.peer.goals)}`,
    '',
  );
  lines.push('where the time goes (tracking off):');
  for (const f of doc.breakdown) lines.push(`${f.consumer.padEnd(46)}${pad(f.tasksPerSecond, 9)}${pad(f.sqsRequestsPerTask, 14)}`);
  lines.push(`ratios: ${JSON.stringify(doc.ratios)}  goals: ${JSON.stringify(doc.goals)}`);
  lines.push('', `I/O-bound tasks (${doc.ioConcurrency.taskMs} ms each), tracking off`);
  for (const f of doc.ioConcurrency.runs) lines.push(`${f.consumer.padEnd(46)}${pad(f.tasksPerSecond, 9)}${pad(f.sqsRequestsPerTask, 14)}`);
  lines.push('', 'cost per million tasks (USD)');
  lines.push(`${'design'.padEnd(58)}${pad('SQS', 8)}${pad('DynamoDB', 10)}${pad('Lambda', 8)}${pad('total', 8)}`);
  for (const c of doc.costPerMillionTasks) {
    const u = c.usdPerMillionTasks;
    lines.push(`${c.design.padEnd(58)}${pad(u.sqs, 8)}${pad(u.dynamo, 10)}${pad(u.lambda, 8)}${pad(u.total, 8)}`);
  }
  lines.push('', 'idle cost per hour (USD), Kale’s three queues');
  for (const r of doc.idleCostPerHour) {
    lines.push(
      `${r.design.padEnd(72)}${pad(r.usdPerHour, 8)}  (${r.averageDispatchers} dispatchers, ${r.sqsRequestsPerHour} requests, ${r.lambdaGbSecondsPerHour} GB-s)`,
    );
  }
  lines.push('', `(${doc.elapsedSeconds} s)`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

(process.env.BENCH_EMULATORS === '1' ? serveEmulators() : main()).catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});

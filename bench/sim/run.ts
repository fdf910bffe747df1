/**
 * One simulation run: a fleet of real dispatchers — each container the invocation Lambda runs
 * (lib/invocation/invocation.ts: scale decisions, fleet count, doorbell switch, the loop of
 * lib/dispatch with a selector of lib/select) — on a simulated SQS and the simulation clock, fed
 * by one workload. Tasks "run" by sleeping their drawn run time on the simulation clock.
 */
import { resolveConfig, type SelectorName, type TaskworkerConfig } from '../../lib/config/app-config';
import { queueProbes } from '../../lib/dispatch/loop';
import { MemoryControlStore } from '../../lib/fakes/memory-controls';
import { MemoryLimitStore } from '../../lib/fakes/memory-limits';
import { batchItemFailures } from '../../lib/invocation/doorbell';
import { createInvocation, type Invocation } from '../../lib/invocation/invocation';
import type { InvocationRole } from '../../lib/invocation/scaling';
import type { DispatcherLauncher, QueueUrls, ReceivedMessage } from '../../lib/ports';
import { silentLogger } from '../../lib/ports';
import { seededRandom } from '../../lib/random';
import type { TaskExecutor, TaskOutcome, TaskRun } from '../../lib/run/executor-types';
import { createSelector } from '../../lib/select/create-selector';
import { type SlaAwareOptions, slaAware } from '../../lib/select/sla-aware';
import type { BatchReport } from '../../lib/settle/report';
import { createRegistry } from '../../lib/tasks/registry';
import { defineTask } from '../../lib/tasks/task';
import { DOORBELL_MAX_CONCURRENCY, doorbellBatchSize, doorbellQueues, doorbellTimeoutSeconds } from '../../lib/wake-up';
import { quantile, round } from '../prices';
import { Simulation } from './engine';
import { type ArrivalSource, type LatencyModel, SimSqs, type SqsModel } from './sqs';
import { KALE_QUEUES, meanTaskSeconds, PoissonArrivals, type SimQueueSpec, type Workload } from './workloads';

export interface FleetSpec {
  /** Dispatchers running at once, each invoked back to back (a warm Lambda container each). */
  readonly dispatchers: number;
  /** Task slots per dispatcher (`dispatcher.concurrency`). */
  readonly concurrency: number;
  /** Lambda timeout: each invocation loops this long. */
  readonly invocationSeconds: number;
  /** 1: the blocking loop; unset: batches in flight limited by the slots only. */
  readonly maxBatchesInFlight?: number;
  /**
   * Lambda-like operation instead of `dispatchers` running back to back: the schedule starts an
   * invocation every minute (each running up to `invocationSeconds`, so `dispatchers` overlap),
   * at most `maxConcurrency` run at once (further starts are throttled), warm containers are
   * reused. With `autoscale`, scheduled invocations scale out through lib/invocation/scaling.ts and idle
   * ones end early; without, every invocation runs to its timeout (the fixed fleet).
   */
  readonly schedule?: {
    readonly maxConcurrency: number;
    readonly autoscale: boolean;
    /**
     * A doorbell on every queue (lib/invocation/doorbell.ts): a trigger poller per queue that
     * long-polls 20 s and invokes a doorbell (at most 2 at once per queue) with each batch it gets.
     */
    readonly doorbell?: boolean;
    /** The doorbells' triggers and nothing else: Lambda's SQS trigger design, for comparison. */
    readonly triggerOnly?: boolean;
    /** How often the schedule invokes the dispatcher. @defaultValue 60, as deployed */
    readonly periodSeconds?: number;
    /**
     * The schedule starts with the workload, one invocation at once and then one a period, as
     * `taskworker dev` starts it; otherwise it has been running before, its overlapping invocations
     * ending a period apart (a deployed version's steady state).
     */
    readonly fromCold?: boolean;
  };
}

export const DEFAULT_FLEET: FleetSpec = { dispatchers: 4, concurrency: 10, invocationSeconds: 300 };

export interface QueueFigures {
  readonly queue: string;
  readonly priority: number;
  readonly slaSeconds: number;
  /** Tasks published after the warm-up. */
  readonly published: number;
  /** Of those, tasks started by the end. */
  readonly started: number;
  /** Wait (publish → start), seconds; a task still waiting at the end counts with its age then. */
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  /** Share of counted tasks that waited longer than the queue's SLA. */
  readonly overSla: number;
  /** p99 of the part of the wait spent received but waiting for a task slot (prefetched), seconds. */
  readonly heldP99: number;
}

export interface RunFigures {
  readonly workload: string;
  readonly selector: string;
  readonly seeds: readonly number[];
  readonly queues: readonly QueueFigures[];
  /** Every request the dispatchers made (receive, delete, visibility, attributes, archive sends) per task started. */
  readonly sqsRequestsPerTask: number;
  /** Requests per minute of simulated time, whole fleet. */
  readonly requestsPerMinute: number;
  readonly requests: Readonly<Record<string, number>>;
  readonly emptyReceives: number;
  readonly tasks: number;
  /** Tasks started more than once (a message that came back while it ran). */
  readonly duplicateRuns: number;
  /** Dispatcher invocation-seconds: what Lambda would bill (× memory); doorbells' included. */
  readonly dispatcherSeconds: number;
  /** Of those, the doorbell invocations'. */
  readonly doorbellSeconds: number;
  /** Simulation events fired (work the run took). */
  readonly events: number;
  /** Scheduled mode (first seed): per minute, dispatchers running and messages waiting. */
  readonly timeline: RawRun['timeline'];
  /** Scheduled mode: invocations refused for want of reserved concurrency; most dispatchers at once. */
  readonly throttled: number;
  readonly peakDispatchers: number;
  /** Scheduled mode: invocations of the dispatcher (schedule and scale-out) and of the doorbells, per run. */
  readonly invocations: number;
  readonly doorbellInvocations: number;
}

export interface RunOptions {
  readonly workload: Workload;
  /** SQS request latency. @defaultValue in-region AWS: 8 ms + an exponential extra of mean 4 ms */
  readonly latency?: LatencyModel;
  readonly selector: SelectorName;
  /** Each seed is one independent run; figures pool them (percentiles over all waits, max of all). */
  readonly seeds: readonly number[];
  readonly fleet?: FleetSpec;
  readonly queues?: readonly SimQueueSpec[];
  /** Tuning of the SLA-aware selector (its defaults otherwise). */
  readonly slaAware?: SlaAwareOptions;
  /**
   * Arrivals from this seed in every run, whatever its seed: the seeds then vary only the
   * dispatchers' draws and SQS's latencies (a real run's other randomness). @defaultValue each run's seed
   */
  readonly arrivalSeed?: number;
  /** How the simulated SQS answers receives: SQS's way unless told otherwise ({@link FAUXQS_MODEL}). */
  readonly sqsModel?: SqsModel;
  /**
   * Each queue's arrivals in place of the workload's Poisson ones (a scripted scenario, bench:mixed's):
   * given the queue, the run's seed and its first moment (epoch ms).
   */
  readonly arrivals?: (queue: SimQueueSpec, seed: number, start: number) => ArrivalSource;
}

/**
 * What a simulated task's payload carries: its run time, its publish time, and whether its wait is
 * left out of the figures (a scripted scenario's slow jobs, there to occupy slots).
 */
export interface SimPayload {
  readonly ms: number;
  readonly at: number;
  readonly uncounted?: true;
}

/** Task run times and publish times ride in the payload; the executor sleeps the run time on the simulation clock. */
class SimExecutor implements TaskExecutor {
  readonly started = new Set<string>();
  duplicates = 0;
  constructor(
    private readonly sim: Simulation,
    private readonly onStart: (queue: string, waitMs: number, publishedAt: number, jobId: string) => void,
  ) {}

  async run(run: TaskRun): Promise<TaskOutcome> {
    const { ms, at, uncounted } = run.payload as SimPayload;
    if (this.started.has(run.jobId)) this.duplicates += 1;
    else {
      this.started.add(run.jobId);
      if (!uncounted) this.onStart(run.queue, this.sim.now() - at, at, run.jobId);
    }
    await this.sim.sleep(ms);
    return { status: 'succeeded', durationMs: ms };
  }

  async close(): Promise<void> {}
}

export function simConfig(queues: readonly SimQueueSpec[], selector: SelectorName, fleet: FleetSpec): TaskworkerConfig {
  return resolveConfig({
    app: 'sim',
    queues: queues.map((q) => ({
      name: q.name,
      priority: q.priority,
      batchSize: 10,
      visibilityTimeoutSeconds: 60,
      longPollSeconds: q.longPollSeconds,
      iterations: q.iterations,
      slaSeconds: q.slaSeconds,
      tracking: 'off',
    })),
    dispatcher: { selector, concurrency: fleet.concurrency, timeoutSeconds: fleet.invocationSeconds },
  });
}

/** What one seeded run leaves: raw waits per queue and counters. */
interface RawRun {
  readonly waits: Map<string, number[]>;
  readonly held: Map<string, number[]>;
  readonly requests: Record<string, number>;
  readonly emptyReceives: number;
  readonly tasks: number;
  readonly duplicates: number;
  readonly dispatcherMs: number;
  readonly doorbellMs: number;
  readonly events: number;
  /** Scheduled mode: per minute, dispatchers running and messages waiting (all queues). */
  readonly timeline: ReadonlyArray<{ readonly minute: number; readonly dispatchers: number; readonly waiting: number }>;
  readonly throttled: number;
  readonly peakDispatchers: number;
  readonly invocations: number;
  readonly doorbellInvocations: number;
}

export async function runSimulation(options: RunOptions): Promise<RunFigures> {
  const { workload, selector, seeds } = options;
  const specs = options.queues ?? KALE_QUEUES;
  const runs: RawRun[] = [];
  for (const seed of seeds) runs.push(await simulateOnce(options, seed));
  const pooled = (pick: (r: RawRun) => Map<string, number[]>, queue: string) => runs.flatMap((r) => pick(r).get(queue) ?? []);
  const queues = specs.map((spec): QueueFigures => {
    const all = Float64Array.from(pooled((r) => r.waits, spec.name)).sort();
    const slaMs = spec.slaSeconds * 1000;
    const over = all.reduce((n, w) => n + (w > slaMs ? 1 : 0), 0);
    return {
      queue: spec.name,
      priority: spec.priority,
      slaSeconds: spec.slaSeconds,
      published: all.length,
      started: runs.reduce((n, r) => n + (r.held.get(spec.name)?.length ?? 0), 0),
      p50: round(quantile(all, 0.5) / 1000),
      p90: round(quantile(all, 0.9) / 1000),
      p99: round(quantile(all, 0.99) / 1000),
      max: round((all[all.length - 1] ?? 0) / 1000),
      overSla: round(all.length > 0 ? over / all.length : 0, 4),
      heldP99: round(quantile(Float64Array.from(pooled((r) => r.held, spec.name)).sort(), 0.99) / 1000),
    };
  });
  const sum = (f: (r: RawRun) => number) => runs.reduce((a, r) => a + f(r), 0);
  const requests: Record<string, number> = {};
  for (const r of runs) for (const [k, v] of Object.entries(r.requests)) requests[k] = (requests[k] ?? 0) + v;
  const total = Object.values(requests).reduce((a, n) => a + n, 0);
  const tasks = sum((r) => r.tasks);
  return {
    workload: workload.name,
    selector,
    seeds,
    queues,
    sqsRequestsPerTask: round(tasks > 0 ? total / tasks : 0, 4),
    requestsPerMinute: round(total / (workload.minutes * runs.length), 1),
    requests,
    emptyReceives: sum((r) => r.emptyReceives),
    tasks,
    duplicateRuns: sum((r) => r.duplicates),
    dispatcherSeconds: Math.round(sum((r) => r.dispatcherMs) / 1000 / runs.length),
    doorbellSeconds: Math.round(sum((r) => r.doorbellMs) / 1000 / runs.length),
    events: sum((r) => r.events),
    timeline: runs[0]?.timeline ?? [],
    throttled: sum((r) => r.throttled),
    invocations: Math.round(sum((r) => r.invocations) / runs.length),
    doorbellInvocations: Math.round(sum((r) => r.doorbellInvocations) / runs.length),
    peakDispatchers: Math.max(0, ...runs.map((r) => r.peakDispatchers)),
  };
}

async function simulateOnce(options: RunOptions, seed: number): Promise<RawRun> {
  const { workload, selector } = options;
  const fleet = options.fleet ?? DEFAULT_FLEET;
  const specs = options.queues ?? KALE_QUEUES;
  const sim = new Simulation();
  const start = sim.now();
  const end = start + workload.minutes * 60_000;
  const countFrom = start + workload.warmupMinutes * 60_000;
  const config = simConfig(specs, selector, fleet);
  const sqs = new SimSqs({
    clock: sim,
    random: seededRandom(seed * 7 + 1),
    ...(options.latency ? { latency: options.latency } : {}),
    ...options.sqsModel,
  });
  const capacityPerSecond = (fleet.dispatchers * fleet.concurrency) / meanTaskSeconds(specs);
  const urls: QueueUrls = {
    queues: Object.fromEntries(
      specs.map((q, i) => [
        q.name,
        sqs.createQueue(
          q.name,
          options.arrivals?.(q, seed, start) ??
            new PoissonArrivals(q, workload.profile, capacityPerSecond, start, end, (options.arrivalSeed ?? seed) * 1000 + i),
        ),
      ]),
    ),
    archive: sqs.createQueue('archive'),
  };
  const registry = createRegistry(
    specs.map((q) => defineTask({ name: q.task, queue: q.name, timeLimitSeconds: q.timeLimitSeconds, run: () => undefined })),
    config,
  );
  const waits = new Map<string, number[]>(specs.map((q) => [q.name, []]));
  const held = new Map<string, number[]>(specs.map((q) => [q.name, []]));
  const executor = new SimExecutor(sim, (queue, waitMs, publishedAt, jobId) => {
    if (publishedAt < countFrom) return;
    waits.get(queue)?.push(waitMs);
    const received = sqs.firstReceivedAt(urls.queues[queue] as string, jobId);
    if (received !== undefined) held.get(queue)?.push(sim.now() - received);
  });

  const stop = new AbortController();
  let dispatcherMs = 0;
  let doorbellMs = 0;
  /** The fleet count scale-out decisions read (lib/invocation/scaling.ts), in memory, shared by every container. */
  const limits = new MemoryLimitStore();
  const controls = new MemoryControlStore();
  /** The queues whose doorbells the fleet turned off. */
  let doorbellsOff = new Set<string>();
  /** A dispatcher's long-lived state (a warm Lambda container): its invocation, with its selector and random source. */
  const container = (index: number, more: { launcher?: DispatcherLauncher; maxConcurrency?: number } = {}): Invocation => {
    const random = seededRandom(seed * 100 + index);
    const env = { queues: config.queues, random, clock: sim, probes: queueProbes(sqs, urls) };
    return createInvocation({
      config,
      registry,
      queues: sqs,
      urls,
      executor,
      selector: selector === 'sla-aware' && options.slaAware ? slaAware(env, options.slaAware) : createSelector(selector, env),
      clock: sim,
      random,
      logger: silentLogger,
      workerId: `sim-${index}`,
      // The operator controls the dispatchers read (none set: they select from the config as deployed).
      tracking: { version: 'sim', limits, controls },
      // As the DoorbellSwitch does in AWS: the doorbells step aside while the scheduled fleet works a backlog.
      doorbells: {
        set: async (on: boolean, off: readonly string[] = []) => {
          doorbellsOff = new Set(on ? off : config.queues.map((q) => q.name));
        },
      },
      ...more,
      ...(fleet.maxBatchesInFlight ? { maxBatchesInFlight: fleet.maxBatchesInFlight } : {}),
    });
  };
  const timeline: Array<{ minute: number; dispatchers: number; waiting: number }> = [];
  let throttled = 0;
  let doorbells = 0;
  let invocations = 0;
  let running = 0;
  let peak = 0;
  const open = new Set<{ began: number }>();

  if (!fleet.schedule) {
    const dispatcher = async (index: number) => {
      const warmContainer = container(index);
      // Invocations end at evenly spread times, as overlapping scheduled invocations do: the first one is shorter.
      let length = ((index + 1) * fleet.invocationSeconds * 1000) / fleet.dispatchers;
      while (!stop.signal.aborted) {
        const invocation = { began: sim.now() };
        open.add(invocation);
        await warmContainer.run({ deadline: invocation.began + length, signal: stop.signal });
        open.delete(invocation);
        dispatcherMs += sim.now() - invocation.began;
        length = fleet.invocationSeconds * 1000;
      }
    };
    for (let i = 0; i < fleet.dispatchers; i++) void dispatcher(i);
    peak = fleet.dispatchers;
  } else {
    const { maxConcurrency, autoscale } = fleet.schedule;
    const warm: Invocation[] = [];
    let containers = 0;
    const invoke = async (role: InvocationRole, lengthMs = fleet.invocationSeconds * 1000) => {
      if (stop.signal.aborted) return;
      if (running >= maxConcurrency) {
        throttled += 1;
        return;
      }
      running += 1;
      invocations += 1;
      peak = Math.max(peak, running);
      const warmContainer = warm.pop() ?? container(containers++, { launcher, maxConcurrency });
      const invocation = { began: sim.now() };
      open.add(invocation);
      // The fixed fleet (no autoscale) runs every invocation to its timeout: a plain one.
      await warmContainer.run({ deadline: invocation.began + lengthMs, signal: stop.signal, role: autoscale ? role : 'plain' });
      open.delete(invocation);
      dispatcherMs += sim.now() - invocation.began;
      running -= 1;
      warm.push(warmContainer);
    };
    // The doorbells: each queue's trigger poller, and the doorbell invocations it starts (their
    // own function: they count toward cost, not toward the dispatcher's concurrency).
    const doorbellWarm: Invocation[] = [];
    const ring = async (queue: TaskworkerConfig['queues'][number], messages: readonly ReceivedMessage[]) => {
      const warmContainer = doorbellWarm.pop() ?? container(1000 + containers++);
      const began = sim.now();
      doorbells += 1;
      const reports: BatchReport[] = [];
      await warmContainer.run({
        deadline: began + doorbellTimeoutSeconds(config, queue) * 1000,
        signal: stop.signal,
        role: 'doorbell',
        given: [{ queue, messages, settled: (report: BatchReport) => reports.push(report) }],
      });
      // The trigger deletes what the invocation did not report as kept: one more request.
      const kept = new Set(
        batchItemFailures(
          reports,
          messages.map((m) => m.messageId),
        ).map((f) => f.itemIdentifier),
      );
      const done = messages.filter((m) => !kept.has(m.messageId)).map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle }));
      if (done.length > 0) await sqs.deleteBatch(urls.queues[queue.name] as string, done);
      dispatcherMs += sim.now() - began;
      doorbellMs += sim.now() - began;
      doorbellWarm.push(warmContainer);
    };
    if (fleet.schedule.doorbell) {
      // Lambda's trigger design has a trigger on every queue; taskworker on its doorbell queues.
      for (const queue of fleet.schedule.triggerOnly ? config.queues : doorbellQueues(config)) {
        void (async () => {
          let ringing = 0;
          while (!stop.signal.aborted && sim.now() < end) {
            if (ringing >= DOORBELL_MAX_CONCURRENCY || doorbellsOff.has(queue.name)) {
              await sim.sleep(100);
              continue;
            }
            const url = urls.queues[queue.name] as string;
            const request = {
              maxMessages: doorbellBatchSize(config, queue),
              waitSeconds: 20,
              visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
            };
            const batch = await sqs.receive(url, request, stop.signal).catch(() => []);
            if (batch.length === 0) continue;
            ringing += 1;
            void ring(queue, batch).finally(() => {
              ringing -= 1;
            });
          }
        })();
      }
    }
    // Lambda starts an asynchronous invocation a moment after it is accepted.
    const launcher = {
      launch: async (count: number) => {
        for (let i = 0; i < count; i++) void sim.sleep(100).then(() => invoke('scale-out'));
        return count;
      },
    };
    const periodMs = (fleet.schedule.periodSeconds ?? 60) * 1000;
    // The schedule has been running before the workload starts (its overlapping invocations end a
    // period apart), or starts with it (one invocation now).
    if (fleet.schedule.fromCold) void invoke('scheduled');
    const overlap = fleet.schedule.triggerOnly || fleet.schedule.fromCold ? 0 : Math.ceil((fleet.invocationSeconds * 1000) / periodMs);
    for (let k = 0; k < overlap; k++) void invoke('scheduled', Math.min(fleet.invocationSeconds * 1000, (k + 1) * periodMs));
    if (!fleet.schedule.triggerOnly)
      void (async () => {
        for (let tick = 1; start + tick * periodMs < end; tick++) {
          await sim.sleep(start + tick * periodMs - sim.now());
          void invoke('scheduled');
        }
      })();
  }
  // Sampled half-way through each minute (helpers of a generation end just before the next decision).
  void (async () => {
    for (let minute = 0; start + minute * 60_000 + 30_000 <= end; minute++) {
      await sim.sleep(start + minute * 60_000 + 30_000 - sim.now());
      const waitingNow = specs.reduce((n, q) => n + sqs.visibleCount(urls.queues[q.name] as string), 0);
      timeline.push({ minute, dispatchers: fleet.schedule ? running : fleet.dispatchers, waiting: waitingNow });
    }
  })();
  await sim.runUntil(end);
  stop.abort();
  for (const invocation of open) dispatcherMs += end - invocation.began;

  const waiting = new Map(
    specs.map((spec) => [
      spec.name,
      sqs
        .pending(urls.queues[spec.name] as string)
        .filter((m) => m.sent >= countFrom && !executor.started.has(m.messageId))
        .map((m) => end - m.sent),
    ]),
  );
  for (const [queue, ages] of waiting) waits.get(queue)?.push(...ages);
  return {
    waits,
    held,
    requests: { ...sqs.requests },
    emptyReceives: sqs.emptyReceives,
    tasks: executor.started.size,
    duplicates: executor.duplicates,
    dispatcherMs,
    doorbellMs,
    events: sim.events,
    timeline,
    throttled,
    peakDispatchers: peak,
    invocations,
    doorbellInvocations: doorbells,
  };
}

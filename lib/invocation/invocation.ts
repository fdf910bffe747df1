/**
 * One dispatcher invocation, assembled in one place. The Lambda handler (through
 * {@link DispatcherRuntime}), the doorbell, `taskworker dev`'s containers, `taskworker/testing` and
 * the benchmark simulation all run the dispatcher through {@link createInvocation}, each with its own
 * ports (AWS, emulators, in-memory fakes, the simulated SQS and clock): so whatever an invocation
 * does on AWS — sweep parked jobs, decide the scale, count itself in the fleet, run the loop, flush
 * the stats, hand waiting back to the doorbells — the test kit and the simulation do too.
 */

import type { DispatcherDeps, RunOptions, Tracking } from '../dispatch/dispatcher-deps';
import { queueProbes, runDispatcher } from '../dispatch/loop';
import { RunTimes } from '../dispatch/run-times';
import { describe } from '../errors';
import type { DispatcherLauncher, DoorbellSwitch, ReceivedMessage } from '../ports';
import { type MemoryGuardOptions, watchMemory } from '../run/memory-guard';
import { createSelector } from '../select/create-selector';
import type { QueueSelector } from '../select/selector-types';
import { type BatchReport, type DispatcherSummary, emptySummary } from '../settle/report';
import type { ScheduleStore } from '../track/job-stores';
import { type Controls, ControlsCache, effectiveQueues, NO_CONTROLS, pausedQueues } from '../track/operator-controls';
import type { WorkerPlace } from '../track/worker-registry';
import { batchItemFailures, doorbellBatches, type SqsEventRecord } from './doorbell';
import { sweepDue } from './parked-sweep';
import { processUsage, WorkerPresence } from './presence';
import {
  doorbellsStepAside,
  type FleetCount,
  fleetCount,
  type InvocationRole,
  idleExit,
  invocationDeadline,
  joinsFleet,
  type ScaleDecision,
  scaleOut,
} from './scaling';
import { StatsBuffer } from './stats-buffer';

const MB = 1_048_576;
/** The most of a scheduled invocation the sweep takes; what it leaves is swept a minute later, still before it is due. */
const SWEEP_BUDGET_MS = 30_000;
/** A plain invocation sweeps when this container has not for this long (the schedule's period). */
const SWEEP_PERIOD_MS = 60_000;

/** What a container's invocations run on. Everything but the selector and the memory guard is the loop's own. */
export interface InvocationPorts extends Omit<DispatcherDeps, 'selector' | 'tracking' | 'controls'> {
  /** @defaultValue the config's `dispatcher.selector`, probing `queues` */
  readonly selector?: QueueSelector<ReceivedMessage>;
  /** Job records, stats (coalesced here across an invocation's batches, flushed at its end), limits and the fleet count. */
  readonly tracking?: Tracking;
  /** Starts more invocations when a scheduled one finds a backlog; none: the backlog is read and planned, nothing started. */
  readonly launcher?: DispatcherLauncher;
  /** Turns the doorbells off while the scheduled fleet works a backlog, and on when it finds none. */
  readonly doorbells?: DoorbellSwitch;
  /** The function's actual reserved concurrency, when it is not the config's `maxConcurrency`. */
  readonly maxConcurrency?: number;
  /**
   * How the resident-set guard reads memory (limit: `dispatcher.rssLimitMb`). Without it there is
   * no guard: a process the dispatcher shares with a test runner or a simulation is not its own.
   */
  readonly memory?: Omit<MemoryGuardOptions, 'limitBytes'>;
}

export interface InvocationRequest {
  /** Epoch ms when the invocation must have returned (Lambda: now + remaining time). */
  readonly deadline: number;
  /** Stops taking work: running tasks finish, unstarted ones are released, every batch is settled. */
  readonly signal?: AbortSignal;
  /** @defaultValue `'plain'` */
  readonly role?: InvocationRole;
  /** A doorbell's batches, received by its trigger (see {@link Invocation.ring}). */
  readonly given?: RunOptions['given'];
  /** Where it runs (Lambda: function name, request id, log stream), for the workers view. */
  readonly place?: WorkerPlace;
}

/** A doorbell invocation's summary: Lambda reads `batchItemFailures`, the rest is for logs and tests. */
export type DoorbellSummary = DispatcherSummary & { readonly batchItemFailures: ReadonlyArray<{ readonly itemIdentifier: string }> };

/** A container's invocations: what it keeps between them (selector, stats buffer, last sweep) and the way to run one. */
export interface Invocation {
  /**
   * Runs one invocation until `deadline`, `signal` aborts, or the resident set passes
   * `dispatcher.rssLimitMb`. A `scheduled` one first sends the parked jobs that are due, then reads
   * the queues' depths: it ends at once if nothing waits, and scales the fleet out if the backlog
   * needs it. A `doorbell` one runs the `given` batches. All but `plain` ones end early once idle
   * (scaling in), a `scale-out` one by the next scheduled decision at the latest. Past the memory
   * limit the summary carries `memoryStop`: the caller should replace the container.
   */
  run(request: InvocationRequest): Promise<DispatcherSummary>;
  /**
   * A doorbell invocation: runs the trigger's records under the dispatcher's rules and says which
   * it did not delete (Lambda's partial batch response), so the trigger leaves those in their queue.
   */
  ring(records: readonly SqsEventRecord[], deadline: number, signal?: AbortSignal, place?: WorkerPlace): Promise<DoorbellSummary>;
}

/**
 * Assembles a container's invocations from its ports. Call once per container (a warm Lambda
 * container, a dev container, a test system, a simulated dispatcher) and `run` each invocation.
 *
 * @example
 * ```ts
 * const invocation = createInvocation({ config, registry, queues, urls, executor, clock, random, logger, workerId, tracking });
 * const summary = await invocation.run({ deadline: clock.now() + 60_000, role: 'scheduled' });
 * ```
 */
export function createInvocation(ports: InvocationPorts): Invocation {
  const container = assembleContainer(ports);
  return {
    run: (request) => runInvocation(container, request),
    ring: (records, deadline, signal, place) => ringDoorbell(container, records, deadline, signal, place),
  };
}

/** What a container keeps between its invocations: its ports, the loop's dependencies, the stats buffer, the last sweep. */
interface Container {
  readonly ports: InvocationPorts;
  readonly deps: DispatcherDeps;
  readonly selector: QueueSelector<ReceivedMessage>;
  readonly stats: StatsBuffer | undefined;
  readonly fleet: FleetCount | undefined;
  readonly controls: ControlsCache | undefined;
  /** When this container last swept parked jobs (epoch ms). */
  lastSweepAt: number;
}

/** Builds what a container's invocations share: the selector, the stats buffer, the fleet count, the controls cache. */
function assembleContainer(ports: InvocationPorts): Container {
  const { config, clock, logger } = ports;
  const selector =
    ports.selector ??
    createSelector(config.dispatcher.selector, {
      queues: config.queues,
      random: ports.random,
      clock,
      probes: queueProbes(ports.queues, ports.urls),
    });
  const stats = ports.tracking?.stats ? new StatsBuffer(ports.tracking.stats, clock, logger) : undefined;
  const limits = ports.tracking?.limits;
  const fleet = limits ? fleetCount(limits) : undefined;
  // Operator controls: read at each invocation's start and at most every 2 s while it runs.
  const controls = ports.tracking?.controls
    ? new ControlsCache(
        ports.tracking.controls,
        () => clock.now(),
        (error) => logger.warn('could not read the operator controls; keeping the last ones read', { error: describe(error) }),
      )
    : undefined;
  const deps: DispatcherDeps = {
    ...ports,
    // What this container's tasks take to run: kept across its invocations, as its threads are.
    runTimes: ports.runTimes ?? new RunTimes(),
    selector,
    ...(controls ? { controls } : {}),
    ...(ports.tracking ? { tracking: { ...ports.tracking, ...(stats ? { stats } : {}) } } : {}),
  };
  return { ports, deps, selector, stats, fleet, controls, lastSweepAt: Number.NEGATIVE_INFINITY };
}

/** Sends the parked jobs that are due (parked-sweep.ts). */
async function sweep({ ports }: Container, jobs: ScheduleStore, deadline: number): Promise<void> {
  const { clock, logger } = ports;
  const swept = await sweepDue({ jobs, queues: ports.queues, urls: ports.urls, clock, logger }, deadline);
  if (swept.sent > 0 || swept.left > 0) logger.info('swept parked jobs that are due', { ...swept });
}

/** Turns every doorbell on but those named. Never fails the invocation: a switch that did not turn costs latency or order, never a job. */
async function switchDoorbells({ ports, controls }: Container, off: readonly string[]): Promise<void> {
  if (!ports.doorbells) return;
  try {
    // A paused queue's doorbell stays off, whatever the fleet's state says.
    await ports.doorbells.set(true, [...off, ...pausedQueues(controls?.last ?? NO_CONTROLS)]);
  } catch (error) {
    ports.logger.warn(off.length > 0 ? `could not turn the doorbells of ${off.join(', ')} off` : 'could not turn the doorbells on', {
      error: describe(error),
    });
  }
}

/** Joining or leaving the fleet count is best effort: the count only sizes the next scale-out. */
async function fleetStep({ ports }: Container, step: 'join' | 'leave', act: () => Promise<void>): Promise<void> {
  try {
    await act();
  } catch (error) {
    ports.logger.warn(`could not ${step} the fleet count`, { error: describe(error) });
  }
}

/** Who is working, on what: listed from its first batch (or its joining the fleet) to its end. */
function presenceOf(
  { ports, selector }: Container,
  run: { readonly role: InvocationRole; readonly place: WorkerPlace; readonly startedAt: number; readonly deadline: number },
): WorkerPresence | undefined {
  const workers = ports.tracking?.workers;
  return workers
    ? new WorkerPresence({
        registry: workers,
        clock: ports.clock,
        logger: ports.logger,
        workerId: ports.workerId,
        role: run.role,
        place: run.place,
        startedAt: run.startedAt,
        deadline: run.deadline,
        ...(selector.weights ? { weights: () => selector.weights?.() } : {}),
        usage: processUsage(ports.memory?.rss ?? (() => process.memoryUsage.rss()), ports.config.dispatcher.rssLimitMb),
      })
    : undefined;
}

/** One invocation ({@link Invocation.run}). */
async function runInvocation(
  c: Container,
  { deadline, signal, role = 'plain', given = [], place = {} }: InvocationRequest,
): Promise<DispatcherSummary> {
  const { ports, deps, controls, fleet, stats } = c;
  const { config, clock, logger } = ports;
  const startedAt = clock.now();
  ports.usage?.restart();
  // The operator controls at the start (a doorbell's were just read by `ring`): one small read.
  const current: Controls = controls ? await controls.get(role !== 'doorbell') : NO_CONTROLS;
  // Parked jobs due within 15 minutes go back to their queues first, so the depths below count
  // them: at every scheduled invocation, and at the start of a plain one (a dispatcher that runs
  // back to back, as `taskworker dev --always-on` does) once a minute at most; an invocation
  // lasts at most 15 minutes, so no parked job is swept after it is due. A version without a jobs
  // table parks none.
  const jobs = ports.tracking?.jobs;
  if (jobs && (role === 'scheduled' || (role === 'plain' && startedAt - c.lastSweepAt >= SWEEP_PERIOD_MS))) {
    c.lastSweepAt = startedAt;
    await sweep(c, jobs, Math.min(deadline, startedAt + SWEEP_BUDGET_MS));
  }
  let decision: ScaleDecision | undefined;
  if (role === 'scheduled') {
    // The minute's first question: is there work? In an idle version the answer costs one
    // GetQueueAttributes per queue and ends the invocation; with a backlog it scales out.
    const maxConcurrency = ports.maxConcurrency ?? config.dispatcher.maxConcurrency;
    // A paused queue's backlog neither wakes nor scales the fleet.
    decision = await scaleOut({
      config: {
        ...config,
        queues: effectiveQueues(config.queues, current, startedAt),
        dispatcher: { ...config.dispatcher, maxConcurrency },
      },
      queues: ports.queues,
      urls: ports.urls,
      logger,
      ...(ports.launcher ? { launcher: ports.launcher } : {}),
      ...(fleet ? { fleet: { count: fleet, now: startedAt } } : {}),
    });
    // While the fleet works a backlog it selects by priority; the doorbells of the queues at or
    // below it wait until it is done, those of queues above it keep watch. A trickle is taken in
    // passing: the doorbells stay on.
    if (decision) await switchDoorbells(c, doorbellsStepAside(decision, effectiveQueues(config.queues, current)));
    if (decision?.waiting === 0) return emptySummary();
  }
  const exit = idleExit(role, startedAt, decision);
  const runDeadline = invocationDeadline(role, startedAt, deadline);
  // Working a backlog, it counts itself in the fleet later decisions see.
  const holder = fleet && joinsFleet(role, decision) ? `${ports.workerId}@${startedAt}` : undefined;
  if (fleet && holder) await fleetStep(c, 'join', () => fleet.join(holder, startedAt, runDeadline));
  const presence = presenceOf(c, { role, place, startedAt, deadline: runDeadline });
  if (presence && holder) presence.working();
  const guard = ports.memory
    ? watchMemory({ limitBytes: config.dispatcher.rssLimitMb * MB, ...ports.memory, ...(signal ? { stop: signal } : {}) })
    : undefined;
  const loopSignal = guard?.signal ?? signal;
  let summary: DispatcherSummary;
  try {
    summary = await runDispatcher(presence ? { ...deps, observer: presence.observer(deps.observer) } : deps, {
      deadline: runDeadline,
      ...(loopSignal ? { signal: loopSignal } : {}),
      given,
      waitingIn: decision?.waitingIn ?? [],
      ...(exit ? { idleExit: exit } : {}),
    });
  } finally {
    guard?.stop();
    // Whatever ended the invocation, the stats it gathered are written before it returns.
    await stats?.flush();
    if (fleet && holder) await fleetStep(c, 'leave', () => fleet.leave(holder, clock.now()));
    await presence?.end();
  }
  // The fleet ran out of work: the doorbells take over waiting for it.
  if (summary.endedIdle && (role === 'scheduled' || role === 'scale-out')) await switchDoorbells(c, []);
  const tripped = guard?.tripped;
  if (!tripped) return summary;
  const memoryStop = { rssMb: Math.round(tripped.rssBytes / MB), limitMb: config.dispatcher.rssLimitMb };
  logger.warn('resident set over dispatcher.rssLimitMb: stopped taking work, released what had not started', memoryStop);
  return { ...summary, memoryStop };
}

/** A doorbell invocation ({@link Invocation.ring}). */
async function ringDoorbell(
  c: Container,
  records: readonly SqsEventRecord[],
  deadline: number,
  signal?: AbortSignal,
  place?: WorkerPlace,
): Promise<DoorbellSummary> {
  const { ports, controls } = c;
  const { config, logger } = ports;
  ports.usage?.restart();
  const { batches: all, foreign } = doorbellBatches(records, config, ports.urls);
  // A paused queue's batch is not run: its messages are handed back untouched (left to their
  // visibility timeout, not made visible at once, which a trigger not yet off would take again
  // and again towards the dead-letter queue), and the invocation ends.
  const paused = new Set(controls ? pausedQueues(await controls.get(true)) : []);
  const batches = all.filter((b) => !paused.has(b.queue.name));
  if (batches.length < all.length) {
    logger.info('a batch of a paused queue: handed back to the queue, not run', {
      queues: all.filter((b) => paused.has(b.queue.name)).map((b) => b.queue.name),
    });
  }
  if (foreign.length > 0) {
    logger.error("records from a queue that is not this version's: left in their queue (check the trigger)", {
      queues: [...new Set(foreign.map((r) => r.eventSourceARN))],
    });
  }
  if (batches.length === 0) return { ...emptySummary(), batchItemFailures: records.map((r) => ({ itemIdentifier: r.messageId })) };
  const reports: BatchReport[] = [];
  const given = batches.map((b) => ({ ...b, settled: (report: BatchReport) => reports.push(report) }));
  const summary = await runInvocation(c, { deadline, ...(signal ? { signal } : {}), role: 'doorbell', given, ...(place ? { place } : {}) });
  return {
    ...summary,
    batchItemFailures: batchItemFailures(
      reports,
      records.map((r) => r.messageId),
    ),
  };
}

/**
 * bench:mixed's two cases on the simulation: the dispatcher's own invocation code (lib/invocation,
 * lib/dispatch, the SLA-aware selector) invoked as `taskworker dev` invokes it — the schedule every
 * 5 s from a cold start, the high queue's doorbell trigger (two invocations at once), 2 slots per
 * dispatcher, the reserved concurrency the config gives — on the simulated SQS and clock. The
 * emulator run (bench/mixed.ts) measures the same cases on real processes; here each case runs many
 * rounds over nine seeds, and the moment the high-priority work arrives moves from round to round,
 * so the figures cover the worst moments as well as the usual one.
 *
 *   backlog    six 8 s tasks arrive on the schedule-woken low queue; 20 high jobs follow, one every
 *              0.75 s, starting 0.25–5.2 s after the backlog (before and after a scheduled
 *              invocation has received it).
 *   slow-high  two 8 s jobs arrive on the high queue (each takes a doorbell invocation); 5 quick ones
 *              follow on the same queue, one a second, starting 0.25–2.95 s after. Only the quick
 *              ones' waits count.
 */
import type { TaskworkerConfig } from '../../lib/config/app-config';
import { encodeEnvelope } from '../../lib/wire/envelope';
import { type FleetSpec, runSimulation, type SimPayload, simConfig } from './run';
import type { ArrivalSource } from './sqs';
import type { SimQueueSpec, Workload } from './workloads';

export type MixedCaseName = 'backlog' | 'slow-high';

/** The emulator bench's two queues (bench/mixed.ts's config): a doorbell queue and a schedule-woken one. */
export const MIXED_QUEUES: readonly SimQueueSpec[] = [
  // The high queue holds the quick notifications and the slow imports: its longest limit is theirs.
  {
    name: 'high',
    priority: 100,
    iterations: 5,
    longPollSeconds: 1,
    slaSeconds: 10,
    task: 'notify',
    timeLimitSeconds: 20,
    meanSeconds: 0.1,
    share: 0.5,
  },
  {
    name: 'low',
    priority: 5,
    iterations: 5,
    longPollSeconds: 1,
    slaSeconds: 300,
    task: 'report',
    timeLimitSeconds: 20,
    meanSeconds: 8,
    share: 0.5,
  },
];

/** One round of a case every this long: the backlog drains and the trickle ends well within it. */
const ROUND_MS = 45_000;
/** The slow tasks' run time and the quick ones', as in the emulator bench's tasks. */
const SLOW_MS = 8_000;
const QUICK_MS = 100;

/** A queue's arrivals as a list, in time order: each a real envelope carrying its run time and publish time. */
class ScriptedArrivals implements ArrivalSource {
  private next = 0;
  constructor(
    private readonly task: string,
    private readonly arrivals: readonly SimPayload[],
  ) {}

  peek(): number {
    return this.arrivals[this.next]?.at ?? Number.POSITIVE_INFINITY;
  }

  take(): { at: number; body: string } {
    const arrival = this.arrivals[this.next++] as SimPayload;
    return { at: arrival.at, body: encodeEnvelope({ task: this.task, payload: arrival }) };
  }
}

/** How long after the slow work a round's quick work starts arriving: ten steps, shifted by the seed. */
const lead = (roundIndex: number, seed: number, stepMs: number) => 250 + ((roundIndex + seed) % 10) * stepMs;

/** Each queue's arrivals in `rounds` rounds of `name` from `start`. */
function caseArrivals(name: MixedCaseName, queue: SimQueueSpec, rounds: number, seed: number, start: number): SimPayload[] {
  const arrivals: SimPayload[] = [];
  for (let r = 0; r < rounds; r++) {
    const at = start + r * ROUND_MS;
    if (name === 'backlog') {
      if (queue.name === 'low') for (let i = 0; i < 6; i++) arrivals.push({ at, ms: SLOW_MS });
      else for (let i = 0; i < 20; i++) arrivals.push({ at: at + lead(r, seed, 550) + i * 750, ms: QUICK_MS });
    } else if (queue.name === 'high') {
      arrivals.push({ at, ms: SLOW_MS, uncounted: true }, { at: at + 200, ms: SLOW_MS, uncounted: true });
      for (let i = 0; i < 5; i++) arrivals.push({ at: at + lead(r, seed, 300) + i * 1000, ms: QUICK_MS });
    }
  }
  return arrivals;
}

/** `taskworker dev`'s on-demand invocations of bench/mixed.ts's config, from a cold start. */
export function mixedFleet(config: Pick<TaskworkerConfig, 'dispatcher'>): FleetSpec {
  return {
    dispatchers: 1,
    concurrency: 2,
    invocationSeconds: 60,
    schedule: { maxConcurrency: config.dispatcher.maxConcurrency, autoscale: true, doorbell: true, periodSeconds: 5, fromCold: true },
  };
}

export interface MixedCaseFigures {
  readonly case: MixedCaseName;
  readonly seeds: readonly number[];
  readonly rounds: number;
  /** High-priority jobs counted (publish → first start), all seeds pooled. */
  readonly samples: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
  /** The low queue's tasks counted (the backlog's) and their longest wait, seconds: what the high jobs' turn cost them. */
  readonly lowSamples: number;
  readonly lowMax: number;
  /** Tasks started more than once. */
  readonly duplicateRuns: number;
}

/** Runs one case for `rounds` rounds on each seed; waits in seconds. */
export async function simulateMixedCase(name: MixedCaseName, seeds: readonly number[], rounds: number): Promise<MixedCaseFigures> {
  const minutes = (rounds * ROUND_MS) / 60_000 + 1;
  const workload: Workload = { name: `mixed-${name}`, description: name, minutes, warmupMinutes: 0, profile: [[0, 0]] };
  // The reserved concurrency bench/mixed.ts's config gets (dispatcher.maxConcurrency's default for a 60 s timeout).
  const base = simConfig(MIXED_QUEUES, 'sla-aware', { dispatchers: 1, concurrency: 2, invocationSeconds: 60 });
  const figures = await runSimulation({
    workload,
    selector: 'sla-aware',
    seeds,
    queues: MIXED_QUEUES,
    fleet: mixedFleet(base),
    arrivals: (queue, seed, start) => new ScriptedArrivals(queue.task, caseArrivals(name, queue, rounds, seed, start)),
  });
  const high = figures.queues.find((q) => q.queue === 'high');
  const low = figures.queues.find((q) => q.queue === 'low');
  if (!high || !low) throw new Error('mixed simulation: a queue is missing from the figures');
  return {
    case: name,
    seeds,
    rounds,
    samples: high.published,
    p50: high.p50,
    p99: high.p99,
    max: high.max,
    lowSamples: low.published,
    lowMax: low.max,
    duplicateRuns: figures.duplicateRuns,
  };
}

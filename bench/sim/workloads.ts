/**
 * The simulated workloads: Kale's three queues (priority 100/40/5) with tasks of different
 * lengths, arriving as Poisson processes whose rate follows a piecewise-constant load profile
 * expressed as a fraction of the fleet's task capacity.
 */

import { type Random, seededRandom } from '../../lib/random';
import { encodeEnvelope } from '../../lib/wire/envelope';
import type { ArrivalSource } from './sqs';

/** One of Kale's queues, as simulated. */
export interface SimQueueSpec {
  readonly name: string;
  readonly priority: number;
  readonly iterations: number;
  readonly longPollSeconds: number;
  readonly slaSeconds: number;
  /** The task registered on this queue. */
  readonly task: string;
  readonly timeLimitSeconds: number;
  /** Mean task run time, seconds (lognormal, spread `sigma`, capped at 80% of the limit). */
  readonly meanSeconds: number;
  /** Share of all arrivals. */
  readonly share: number;
}

/**
 * Kale's example queues with the durations of the kinds of task each usually holds: short
 * notifications on high, ordinary work on default, long reports on low.
 */
export const KALE_QUEUES: readonly SimQueueSpec[] = [
  {
    name: 'high_priority',
    priority: 100,
    iterations: 10,
    longPollSeconds: 1,
    slaSeconds: 10,
    task: 'notify',
    timeLimitSeconds: 10,
    meanSeconds: 0.2,
    share: 0.5,
  },
  {
    name: 'default',
    priority: 40,
    iterations: 5,
    longPollSeconds: 1,
    slaSeconds: 60,
    task: 'work',
    timeLimitSeconds: 20,
    meanSeconds: 1,
    share: 0.35,
  },
  {
    name: 'low_priority',
    priority: 5,
    iterations: 5,
    longPollSeconds: 5,
    slaSeconds: 300,
    task: 'report',
    timeLimitSeconds: 25,
    meanSeconds: 5,
    share: 0.15,
  },
];

/** Lognormal spread of task run times (coefficient of variation ≈ 0.95). */
export const DURATION_SIGMA = 0.8;

/** Load over time: `[fromMinute, loadFactor]` steps; the load is a fraction of the fleet's task capacity. */
export type LoadProfile = ReadonlyArray<readonly [fromMinute: number, load: number]>;

export interface Workload {
  readonly name: string;
  readonly description: string;
  readonly minutes: number;
  /** Waits of tasks published before this minute are not counted (the queues start empty). */
  readonly warmupMinutes: number;
  readonly profile: LoadProfile;
  /**
   * Which of the targets the default selector is held to here: under load, against
   * ReducedLottery (both variants); idle, its lone low-priority task against the queue's SLA.
   * @defaultValue 'loaded'
   */
  readonly targets?: 'loaded' | 'idle';
}

export const WORKLOADS: readonly Workload[] = [
  {
    name: 'steady-0.7',
    description: 'steady load at 0.7 of capacity',
    minutes: 30,
    warmupMinutes: 3,
    profile: [[0, 0.7]],
  },
  {
    name: 'steady-0.9',
    description: 'steady load at 0.9 of capacity',
    minutes: 30,
    warmupMinutes: 3,
    profile: [[0, 0.9]],
  },
  {
    name: 'steady-1.05',
    description: 'overload: 1.05 of capacity for 30 minutes (a backlog builds)',
    minutes: 30,
    warmupMinutes: 3,
    profile: [[0, 1.05]],
  },
  {
    name: 'busy-hour',
    description: '0.5 of capacity, a 10-minute burst at 1.6, back to 0.5 (an hour)',
    minutes: 60,
    warmupMinutes: 3,
    profile: [
      [0, 0.5],
      [20, 1.6],
      [30, 0.5],
    ],
  },
  {
    name: 'burst',
    description: '0.5 of capacity, a 2-minute burst at 3.0 (a backlog of 2.5 minutes of capacity at once), back to 0.5 (30 minutes)',
    minutes: 30,
    warmupMinutes: 3,
    profile: [
      [0, 0.5],
      [10, 3],
      [12, 0.5],
    ],
  },
  {
    name: 'idle-hour',
    description: 'an idle hour: a task every few minutes',
    minutes: 60,
    warmupMinutes: 0,
    profile: [[0, 0.002]],
    targets: 'idle',
  },
];

/**
 * The one cell of the selector benchmark, one seed of it, that `npm test` runs again
 * (test/unit/bench-tables.test.ts): its figures in bench/results/selectors.json (`check`) must be
 * what the simulation gives now, so a change that moves the benchmark fails with the change. Its first
 * 10 minutes only (3 of warm-up, 7 counted): a third of the full cell's CPU, and any change to the
 * model or the dispatcher's receive, select and settle paths still moves its figures.
 */
export const SELECTOR_CHECK_CELL = { workload: 'steady-0.7', seeds: [1], minutes: 10 } as const;

/** A workload cut to its first `minutes` (the check cell), or as it is. */
export function workloadFor(name: string, minutes?: number): Workload | undefined {
  const workload = [...WORKLOADS, ...SCALING_WORKLOADS].find((w) => w.name === name);
  return workload && minutes !== undefined ? { ...workload, minutes } : workload;
}

/** Mean run time of a task, weighted by arrival share: what one task slot-second buys. */
export function meanTaskSeconds(queues: readonly SimQueueSpec[]): number {
  return queues.reduce((a, q) => a + q.share * q.meanSeconds, 0);
}

/** Mean of a lognormal with spread `sigma` and median 1. */
const lognormalMeanFactor = (sigma: number) => Math.exp((sigma * sigma) / 2);

/**
 * Poisson arrivals of one queue's tasks. Rate = load(t) × capacity × share. Each message's
 * body is a real envelope v1 whose payload carries the run time drawn for it (`ms`) and its
 * publish time (`at`).
 */
export class PoissonArrivals implements ArrivalSource {
  private nextAt: number;
  private readonly random: Random;

  constructor(
    private readonly spec: SimQueueSpec,
    private readonly profile: LoadProfile,
    private readonly capacityPerSecond: number,
    private readonly start: number,
    private readonly end: number,
    seed: number,
  ) {
    this.random = seededRandom(seed);
    this.nextAt = this.draw(start);
  }

  peek(): number {
    return this.nextAt;
  }

  take(): { at: number; body: string } {
    const at = this.nextAt;
    const { meanSeconds, timeLimitSeconds, task } = this.spec;
    // Lognormal with the given mean: median = mean / e^(σ²/2).
    const normal = Math.sqrt(-2 * Math.log(1 - this.random())) * Math.cos(2 * Math.PI * this.random());
    const seconds = (meanSeconds / lognormalMeanFactor(DURATION_SIGMA)) * Math.exp(DURATION_SIGMA * normal);
    const ms = Math.round(Math.min(seconds, timeLimitSeconds * 0.8) * 1000);
    this.nextAt = this.draw(at);
    return { at, body: encodeEnvelope({ task, payload: { ms, at } }) };
  }

  /** The next arrival after `from`: exponential gaps at the rate in force, redrawn at each step of the profile. */
  private draw(from: number): number {
    let t = from;
    for (;;) {
      if (t >= this.end) return Number.POSITIVE_INFINITY;
      const minute = (t - this.start) / 60_000;
      const stepIndex = this.profile.findLastIndex(([m]) => m <= minute);
      const rate = (this.profile[stepIndex]?.[1] ?? 0) * this.capacityPerSecond * this.spec.share;
      const nextStep = this.profile[stepIndex + 1];
      const stepEnd = nextStep ? this.start + nextStep[0] * 60_000 : this.end;
      const gap = rate > 0 ? (-Math.log(1 - this.random()) / rate) * 1000 : Number.POSITIVE_INFINITY;
      if (t + gap < stepEnd) return t + gap;
      t = stepEnd; // memoryless: draw again from the start of the next step
    }
  }
}

/**
 * Workloads for the autoscaling comparison, relative to the scheduled fleet's capacity (the
 * invocations the schedule overlaps): a surge that leaves a backlog, then a quiet spell.
 */
export const SCALING_WORKLOADS: readonly Workload[] = [
  {
    name: 'surge',
    description: '0.5 of the scheduled fleet’s capacity, a 5-minute surge at 3.0, then 0.3 (40 minutes)',
    minutes: 40,
    warmupMinutes: 3,
    profile: [
      [0, 0.5],
      [10, 3],
      [15, 0.3],
    ],
  },
  {
    name: 'idle-hour',
    description: 'an idle hour: a task every few minutes',
    minutes: 60,
    warmupMinutes: 0,
    profile: [[0, 0.002]],
  },
];

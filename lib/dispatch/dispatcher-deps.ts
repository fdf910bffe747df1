import type { UsagePort } from '../policy/cost-attribution';
/** What the dispatcher loop and a batch run share: their dependencies, options and observers. */

import type { Context } from 'aws-lambda';
import type { Clock } from '../clock';
import type { QueueConfig, TaskworkerConfig } from '../config/app-config';
import type { DispatcherLauncher, DoorbellSwitch, Logger, PayloadStore, QueueClient, QueueUrls, ReceivedMessage } from '../ports';
import type { Random } from '../random';
import type { TaskExecutor } from '../run/executor-types';
import type { QueueSelector } from '../select/selector-types';
import type { BatchReport, DispatcherSummary } from '../settle/report';
import type { TaskDefinition, TaskRegistry } from '../tasks/task';
import type { LimitStore } from '../track/fleet-limits';
import type { JobStore } from '../track/job-stores';
import type { ControlStore, ControlsCache } from '../track/operator-controls';
import type { StatsStore } from '../track/stats-store';
import type { WorkerRegistry } from '../track/worker-registry';
import type { DecodedJob } from '../wire/envelope';
import type { RunTimes } from './run-times';

/** Receives every settled batch: metrics, local progress displays, tests. */
export interface DispatcherObserver {
  onBatch(report: BatchReport): void;
  /** A batch was received and decoded; its jobs are now held until the batch is settled. */
  onBatchStart?(start: BatchStart): void;
}

/** The jobs of a batch as it starts: what a dispatcher holds until it reports the batch settled. */
export interface BatchStart {
  readonly queue: string;
  readonly jobs: ReadonlyArray<{ readonly messageId: string; readonly jobId?: string; readonly task?: string }>;
}

/** A decoded message of a registered task, on its way through its batch. */
export interface Planned {
  readonly message: ReceivedMessage;
  readonly job: DecodedJob;
  readonly def: TaskDefinition;
  /** Epoch ms the job may start at: a rate limit's token booked ahead is earned then (lib/track/fleet-limits.ts). */
  readonly startAt?: number;
  /**
   * Epoch ms the fleet-wide concurrency slots it holds lapse (lib/dispatch/admit.ts): past then
   * another dispatcher may take them, so it starts only if its time limit ends before.
   */
  readonly slotsUntil?: number;
}

export interface DispatcherDeps {
  readonly config: TaskworkerConfig;
  readonly registry: TaskRegistry;
  readonly queues: QueueClient;
  readonly urls: QueueUrls;
  readonly executor: TaskExecutor;
  /**
   * What tasks have taken to run in this container (lib/dispatch/run-times.ts): how many messages a
   * receive may take beyond the free slots, because slots will come free within a moment. None: a
   * receive takes the free slots only.
   */
  readonly runTimes?: RunTimes;
  readonly selector: QueueSelector<ReceivedMessage>;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly workerId: string;
  readonly observer?: DispatcherObserver;
  /** Job records and stats (DynamoDB); without it the dispatcher keeps none. */
  readonly tracking?: Tracking;
  /**
   * The operator controls as this container reads them (`tracking.controls`, cached): the loop asks
   * once per selection round, which reads the store at most every 2 s. Without it the config holds.
   */
  readonly controls?: ControlsCache;
  /**
   * Batches in flight at once. The loop receives the next batch while earlier ones run, whenever
   * a task slot is free; `1` is the blocking loop (receive, run the whole batch, settle, receive
   * again), kept for comparison in the benchmarks.
   * @defaultValue unbounded: only the slots (`dispatcher.concurrency`) limit it
   */
  readonly maxBatchesInFlight?: number;
  /**
   * Counts the SQS requests and DynamoDB write units of this container's clients, and restarts its
   * billed interval at each invocation's start; each settled batch takes its own and what was
   * counted outside batches since the last take for its tasks' cost (lib/policy/cost-attribution.ts).
   * Without it no cost is attributed.
   */
  readonly usage?: UsagePort;
  /**
   * The version's payload bucket and where to read it (S3): claim-checked payloads (an envelope's
   * `payloadRef`) are read from it before their tasks run, and deleted when their jobs succeed or are
   * cancelled. A reference to any other bucket, or outside `payloads/`, is archived
   * (`bad-payload-ref`); without it, every reference is.
   */
  readonly payloads?: {
    readonly store: PayloadStore;
    readonly bucket: string;
    /** The buckets of apps whose events this one subscribes to: their events' payloads (`payloads/events/`) are read there. */
    readonly eventBuckets?: readonly string[];
  };
}

export interface Tracking {
  /** The release version written on job records. */
  readonly version: string;
  readonly jobs?: JobStore;
  readonly stats?: StatsStore;
  /** Fleet-wide limits' slots and tokens; without it task and queue `limits` are not enforced. */
  readonly limits?: LimitStore;
  /** Operator controls (paused queues, priority and SLA set at run time); without it the config's hold. */
  readonly controls?: ControlStore;
  /** Who is working, on what (lib/track/worker-registry.ts): a working invocation's item; without it the invocation is not listed. */
  readonly workers?: WorkerRegistry;
}

export interface RunOptions {
  /** Epoch ms when the invocation must have returned (Lambda: now + remaining time). */
  readonly deadline: number;
  /** Aborting stops new receives and unstarted tasks; running tasks finish and the batch is settled. */
  readonly signal?: AbortSignal;
  /**
   * End the invocation early once no work has come for `afterMs` (and not before `notBefore`,
   * epoch ms): how the fleet scales in (lib/invocation/scaling.ts). Without it the loop runs to the deadline.
   */
  readonly idleExit?: { readonly afterMs: number; readonly notBefore: number };
  /**
   * Queues a depth reading just found messages waiting in (the scheduled invocation's): the
   * selector looks at each before anything else, so work the schedule woke for is taken before the
   * invocation may end idle.
   */
  readonly waitingIn?: readonly string[];
  /**
   * Batches received by someone else (the doorbell's SQS trigger): each is run and settled under
   * the same rules, and `settled` hears its report. With them the loop does not select: the
   * invocation ends once they are settled.
   */
  readonly given?: ReadonlyArray<{
    readonly queue: QueueConfig;
    readonly messages: readonly ReceivedMessage[];
    readonly settled?: (report: BatchReport) => void;
  }>;
}

/** What the dispatcher Lambda's module gives: the handler, and a stop for the container's shutdown. */
export interface DispatcherFunction {
  readonly handler: (event: unknown, context: Context) => Promise<DispatcherSummary>;
  /** Stops taking new work: running tasks finish, unstarted ones are released, the batch is settled. */
  stop(): void;
  close(): Promise<void>;
}

export interface DispatcherFunctionOptions {
  readonly env?: NodeJS.ProcessEnv;
  readonly observer?: DispatcherObserver;
  /** Starts more invocations when a scheduled one scales out. @defaultValue Lambda's Invoke API on this function, when it can scale out */
  readonly launcher?: DispatcherLauncher;
  /** Turns the doorbells off and on. @defaultValue the event-source mappings in `TASKWORKER_DOORBELL_MAPPINGS`, if any */
  readonly doorbells?: DoorbellSwitch;
}

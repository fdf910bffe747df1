import type { Clock } from '../clock';
import type { QueueConfig } from '../config/app-config';
import type { Random } from '../random';

/** What an emptiness check found. A receive-based probe hands over the messages it took. */
export interface Probe<M> {
  readonly empty: boolean;
  readonly messages: readonly M[];
}

/** Ways to check a queue: a short-poll receive (free: its messages become the batch) or GetQueueAttributes. */
export interface Probes<M> {
  /** A short-poll receive of up to `maxMessages` (at most the queue's batch size; all of it when absent). */
  receive(queue: QueueConfig, maxMessages?: number): Promise<Probe<M>>;
  attributes(queue: QueueConfig): Promise<Probe<M>>;
}

/** A selector's answer: the queue to work, messages already taken from it, and how long to long-poll if none. */
export interface Selection<M> {
  readonly queue: QueueConfig;
  readonly messages: readonly M[];
  readonly waitSeconds: number;
  /**
   * Receives to make from the queue before selecting again (the batch in `messages` counts as one).
   * @defaultValue the queue's `iterations`, which also caps it
   */
  readonly receives?: number;
}

/** What the dispatcher reports back after each receive, for selectors that learn from it. */
export interface ReceiveObservation {
  readonly queue: string;
  readonly received: number;
  /** Age of the oldest message received (now − SentTimestamp), ms; 0 when none. */
  readonly oldestAgeMs: number;
}

/** The dispatcher's task slots when it selects: selectors that care can send long work where there is room. */
export interface Room {
  readonly freeSlots: number;
  readonly slots: number;
  /**
   * How many of `queue`'s messages would start within a moment if received now (its tasks' run
   * times here counted): a receive asks for no more, so nothing it takes waits in the dispatcher
   * while a higher queue's work waits in SQS. Absent: {@link freeSlots}.
   */
  readonly startableOf?: (queue: QueueConfig) => number;
}

/** How many messages to ask `queue` for with `room`: what would start within a moment, at most its batch (all of it without a room). */
export function receiveSizeIn(room: Room | undefined, queue: QueueConfig): number {
  if (!room) return queue.batchSize;
  return Math.max(1, Math.min(queue.batchSize, room.startableOf?.(queue) ?? room.freeSlots));
}

export interface QueueSelector<M> {
  readonly name: string;
  /**
   * Picks one of `candidates` (a non-empty subset of the configured queues, in config order):
   * the dispatcher leaves out queues whose tasks cannot finish in the time it has left and paused
   * ones, and passes a queue whose priority or SLA an operator set at run time with those values
   * (lib/track/operator-controls.ts): selectors weigh the candidates' fields, not the config's.
   */
  select(candidates: readonly QueueConfig[], room?: Room): Promise<Selection<M>>;
  observe?(observation: ReceiveObservation): void;
  /** The named queues hold messages now (a depth reading): selectors that keep pauses look at them first. */
  expect?(queues: readonly string[]): void;
  /**
   * Read only, for the workers view: the weights of the selector's last selection, undefined
   * before its first. Never a projection to now: between selections (a dispatcher waiting for room,
   * a doorbell invocation that only runs its trigger's batch) nothing is weighed, so nothing changes.
   */
  weights?(): SelectorWeights | undefined;
}

/** How a selector weighed the queues it chose among at one selection. */
export interface SelectorWeights {
  /** When it selected (epoch ms, on its clock). */
  readonly at: number;
  /** Each candidate queue's share of the weight (shares sum to 1), by queue name. */
  readonly shares: Readonly<Record<string, number>>;
}

export interface SelectorEnv<M> {
  readonly queues: readonly QueueConfig[];
  readonly random: Random;
  readonly clock: Clock;
  readonly probes: Probes<M>;
}

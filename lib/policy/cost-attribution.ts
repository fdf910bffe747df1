/**
 * What a task costs, attributed from what the dispatcher measures: the SQS requests and DynamoDB
 * write units its clients counted and the wall time its invocation was billed for, shared among
 * the tasks of each settled batch. Pure arithmetic: no AWS SDK.
 */
import type { TaskCost } from '../track/stats-store';

/** List prices (us-east-1, arm64 Lambda, on-demand DynamoDB, standard SQS), USD. */
export const LIST_PRICES = {
  sqsPerMillionRequests: 0.4,
  dynamoPerMillionWriteUnits: 0.625,
  dynamoPerMillionReadUnits: 0.125,
  lambdaPerGbSecond: 0.000_013_333_4,
  lambdaPerMillionInvocations: 0.2,
} as const;

/** What the meter counted between two attributions. */
export interface UsageDelta {
  readonly sqsRequests: number;
  readonly writeUnits: number;
  /** Wall time of the invocation in the interval, ms. */
  readonly elapsedMs: number;
}

/**
 * What a dispatcher's clients cost, counted as they run (lib/adapters/usage-meter.ts): each batch
 * runs in its own scope, so the requests and writes it makes are its own, and what was counted
 * outside any batch (receives, depth reads, sweeps) is shared by the next batch that takes.
 */
export interface UsagePort {
  /** Starts a billed interval (an invocation's start): the time between invocations is not billed. */
  restart(): void;
  /** Runs one batch's work in its own scope; what it counted and did not take goes to the shared rest. */
  batch<T>(work: () => Promise<T>): Promise<T>;
  /** Requests made for the current batch by someone else: a doorbell's batch's SQS trigger receives and deletes it. */
  addRequests(sqsRequests: number): void;
  /** The current batch's own usage, with the shared rest counted since the last take. */
  take(): UsageDelta;
}

export const NO_COST: TaskCost = { lambdaMbMs: 0, sqsRequests: 0, writeUnits: 0 };

export function addCost(a: TaskCost, b: TaskCost): TaskCost {
  return { lambdaMbMs: a.lambdaMbMs + b.lambdaMbMs, sqsRequests: a.sqsRequests + b.sqsRequests, writeUnits: a.writeUnits + b.writeUnits };
}

export function gbSeconds(cost: TaskCost): number {
  return cost.lambdaMbMs / 1024 / 1000;
}

/** The dollar figure at {@link LIST_PRICES}. */
export function costUsd(cost: TaskCost): number {
  return (
    gbSeconds(cost) * LIST_PRICES.lambdaPerGbSecond +
    (cost.sqsRequests / 1e6) * LIST_PRICES.sqsPerMillionRequests +
    (cost.writeUnits / 1e6) * LIST_PRICES.dynamoPerMillionWriteUnits
  );
}

/**
 * Shares one interval's usage among the tasks of the batch settled at its end: requests and write
 * units by share of messages, billed time (elapsed × memory) by share of run time (by messages
 * when nothing ran). The shares add up to the whole delta; an empty batch gets nothing.
 *
 * @example
 * ```ts
 * const shares = attributeUsage({ sqsRequests: 3, writeUnits: 4, elapsedMs: 100 }, 1024, [{ task: 'a', runMs: 30 }, { task: 'b', runMs: 10 }]);
 * shares.get('a')?.lambdaMbMs; // 76_800
 * ```
 */
export function attributeUsage(
  delta: UsageDelta,
  memoryMb: number,
  jobs: ReadonlyArray<{ readonly task: string; readonly runMs?: number | undefined }>,
): Map<string, TaskCost> {
  const out = new Map<string, TaskCost>();
  if (jobs.length === 0) return out;
  const totalRun = jobs.reduce((n, j) => n + Math.max(0, j.runMs ?? 0), 0);
  const billed = Math.max(0, delta.elapsedMs) * memoryMb;
  for (const job of jobs) {
    const byMessage = 1 / jobs.length;
    const byRun = totalRun > 0 ? Math.max(0, job.runMs ?? 0) / totalRun : byMessage;
    const share: TaskCost = {
      lambdaMbMs: billed * byRun,
      sqsRequests: delta.sqsRequests * byMessage,
      writeUnits: delta.writeUnits * byMessage,
    };
    const held = out.get(job.task);
    out.set(job.task, held ? addCost(held, share) : share);
  }
  return out;
}

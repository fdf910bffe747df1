/**
 * Who is working, on what: one small item per working dispatcher invocation (scheduled, scaled-out,
 * doorbell; Lambda and `taskworker dev` containers alike), written when it starts working, beaten
 * every {@link BEAT_INTERVAL_MS} and marked at its end (lib/invocation/presence.ts). The jobs it
 * holds come from its task slots as pointers; a reader confirms each against the job's record (its
 * state and `leaseOwner`, which the claim already writes), so there is no second bookkeeping of
 * who holds what. Pure: no AWS here (lib/adapters/dynamo-workers.ts, lib/fakes/memory-workers.ts).
 */
import type { JobRecord } from './job-record';

/** How often a working invocation says it is still there. */
export const BEAT_INTERVAL_MS = 15_000;
/** Not heard from for this long (three beats missed), a worker that has not ended has vanished. */
export const VANISHED_AFTER_MS = 3 * BEAT_INTERVAL_MS;
/** How long a worker item is kept after its deadline (its TTL): a vanished one is shown that long. */
export const WORKER_KEEP_MS = 60 * 60_000;
/** The most a worker item carries of job ids and weights, so a beat stays one write unit (1 KB). */
export const WORKER_ITEM_BUDGET_BYTES = 900;

/** Where an invocation runs: on Lambda its function and request id (and log stream); locally its container. */
export interface WorkerPlace {
  readonly function?: string;
  readonly requestId?: string;
  /** The log stream on Lambda (one per container), `local/<pid>` in `taskworker dev`. */
  readonly container?: string;
}

export interface WorkerUsage {
  readonly rssMb: number;
  readonly limitMb: number;
  readonly cpuPercent: number;
}

/** One working invocation as it last said. */
export interface WorkerItem {
  /** The invocation: `<workerId>@<startedAt>`. */
  readonly id: string;
  /** The dispatcher's worker id: what its claims write as a job's `leaseOwner`. */
  readonly workerId: string;
  /** `scheduled`, `scale-out`, `doorbell` or `plain`. */
  readonly role: string;
  readonly place: WorkerPlace;
  readonly startedAt: number;
  /** When the invocation must have returned (epoch ms). */
  readonly deadline: number;
  /** When it last wrote (epoch ms). */
  readonly heardAt: number;
  /** Ids of the jobs its task slots held at `heardAt` (at most what fits the item budget). */
  readonly jobs: readonly string[];
  /** How many jobs its slots held, `jobs` counting only those that fit. */
  readonly held: number;
  /**
   * How its selector weighed the queues at its last selection in this invocation (shares summing
   * to 1), when the selector tells; absent before it has selected, and in a doorbell invocation,
   * which selects nothing (it runs the batch its queue's trigger gave it).
   */
  readonly weights?: Readonly<Record<string, number>>;
  /** When that selection was (epoch ms). */
  readonly weightsAt?: number;
  /**
   * Its container's process at `heardAt`, as its memory guard reads it: resident set against
   * `dispatcher.rssLimitMb`, and CPU used since the previous beat (100 = one core busy throughout).
   * Absent where the process is shared with others (in-process tests, benchmarks): not its own.
   */
  readonly usage?: WorkerUsage;
  /** When it ended cleanly (epoch ms). */
  readonly endedAt?: number;
}

/** The worker registry: one item per invocation. Best effort for the dispatcher: a lost write costs the view, never a job. */
export interface WorkerRegistry {
  /** Writes the item whole (start and each beat): one write. */
  beat(item: WorkerItem): Promise<void>;
  /** Marks the invocation ended: one write. */
  end(id: string, now: number): Promise<void>;
  /** Every item not yet expired (ended ones included), in no order. */
  list(): Promise<WorkerItem[]>;
}

export type WorkerStatus = 'live' | 'vanished' | 'ended';

/**
 * A worker that ended said so; one heard from within {@link VANISHED_AFTER_MS} is live; any other
 * stopped being heard from before it ended — before its deadline, or it would have ended — and has vanished.
 */
export function workerStatus(item: Pick<WorkerItem, 'heardAt' | 'endedAt'>, now: number): WorkerStatus {
  if (item.endedAt !== undefined) return 'ended';
  return now - item.heardAt <= VANISHED_AFTER_MS ? 'live' : 'vanished';
}

/** An item that is shown: live ones, and vanished ones until {@link WORKER_KEEP_MS} past their deadline (TTL lags). */
export function shownWorker(item: WorkerItem, now: number): boolean {
  const status = workerStatus(item, now);
  return status === 'live' || (status === 'vanished' && now <= item.deadline + WORKER_KEEP_MS);
}

/** The TTL (epoch seconds) of a worker item. */
export function workerExpiresAt(deadline: number): number {
  return Math.floor((deadline + WORKER_KEEP_MS) / 1000);
}

/** The job ids and weights that fit {@link WORKER_ITEM_BUDGET_BYTES} beside the rest of the item; `held` counts them all. */
export function fitItem(item: Omit<WorkerItem, 'held'>): WorkerItem {
  const rest = JSON.stringify({ ...item, jobs: [] }).length;
  let size = rest;
  const jobs: string[] = [];
  for (const id of item.jobs) {
    size += id.length + 3;
    if (size > WORKER_ITEM_BUDGET_BYTES) break;
    jobs.push(id);
  }
  return { ...item, jobs, held: item.jobs.length };
}

/** What became of a job a worker held, as its record says now. */
export interface JobFate {
  readonly jobId: string;
  /** The record's state now; `unknown` when there is no record. */
  readonly state: string;
  readonly task?: string;
  readonly queue?: string;
  /** Who holds its lease now, when it is running. */
  readonly leaseOwner?: string;
  /** Whether the worker still holds it: its record is running under its lease. */
  readonly heldByWorker: boolean;
  /** One line: "running (lease held by w1)", "succeeded by w2", "retrying (attempt 2)". */
  readonly fate: string;
}

const ENDS = new Set(['succeeded', 'archived', 'cancelled']);

/** Reads a job a worker (`workerId`) said it held against the job's record now. */
export function jobFate(jobId: string, record: JobRecord | undefined, workerId: string): JobFate {
  if (!record) return { jobId, state: 'unknown', heldByWorker: false, fate: 'no job record' };
  const base = { jobId, state: record.state, task: record.task, queue: record.queue };
  if (record.state === 'running') {
    const owner = record.leaseOwner;
    const mine = owner === workerId;
    return {
      ...base,
      ...(owner ? { leaseOwner: owner } : {}),
      heldByWorker: mine,
      fate: mine
        ? `running (lease held by ${owner})`
        : `running, taken over by ${owner ?? 'another dispatcher'} (attempt ${record.attempt})`,
    };
  }
  if (ENDS.has(record.state)) {
    const by = [...record.history].reverse().find((h) => h.what === record.state)?.worker;
    const detail = record.state === 'archived' && record.reason ? ` (${record.reason})` : '';
    return { ...base, heldByWorker: false, fate: `${record.state}${detail}${by ? ` by ${by}` : ''}` };
  }
  if (record.state === 'retrying') return { ...base, heldByWorker: false, fate: `retrying (attempt ${record.attempt} failed)` };
  return { ...base, heldByWorker: false, fate: record.state };
}

/**
 * An invocation's presence in the worker registry (lib/track/worker-registry.ts): nothing while it only
 * looks for work — an idle scheduled invocation writes nothing — then one write when it starts
 * working (its first batch, or joining the fleet), a beat every {@link BEAT_INTERVAL_MS} carrying
 * the jobs its slots hold and its selector's weights, and one write at its end. Best effort: a
 * write that fails is logged and costs the view, never a job.
 */
import type { Clock } from '../clock';
import type { BatchStart, DispatcherObserver } from '../dispatch/dispatcher-deps';
import { describe } from '../errors';
import type { Logger } from '../ports';
import type { SelectorWeights } from '../select/selector-types';
import type { BatchReport } from '../settle/report';
import {
  BEAT_INTERVAL_MS,
  fitItem,
  type WorkerItem,
  type WorkerPlace,
  type WorkerRegistry,
  type WorkerUsage,
} from '../track/worker-registry';

export interface PresenceOptions {
  readonly registry: WorkerRegistry;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The dispatcher's worker id (its claims' `leaseOwner`). */
  readonly workerId: string;
  readonly role: string;
  readonly place: WorkerPlace;
  readonly startedAt: number;
  readonly deadline: number;
  /** The selector's weights at its last selection, when it tells them. */
  readonly weights?: () => SelectorWeights | undefined;
  /** Its process's memory and CPU now (see {@link processUsage}); none where the process is not its own. */
  readonly usage?: () => WorkerUsage | undefined;
}

/**
 * A sampler of this process's resident set (read by `rss`, the memory guard's reading) and of the
 * CPU it used since the previous sample, per wall-clock time: 100 is one core busy throughout.
 * Undefined when `rss` reads 0 (a shared process, whose memory is not the dispatcher's own).
 */
export function processUsage(rss: () => number, limitMb: number): () => WorkerUsage | undefined {
  let last = { cpu: process.cpuUsage(), at: performance.now() };
  return () => {
    const bytes = rss();
    if (bytes <= 0) return undefined;
    const now = { cpu: process.cpuUsage(), at: performance.now() };
    const usedMicros = now.cpu.user - last.cpu.user + (now.cpu.system - last.cpu.system);
    const wallMs = now.at - last.at;
    last = now;
    return {
      rssMb: Math.round(bytes / 1_048_576),
      limitMb,
      cpuPercent: wallMs > 0 ? Math.round(usedMicros / 10 / wallMs) : 0,
    };
  };
}

export class WorkerPresence {
  readonly id: string;
  /** Job ids by message id, from batch start to batch settled. */
  private readonly holding = new Map<string, string>();
  private registered = false;
  private ended = false;
  private timer: NodeJS.Timeout | undefined;
  private lastBeatAt = Number.NEGATIVE_INFINITY;
  /** Writes in order: an end never overtakes a beat. */
  private writes: Promise<void> = Promise.resolve();

  constructor(private readonly o: PresenceOptions) {
    this.id = `${o.workerId}@${o.startedAt}`;
  }

  /** The batch observer that keeps the held jobs and registers at the first batch. */
  observer(inner?: DispatcherObserver): DispatcherObserver {
    return {
      onBatchStart: (start: BatchStart) => {
        for (const job of start.jobs) if (job.jobId) this.holding.set(job.messageId, job.jobId);
        if (!this.registered) this.working();
        inner?.onBatchStart?.(start);
      },
      onBatch: (report: BatchReport) => {
        for (const job of report.jobs) this.holding.delete(job.messageId);
        // A clock the timers do not follow (a simulation) still beats at batch ends.
        if (this.registered && this.o.clock.now() - this.lastBeatAt >= BEAT_INTERVAL_MS) this.beat();
        inner?.onBatch(report);
      },
    };
  }

  /** The invocation works: registers it (once) and beats from now on. */
  working(): void {
    if (this.registered || this.ended) return;
    this.registered = true;
    this.beat();
  }

  /** The invocation ends: its last write says so (none when it never worked). */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    if (!this.registered) return;
    const now = this.o.clock.now();
    this.enqueue('end', () => this.o.registry.end(this.id, now));
    await this.writes;
  }

  /** What the item says now. */
  item(): WorkerItem {
    const now = this.o.clock.now();
    // Only weights this invocation drew: a doorbell invocation selects nothing (it runs its
    // trigger's batch), and a warm container's selector still holds its last invocation's.
    const drawn = this.o.weights?.();
    const weights = drawn && drawn.at >= this.o.startedAt ? drawn : undefined;
    return fitItem({
      id: this.id,
      workerId: this.o.workerId,
      role: this.o.role,
      place: this.o.place,
      startedAt: this.o.startedAt,
      deadline: this.o.deadline,
      heardAt: now,
      jobs: [...new Set(this.holding.values())],
      ...(weights && Object.keys(weights.shares).length > 0 ? { weights: roundWeights(weights.shares), weightsAt: weights.at } : {}),
      ...usageNow(this.o.usage),
    });
  }

  private beat(): void {
    if (this.ended) return;
    clearTimeout(this.timer);
    const item = this.item();
    this.lastBeatAt = item.heardAt;
    this.enqueue('beat', () => this.o.registry.beat(item));
    this.timer = setTimeout(() => this.beat(), BEAT_INTERVAL_MS);
    this.timer.unref?.();
  }

  private enqueue(step: string, write: () => Promise<void>): void {
    this.writes = this.writes.then(write).catch((error: unknown) => {
      this.o.logger.warn(`could not write this invocation's ${step} to the worker registry`, { error: describe(error) });
    });
  }
}

function usageNow(sample: (() => WorkerUsage | undefined) | undefined): { usage?: WorkerUsage } {
  const usage = sample?.();
  return usage ? { usage } : {};
}

/** Shares to three decimals: the item stays small and the view reads them as percentages. */
function roundWeights(weights: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(weights).map(([q, w]) => [q, Math.round(w * 1000) / 1000]));
}

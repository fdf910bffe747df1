import type { Clock } from '../clock';
import { describe } from '../errors';
import { mergeQueueDay } from '../policy/stat-sums';
import { addCounts } from '../policy/throughput';
import type { Logger } from '../ports';
import type { MinuteCounts, QueueDayStats, StatsStore } from '../track/stats-store';

/** How long a dispatcher gathers stats before it writes them: one `ADD` per queue and day per flush. */
export const STATS_FLUSH_MS = 5_000;

/**
 * Coalesces the stats deltas of many batches into one atomic `ADD` per queue and day (and one per
 * queue and minute for the throughput chart, lib/policy/throughput.ts): written
 * {@link STATS_FLUSH_MS} after the oldest unwritten delta (by the batch that settles then, or a
 * timer that does not keep the process alive), and whenever {@link flush} is called (the runtime
 * does at the end of every invocation, so a stop or a memory stop writes them too: a frozen
 * Lambda container holds nothing unwritten). At
 * saturation this is a few writes a minute per dispatcher instead of one per batch. What a
 * process killed between flushes had gathered is lost with it: stats undercount by at most a
 * flush interval of one dispatcher's work, never overcount, and never cost a job.
 */
export class StatsBuffer implements StatsStore {
  private readonly pending = new Map<string, { delta: QueueDayStats; expiresAt: number }>();
  /** Minute counters held, by queue and minute: one `ADD` each per flush. */
  private readonly pendingMinutes = new Map<string, { queue: string; minute: string; counts: MinuteCounts; expiresAt: number }>();
  /** When the oldest unwritten delta came; undefined when nothing is held. */
  private oldestAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Writes that were started and have not finished: a flush waits for them. */
  private readonly writing = new Set<Promise<void>>();

  constructor(
    private readonly inner: StatsStore,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly flushMs = STATS_FLUSH_MS,
  ) {}

  async add(delta: QueueDayStats, expiresAt: number): Promise<void> {
    const key = `${delta.queue}\u0000${delta.day}`;
    const held = this.pending.get(key);
    this.pending.set(
      key,
      held ? { delta: mergeQueueDay(held.delta, delta), expiresAt: Math.max(held.expiresAt, expiresAt) } : { delta, expiresAt },
    );
    await this.held();
  }

  /** Coalesced like the day deltas: one write per queue and minute per flush (where the store keeps minutes). */
  async addMinute(queue: string, minute: string, counts: MinuteCounts, expiresAt: number): Promise<void> {
    if (!this.inner.addMinute) return;
    const key = `${queue}\u0000${minute}`;
    const held = this.pendingMinutes.get(key);
    this.pendingMinutes.set(key, {
      queue,
      minute,
      counts: held ? addCounts(held.counts, counts) : counts,
      expiresAt: Math.max(held?.expiresAt ?? 0, expiresAt),
    });
    await this.held();
  }

  minutes(queue: string, minutes: readonly string[]): Promise<Record<string, MinuteCounts>> {
    return this.inner.minutes ? this.inner.minutes(queue, minutes) : Promise.resolve({});
  }

  /** Something is held: starts the flush timer, or flushes when the oldest held is due. */
  private async held(): Promise<void> {
    const now = this.clock.now();
    if (this.oldestAt === undefined) {
      this.oldestAt = now;
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
    if (now - this.oldestAt >= this.flushMs) await this.flush();
  }

  /** Writes everything gathered so far; resolves when every write has ended. Never throws. */
  async flush(): Promise<void> {
    this.oldestAt = undefined;
    clearTimeout(this.timer);
    const entries = [...this.pending.values()];
    this.pending.clear();
    const minutes = [...this.pendingMinutes.values()];
    this.pendingMinutes.clear();
    const start = (write: Promise<void>) => {
      this.writing.add(write);
      void write.finally(() => this.writing.delete(write));
    };
    for (const { delta, expiresAt } of entries) {
      start(
        this.inner.add(delta, expiresAt).catch((error: unknown) => {
          this.logger.error('stats write failed', { queue: delta.queue, day: delta.day, error: describe(error) });
        }),
      );
    }
    for (const { queue, minute, counts, expiresAt } of minutes) {
      start(
        (this.inner.addMinute?.(queue, minute, counts, expiresAt) ?? Promise.resolve()).catch((error: unknown) => {
          this.logger.error('stats minute write failed', { queue, minute, error: describe(error) });
        }),
      );
    }
    await Promise.all([...this.writing]);
  }

  get(queue: string, day: string): Promise<QueueDayStats | undefined> {
    return this.inner.get(queue, day);
  }
}

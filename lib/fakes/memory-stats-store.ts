import { mergeQueueDay } from '../policy/stat-sums';
import { addCounts, NO_COUNTS } from '../policy/throughput';
import type { MinuteCounts, QueueDayStats, StatsStore } from '../track/stats-store';

/** In-memory stats table; `writes` counts one per `add`, like the DynamoDB adapter's single UpdateItem. */
export class MemoryStatsStore implements StatsStore {
  private readonly days = new Map<string, QueueDayStats>();
  writes = 0;

  async add(delta: QueueDayStats): Promise<void> {
    this.writes += 1;
    const key = `${delta.queue}#${delta.day}`;
    const prior = this.days.get(key);
    this.days.set(key, prior ? mergeQueueDay(prior, delta) : structuredClone(delta));
  }

  async get(queue: string, day: string): Promise<QueueDayStats | undefined> {
    const found = this.days.get(`${queue}#${day}`);
    return found ? structuredClone(found) : undefined;
  }

  private readonly perMinute = new Map<string, MinuteCounts>();
  /** One per `addMinute` (the DynamoDB adapter's single UpdateItem), apart from the day writes. */
  minuteWrites = 0;

  async addMinute(queue: string, minute: string, counts: MinuteCounts): Promise<void> {
    this.minuteWrites += 1;
    const key = `${queue}#${minute}`;
    this.perMinute.set(key, addCounts(this.perMinute.get(key) ?? NO_COUNTS, counts));
  }

  async minutes(queue: string, minutes: readonly string[]): Promise<Record<string, MinuteCounts>> {
    const out: Record<string, MinuteCounts> = {};
    for (const m of minutes) {
      const found = this.perMinute.get(`${queue}#${m}`);
      if (found) out[m] = { ...found };
    }
    return out;
  }
}

import { utcDay } from '../policy/stat-sums';
import type { OperationEntry, OperationLog } from '../track/operation-log';

/** In-memory {@link OperationLog}, by UTC day as the stats table keeps it. */
export class MemoryOperationLog implements OperationLog {
  private readonly days = new Map<string, OperationEntry[]>();

  async record(entry: OperationEntry): Promise<void> {
    const day = utcDay(entry.at);
    this.days.set(day, [...(this.days.get(day) ?? []), structuredClone(entry)]);
  }

  async day(day: string): Promise<OperationEntry[]> {
    return structuredClone(this.days.get(day) ?? []);
  }
}

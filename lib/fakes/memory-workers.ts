import type { WorkerItem, WorkerRegistry } from '../track/worker-registry';

/** In-memory {@link WorkerRegistry} with the DynamoDB adapter's rules; `writes` counts what DynamoDB would bill (1 KB items). */
export class MemoryWorkerRegistry implements WorkerRegistry {
  private readonly items = new Map<string, WorkerItem>();
  writes = 0;

  async beat(item: WorkerItem): Promise<void> {
    this.writes += 1;
    if (this.items.get(item.id)?.endedAt !== undefined) return;
    this.items.set(item.id, structuredClone(item));
  }

  async end(id: string, now: number): Promise<void> {
    this.writes += 1;
    const item = this.items.get(id);
    if (item) this.items.set(id, { ...item, endedAt: now, heardAt: now, jobs: [], held: 0 });
  }

  async list(): Promise<WorkerItem[]> {
    return [...this.items.values()].map((item) => structuredClone(item));
  }
}

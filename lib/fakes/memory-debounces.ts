/**
 * The in-memory jobs table's debounce cycles and kept bodies, with the DynamoDB adapter's conditions
 * (lib/adapters/dynamo-job-debounces.ts); the job-store conformance suite holds both to them.
 */
import { debouncedBodyKey, debounceItemKey } from '../policy/job-rules';
import type { DebounceCycle, DebouncePublish, DebounceWrite } from '../track/job-record';
import type { DebounceStore } from '../track/job-stores';

export class MemoryDebounces implements Omit<DebounceStore, 'get' | 'getMany'> {
  /** `<task> debounce <key>` → its open cycle, as the DynamoDB items are keyed. */
  private readonly cycles = new Map<string, DebounceCycle>();
  /** `<job id> debounced` → the body a closed cycle's job runs with. */
  private readonly kept = new Map<string, { body: string; seq: number; firstAt: number }>();

  /** `wrote` counts each write that lands, as the jobs table's fake counts its own. */
  constructor(private readonly wrote: () => void) {}

  async debounce(publish: DebouncePublish, over?: Pick<DebounceCycle, 'pending' | 'seq'>): Promise<DebounceWrite> {
    const id = debounceItemKey(publish.task, publish.key);
    const open = this.cycles.get(id);
    const fresh: DebounceCycle = {
      pending: publish.jobId,
      seq: 1,
      body: publish.body,
      firstAt: publish.now,
      dueAt: publish.dueAt,
      maxDueAt: publish.maxDueAt,
    };
    let next: DebounceCycle;
    if (over) {
      if (open?.pending !== over.pending || open.seq !== over.seq) return { landed: false, cycle: open ? { ...open } : undefined };
      next = fresh;
    } else if (!open) next = fresh;
    else if (open.maxDueAt < publish.abandonedBefore) return { landed: false, cycle: { ...open } };
    else next = { ...open, seq: open.seq + 1, body: publish.body, dueAt: publish.dueAt };
    this.wrote();
    this.cycles.set(id, next);
    const { body: _body, ...cycle } = next;
    return { landed: true, started: next.pending === publish.jobId, cycle };
  }

  async debounceCycle(task: string, key: string): Promise<DebounceCycle | undefined> {
    const cycle = this.cycles.get(debounceItemKey(task, key));
    return cycle ? { ...cycle } : undefined;
  }

  async keepDebouncedBody(cycle: DebounceCycle, _now: number): Promise<boolean> {
    const id = debouncedBodyKey(cycle.pending);
    const kept = this.kept.get(id);
    if (kept && kept.firstAt === cycle.firstAt && kept.seq > cycle.seq) return false;
    this.wrote();
    this.kept.set(id, { body: cycle.body, seq: cycle.seq, firstAt: cycle.firstAt });
    return true;
  }

  async debouncedBody(jobId: string): Promise<string | undefined> {
    return this.kept.get(debouncedBodyKey(jobId))?.body;
  }

  async closeDebounce(task: string, key: string, cycle: Pick<DebounceCycle, 'pending'> & { readonly seq?: number }): Promise<boolean> {
    const id = debounceItemKey(task, key);
    const open = this.cycles.get(id);
    if (open?.pending !== cycle.pending || (cycle.seq !== undefined && open.seq !== cycle.seq)) return false;
    this.wrote();
    this.cycles.delete(id);
    return true;
  }
}

import type {
  ClaimRequest,
  ClaimResult,
  Completion,
  FailureRecord,
  JobQuery,
  JobRecord,
  JobRef,
  JobStore,
  QueueDayStats,
  StatsStore,
} from '../tracking/model';
import { appendHistory, claimable, historyOf, type JobStoreSettings } from '../tracking/rules';
import { mergeQueueDay } from '../tracking/stats';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * In-memory jobs table with the DynamoDB adapter's conditions and results; the job-store
 * conformance suite holds both to the same behaviour. `writes` counts conditional writes the way
 * DynamoDB bills them (one per write request, item size aside).
 */
export class MemoryJobStore implements JobStore {
  private readonly jobs = new Map<string, JobRecord>();
  writes = 0;

  constructor(private readonly settings: JobStoreSettings) {}

  private put(record: JobRecord): JobRecord {
    this.writes += 1;
    this.jobs.set(record.jobId, structuredClone(record));
    return structuredClone(record);
  }

  async recordQueued(job: JobRef, now: number): Promise<boolean> {
    if (this.jobs.has(job.jobId)) return false;
    this.put({ ...job, state: 'queued', attempt: 0, updatedAt: now, history: [{ what: 'queued', when: now }] });
    return true;
  }

  async claim(r: ClaimRequest): Promise<ClaimResult> {
    const prior = this.jobs.get(r.jobId);
    if (!claimable(prior, r.now)) {
      const record = structuredClone(prior as JobRecord);
      return record.state === 'running' ? { outcome: 'leased', record } : { outcome: 'finished', record };
    }
    const attempt = (prior?.attempt ?? 0) + 1;
    const what = prior?.state === 'running' ? 'took-over' : 'started';
    const base: Mutable<JobRecord> = {
      ...(prior ?? { jobId: r.jobId, history: [] }),
      ...pickRef(r),
      state: 'running',
      attempt,
    } as JobRecord;
    base.publishedAt = prior?.publishedAt ?? r.publishedAt;
    base.firstStartedAt = prior?.firstStartedAt ?? r.now;
    base.lastStartedAt = r.now;
    base.updatedAt = r.now;
    base.leaseOwner = r.workerId;
    base.leaseUntil = r.leaseUntil;
    base.history = [...(prior?.history ?? []), { what, when: r.now, worker: r.workerId, attempt }];
    const record = this.put(base);
    return { outcome: 'claimed', token: attempt, record };
  }

  async extendLease(jobId: string, token: number, leaseUntil: number, now: number): Promise<boolean> {
    const record = this.jobs.get(jobId);
    if (record?.state !== 'running' || record.attempt !== token) return false;
    this.put({ ...record, leaseUntil, updatedAt: now });
    return true;
  }

  async complete(c: Completion, claimed: JobRecord): Promise<boolean> {
    const record = this.jobs.get(c.jobId);
    if (record?.state !== 'running' || record.attempt !== c.token) return false;
    const next: Mutable<JobRecord> = { ...record, state: c.state, updatedAt: c.now };
    delete next.leaseOwner;
    delete next.leaseUntil;
    if (c.state !== 'retrying') next.finishedAt = c.now;
    if (c.reason) next.reason = c.reason;
    if (c.error) next.lastError = c.error;
    if (c.result !== undefined) next.result = c.result;
    next.history = appendHistory(claimed.history, historyOf(c), this.settings.historyLimit);
    this.put(next);
    return true;
  }

  async recordFailure(f: FailureRecord): Promise<void> {
    const prior = this.jobs.get(f.jobId);
    if (prior && (prior.state === 'succeeded' || prior.state === 'archived')) return;
    const next: Mutable<JobRecord> = {
      ...(prior ?? { history: [] }),
      ...pickRef(f),
      jobId: f.jobId,
      state: f.state,
      attempt: f.attempt,
      updatedAt: f.now,
      lastError: f.error,
      publishedAt: prior?.publishedAt ?? f.publishedAt,
    } as JobRecord;
    if (f.reason) next.reason = f.reason;
    if (f.state === 'archived') next.finishedAt = f.now;
    next.history = appendHistory(
      prior?.history ?? [],
      { what: f.state, when: f.now, worker: f.workerId, attempt: f.attempt, ...(f.reason ? { detail: f.reason } : {}) },
      this.settings.historyLimit,
    );
    this.put(next);
  }

  async recordDuplicate(jobId: string, workerId: string, now: number): Promise<void> {
    const record = this.jobs.get(jobId);
    if (!record || (record.state !== 'succeeded' && record.state !== 'archived')) return;
    this.put({
      ...record,
      history: appendHistory(record.history, { what: 'skipped-duplicate', when: now, worker: workerId }, this.settings.historyLimit),
    });
  }

  async get(jobId: string): Promise<JobRecord | undefined> {
    const record = this.jobs.get(jobId);
    return record ? structuredClone(record) : undefined;
  }

  async list(q: JobQuery): Promise<JobRecord[]> {
    return [...this.jobs.values()]
      .filter((r) => r.state === q.state && q.queues.includes(r.queue) && (q.task === undefined || r.task === q.task))
      .sort((a, b) => b.updatedAt - a.updatedAt)
      .slice(0, q.limit)
      .map((r) => structuredClone(r));
  }

  async resetForReplay(jobId: string, now: number): Promise<void> {
    const record = this.jobs.get(jobId);
    if (record?.state !== 'archived') return;
    const next: Mutable<JobRecord> = { ...record, state: 'queued', attempt: 0, updatedAt: now };
    delete next.reason;
    delete next.finishedAt;
    next.history = appendHistory(
      record.history,
      { what: 'queued', when: now, detail: 'replayed from the archive' },
      this.settings.historyLimit,
    );
    this.put(next);
  }
}

function pickRef(r: JobRef): JobRef {
  return { jobId: r.jobId, task: r.task, queue: r.queue, version: r.version, publishedAt: r.publishedAt };
}

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
}

import { archiveTakeOf, mayCloseFence, openFence } from '../policy/archive-fences';
import { dueShardOf } from '../policy/due-times';
import {
  appendHistory,
  historyOf,
  isParked,
  type JobStoreSettings,
  permits,
  TERMINAL_STATES,
  TIMED_OUT_ONLY,
  uniqueItemKey,
} from '../policy/job-rules';
import type {
  AddDependentResult,
  ArchiveFence,
  ArchiveTake,
  AttemptPark,
  CancelRequests,
  CancelResult,
  ClaimHandBack,
  ClaimRequest,
  ClaimResult,
  Completed,
  Completion,
  DebounceCycle,
  DebouncePublish,
  DebounceWrite,
  DeduplicatedJob,
  DependencyCount,
  DependentEdge,
  HistoryEntry,
  JobIdentity,
  JobQuery,
  JobRecord,
  JobRef,
  ParkedJob,
  ParkRequest,
  ParkResult,
  ProgressWrite,
  Rejection,
  ScheduleRequest,
  ScheduleTicks,
  StepWrite,
  TokenCompletion,
  UnclaimedOutcome,
  UnclaimedResult,
  UniqueHold,
  UniqueTake,
  UniqueWrite,
  WaitRequest,
  WaitResult,
} from '../track/job-record';
import {
  ATTEMPT_ONLY,
  broughtForward,
  CANCELLATIONS_KEPT_MS,
  MAX_FILED_REJECTIONS,
  parkedAs,
  stepEntryOf,
  tokenCompletable,
  tokenHistory,
  tokenJob,
  tokenRefusal,
} from '../track/job-record';
import type { JobStore, KeyOrder, LineEntry } from '../track/job-stores';
import type { ArchiveReason } from '../wire/archive-reasons';
import type { EventRef } from '../wire/event-ref';
import { MemoryDebounces } from './memory-debounces';
import { MemoryDependencyCounts } from './memory-dependency-counts';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * In-memory jobs table with the DynamoDB adapter's conditions and results; the job-store
 * conformance suite holds both to the same behaviour. Each write checks the transition table
 * (`permits`) and caps the history. `writes` counts conditional writes the way DynamoDB bills
 * them (one per write request, item size aside).
 */
export class MemoryJobStore implements JobStore {
  private readonly jobs = new Map<string, JobRecord>();
  /** What the DynamoDB item of a parked job carries beside its record: its body, shard and sweep lease. */
  private readonly parked = new Map<string, { job: ParkedJob; shard: string; sweepLease?: number }>();
  /** A waiting job's body, kept until it is released. */
  private readonly waitingBodies = new Map<string, { body: string; attributes?: Readonly<Record<string, string>> }>();
  /** tag → job id → when it was tagged. */
  private readonly tagged = new Map<string, Map<string, number>>();
  /** The holds of unique keys: `<task> unique <key>` → its hold, as the DynamoDB items are keyed. */
  private readonly holds = new Map<string, UniqueHold>();
  /** Ordered tasks' keys: `<task> <key>` → counter, next and gap note. */
  private readonly orders = new Map<string, { last: number; next: number; gapAt?: number; gapSince?: number; movedAt?: number }>();
  private readonly ticks = new Map<string, ScheduleTicks>();
  /** The cancellations item. */
  private cancelRequests: CancelRequests = { version: 0, requests: {} };
  writes = 0;
  /** Reads of the cancellations item (what a dispatcher's cancel watch costs). */
  cancellationReads = 0;

  /** Dependency counts (lib/fakes/memory-dependency-counts.ts). */
  private readonly counts = new MemoryDependencyCounts(() => {
    this.writes += 1;
  });
  /** Debounce cycles and the bodies of closed ones (lib/fakes/memory-debounces.ts). */
  private readonly debounces = new MemoryDebounces(() => {
    this.writes += 1;
  });

  constructor(private readonly settings: JobStoreSettings) {}

  debounce(publish: DebouncePublish, over?: Pick<DebounceCycle, 'pending' | 'seq'>): Promise<DebounceWrite> {
    return this.debounces.debounce(publish, over);
  }
  debounceCycle(task: string, key: string): Promise<DebounceCycle | undefined> {
    return this.debounces.debounceCycle(task, key);
  }
  keepDebouncedBody(cycle: DebounceCycle, now: number): Promise<boolean> {
    return this.debounces.keepDebouncedBody(cycle, now);
  }
  debouncedBody(jobId: string): Promise<string | undefined> {
    return this.debounces.debouncedBody(jobId);
  }
  closeDebounce(task: string, key: string, cycle: Pick<DebounceCycle, 'pending'> & { readonly seq?: number }): Promise<boolean> {
    return this.debounces.closeDebounce(task, key, cycle);
  }

  async cancellations(): Promise<CancelRequests> {
    this.cancellationReads += 1;
    return structuredClone(this.cancelRequests);
  }

  private put(record: JobRecord): JobRecord {
    this.writes += 1;
    this.jobs.set(record.jobId, structuredClone(record));
    return structuredClone(record);
  }

  private history(record: Pick<JobRecord, 'history'> | undefined, entry: HistoryEntry): HistoryEntry[] {
    return appendHistory(record?.history ?? [], entry, this.settings.historyLimit);
  }

  async recordQueued(job: JobRef, now: number): Promise<boolean> {
    if (permits('queue', this.jobs.get(job.jobId)) !== 'ok') return false;
    this.put({ ...pickRef(job), state: 'queued', attempt: 0, updatedAt: now, history: [{ what: 'queued', when: now }] });
    return true;
  }

  async recordScheduled(job: ScheduleRequest, now: number): Promise<boolean> {
    if (permits('schedule', this.jobs.get(job.jobId)) !== 'ok') return false;
    this.put({
      ...pickRef(job),
      state: 'scheduled',
      attempt: 0,
      runAt: job.runAt,
      announced: true,
      updatedAt: now,
      history: [{ what: 'scheduled', when: now, detail: `due ${new Date(job.runAt).toISOString()}` }],
    });
    return true;
  }

  async claim(r: ClaimRequest): Promise<ClaimResult> {
    const prior = this.jobs.get(r.jobId);
    const fresh = permits('claim', prior, r, r.now);
    const takeOver = fresh === 'state' && permits('takeOver', prior, r) === 'ok' && (prior?.leaseUntil ?? 0) < r.now;
    if (fresh !== 'ok' && !takeOver) {
      const record = structuredClone(prior as JobRecord);
      if (fresh === 'conflict') return { outcome: 'conflict', record };
      return record.state === 'running' ? { outcome: 'leased', record } : { outcome: 'finished', record };
    }
    const attempt = (prior?.attempt ?? 0) + 1;
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
    if (r.memberOf) base.memberOf = r.memberOf;
    if (r.event) base.event = { ...r.event };
    if (r.payload !== undefined && prior?.payload === undefined) base.payload = r.payload;
    delete base.announced;
    if (r.claimId) base.leaseClaim = r.claimId;
    else delete base.leaseClaim;
    this.parked.delete(r.jobId);
    base.history = this.history(prior, { what: takeOver ? 'took-over' : 'started', when: r.now, worker: r.workerId, attempt });
    const record = this.put(base);
    return { outcome: 'claimed', token: attempt, record };
  }

  async extendLease(jobId: string, token: number, leaseUntil: number, now: number, progress?: ProgressWrite): Promise<boolean> {
    const record = this.jobs.get(jobId);
    if (permits('heartbeat', record) !== 'ok' || record?.attempt !== token || record.cancelRequestedAt !== undefined) return false;
    this.put({ ...record, leaseUntil, updatedAt: now, ...(progress ? { progress: progress.json, progressAt: progress.at } : {}) });
    return true;
  }

  async keepStep(jobId: string, token: number, step: StepWrite, now: number): Promise<boolean> {
    const record = this.jobs.get(jobId);
    if (permits('heartbeat', record) !== 'ok' || record?.attempt !== token || record.cancelRequestedAt !== undefined) return false;
    if ((record.steps?.length ?? 0) !== step.index || (step.index === 0 && record.steps !== undefined)) return false;
    this.put({ ...record, steps: [...(record.steps ?? []), stepEntryOf(step, token, now)], updatedAt: now });
    return true;
  }

  async handBackClaim(h: ClaimHandBack): Promise<boolean> {
    const record = this.jobs.get(h.jobId);
    if (permits('handBack', record) !== 'ok' || record?.attempt !== h.token) return false;
    const next: Mutable<JobRecord> = { ...record, state: 'queued', parks: (record.parks ?? 0) + 1, updatedAt: h.now };
    for (const field of ATTEMPT_ONLY) delete next[field];
    if (h.firstStart) delete next.firstStartedAt;
    next.history = this.history(record, { what: 'handed-back', when: h.now, worker: h.workerId, attempt: h.token, detail: h.detail });
    this.put(next);
    return true;
  }

  async parkAttempt(p: AttemptPark): Promise<boolean> {
    const record = this.jobs.get(p.jobId);
    if (permits('parkAttempt', record) !== 'ok' || record?.attempt !== p.token || record.cancelRequestedAt !== undefined) return false;
    const count = record.steps?.length ?? 0;
    if (p.step && count !== p.step.index) return false;
    const waited = p.waitToken !== undefined ? tokenJob(p.waitToken) : undefined;
    const waitStep = record.steps?.[waited?.index ?? -1];
    // A wait completed before its park (the completion came while the attempt was settling): not parked on.
    if (p.waitToken !== undefined && (waitStep?.wait?.token !== p.waitToken || waitStep.completedAt !== undefined)) return false;
    const next: Mutable<JobRecord> = {
      ...record,
      state: p.state,
      runAt: p.runAt,
      parks: (record.parks ?? 0) + 1,
      updatedAt: p.now,
      ...(p.step ? { steps: [...(record.steps ?? []), stepEntryOf(p.step, p.token, p.now)] } : {}),
    };
    for (const field of ATTEMPT_ONLY) delete next[field];
    if (p.waitToken !== undefined) next.waitToken = p.waitToken;
    next.history = this.history(record, { what: p.state, when: p.now, worker: p.workerId, attempt: p.token, detail: p.detail });
    this.put(next);
    const job: ParkedJob = {
      jobId: p.jobId,
      queue: record.queue,
      runAt: p.runAt,
      body: p.body,
      ...(p.attributes ? { attributes: p.attributes } : {}),
    };
    this.parked.set(p.jobId, { job, shard: dueShardOf(p.jobId) });
    return true;
  }

  async completeToken(token: string, value: string | undefined, now: number, by?: EventRef): Promise<TokenCompletion> {
    const named = tokenJob(token);
    const record = named ? this.jobs.get(named.jobId) : undefined;
    const step = named ? record?.steps?.[named.index] : undefined;
    if (!named || !record || !step || !tokenCompletable(token, record)) return tokenRefusal(token, record && structuredClone(record));
    const steps = [...(record.steps ?? [])];
    steps[named.index] = { ...step, completedAt: now, ...(value !== undefined ? { result: value } : {}) };
    const parked = this.parked.get(named.jobId);
    if (parked && record.state !== 'running') parked.job = { ...parked.job, runAt: now };
    this.put({
      ...record,
      steps,
      runAt: now,
      updatedAt: now,
      history: this.history(record, tokenHistory(step.name, now, by)),
    });
    const due = parked && record.state !== 'running' ? structuredClone(parked.job) : undefined;
    return { outcome: 'completed', jobId: named.jobId, ...(due ? { parked: due } : {}) };
  }

  async complete(c: Completion, claimed: JobRecord): Promise<Completed> {
    const record = this.jobs.get(c.jobId);
    if (permits('complete', record) !== 'ok' || record?.attempt !== c.token) return { landed: false, dependents: [] };
    const next: Mutable<JobRecord> = { ...record, state: c.state, updatedAt: c.now };
    delete next.leaseOwner;
    delete next.leaseUntil;
    delete next.leaseClaim;
    if (c.state !== 'retrying') next.finishedAt = c.now;
    if (c.state === 'retrying' && c.retryAfter) next.retryAfters = (record.retryAfters ?? 0) + 1;
    if (c.reason) next.reason = c.reason;
    if (c.error) next.lastError = c.error;
    if (c.result !== undefined) next.result = c.result;
    if (c.resultBytes !== undefined) next.resultBytes = c.resultBytes;
    if (c.resultRef !== undefined) next.resultRef = c.resultRef;
    if (c.state === 'archived') Object.assign(next, openFence(c.archiving));
    next.history = this.history(claimed, historyOf(c));
    this.put(next);
    return { landed: true, dependents: structuredClone(record.dependents ?? []) };
  }

  async recordUnclaimed(o: UnclaimedOutcome): Promise<UnclaimedResult> {
    const prior = this.jobs.get(o.jobId);
    const verdict = permits(o.state === 'succeeded' ? 'unclaimedSuccess' : 'unclaimedFailure', prior, o);
    if (verdict !== 'ok') return verdict === 'conflict' ? 'conflict' : 'ignored';
    const next: Mutable<JobRecord> = {
      ...(prior ?? { history: [] }),
      ...pickRef(o),
      jobId: o.jobId,
      state: o.state,
      attempt: o.attempt,
      updatedAt: o.now,
      publishedAt: prior?.publishedAt ?? o.publishedAt,
    } as JobRecord;
    if (o.error) next.lastError = o.error;
    if (o.reason) next.reason = o.reason;
    if (o.state !== 'retrying') next.finishedAt = o.now;
    if (o.state === 'archived') Object.assign(next, openFence(o.archiving));
    next.history = this.history(prior, {
      what: o.state,
      when: o.now,
      worker: o.workerId,
      attempt: o.attempt,
      ...(o.reason ? { detail: o.reason } : {}),
    });
    this.put(next);
    return 'recorded';
  }

  async recordRejected(r: Rejection): Promise<boolean> {
    if (permits('reject', this.jobs.get(r.jobId)) !== 'ok') return false;
    this.put({
      ...pickRef(r),
      state: 'archived',
      reason: r.reason,
      attempt: r.attempt,
      lastError: r.error,
      updatedAt: r.now,
      finishedAt: r.now,
      ...(r.envelopeId !== undefined ? { envelopeId: r.envelopeId } : {}),
      ...openFence(r.archiving),
      history: [{ what: 'archived', when: r.now, worker: r.workerId, attempt: r.attempt, detail: r.reason }],
    });
    // The DynamoDB store's pointer item under the envelope id (found here by filtering).
    if (r.envelopeId !== undefined) this.writes += 1;
    return true;
  }

  async takeArchive(jobId: string, fence: ArchiveFence, now: number): Promise<ArchiveTake> {
    const record = this.jobs.get(jobId);
    const take = archiveTakeOf(record, fence.holder, now);
    // The fence alone changes: the record's own times stay those of its end.
    if (take.outcome === 'taken') this.put({ ...(record as JobRecord), ...openFence(fence) });
    return take;
  }

  async markArchived(jobId: string, holder: string): Promise<boolean> {
    const record = this.jobs.get(jobId);
    if (!record || !mayCloseFence(record, holder)) return false;
    const { archiveHolder: _holder, archiveUntil: _until, ...closed } = record;
    this.put(closed);
    return true;
  }

  async lapseArchive(jobId: string, holder: string, at: number): Promise<boolean> {
    const record = this.jobs.get(jobId);
    if (!record || !mayCloseFence(record, holder)) return false;
    this.put({ ...record, archiveUntil: at });
    return true;
  }

  async rejectionsFor(envelopeId: string): Promise<JobRecord[]> {
    return [...this.jobs.values()]
      .filter((r) => r.envelopeId === envelopeId && r.jobId !== envelopeId && r.state === 'archived')
      .sort((a, b) => b.updatedAt - a.updatedAt)
      .slice(0, MAX_FILED_REJECTIONS)
      .map((r) => structuredClone(r));
  }

  async scheduleTicks(schedule: string): Promise<ScheduleTicks | undefined> {
    const ticks = this.ticks.get(schedule);
    return ticks ? { ...ticks } : undefined;
  }

  async noteTick(
    schedule: string,
    at: number,
    counts: { readonly missed: number; readonly caughtUp: number },
    now: number,
  ): Promise<boolean> {
    const ticks = this.ticks.get(schedule) ?? { schedule, missed: 0, caughtUp: 0, skipped: 0 };
    if (ticks.lastTick !== undefined && ticks.lastTick >= at) return false;
    this.writes += 1;
    this.ticks.set(schedule, {
      ...ticks,
      lastTick: at,
      missed: ticks.missed + counts.missed,
      caughtUp: ticks.caughtUp + counts.caughtUp,
      ...(counts.missed > 0 ? { lastMissedAt: now } : {}),
    });
    return true;
  }

  async countSkipped(schedule: string, now: number): Promise<void> {
    const ticks = this.ticks.get(schedule) ?? { schedule, missed: 0, caughtUp: 0, skipped: 0 };
    this.writes += 1;
    this.ticks.set(schedule, { ...ticks, skipped: ticks.skipped + 1, lastSkippedAt: now });
  }

  async holdKey(take: UniqueTake, over?: UniqueHold): Promise<UniqueWrite> {
    const id = uniqueItemKey(take.task, take.key);
    const current = this.holds.get(id);
    const free = over
      ? current !== undefined && current.holder === over.holder && current.takenAt === over.takenAt
      : current === undefined || current.until <= take.now || current.holder === take.jobId;
    if (!free) return { landed: false, hold: current ? { ...current } : undefined };
    this.writes += 1;
    this.holds.set(id, { holder: take.jobId, from: take.from, until: take.until, takenAt: take.now });
    return { landed: true };
  }

  async releaseKey(task: string, key: string, jobId: string): Promise<void> {
    const id = uniqueItemKey(task, key);
    if (this.holds.get(id)?.holder !== jobId) return;
    this.writes += 1;
    this.holds.delete(id);
  }

  async recordDeduplicated(job: DeduplicatedJob): Promise<boolean> {
    if (permits('deduplicate', this.jobs.get(job.jobId)) !== 'ok') return false;
    this.put({
      ...pickRef(job),
      state: 'deduplicated',
      attempt: 0,
      duplicateOf: job.duplicateOf,
      updatedAt: job.now,
      finishedAt: job.now,
      history: [{ what: 'deduplicated', when: job.now, worker: job.workerId, detail: job.detail ?? `joined ${job.duplicateOf}` }],
    });
    return true;
  }

  async recordDuplicate(jobId: string, identity: JobIdentity, workerId: string, now: number): Promise<void> {
    const record = this.jobs.get(jobId);
    if (!record || permits('duplicate', record, identity) !== 'ok') return;
    this.put({ ...record, history: this.history(record, { what: 'skipped-duplicate', when: now, worker: workerId }) });
  }

  async get(jobId: string): Promise<JobRecord | undefined> {
    const record = this.jobs.get(jobId);
    return record ? structuredClone(record) : undefined;
  }

  async list(q: JobQuery): Promise<JobRecord[]> {
    return [...this.jobs.values()]
      .filter(
        (r) =>
          r.state === q.state &&
          q.queues.includes(r.queue) &&
          (q.task === undefined || r.task === q.task) &&
          (q.key === undefined || r.key === q.key) &&
          (q.updatedAtMost === undefined || r.updatedAt <= q.updatedAtMost),
      )
      .sort((a, b) => b.updatedAt - a.updatedAt)
      .slice(0, q.limit)
      .map((r) => structuredClone(r));
  }

  async resetForReplay(jobId: string, identity: JobIdentity, now: number): Promise<boolean> {
    const record = this.jobs.get(jobId);
    if (!record || permits('replay', record, identity) !== 'ok') return false;
    const next: Mutable<JobRecord> = { ...record, state: 'queued', attempt: 0, updatedAt: now };
    delete next.reason;
    delete next.finishedAt;
    delete next.releasedAt;
    // Its attempts start over, and so do the counts taken from them (attempts used = attempt − retryAfters − parks).
    delete next.retryAfters;
    delete next.parks;
    // Replayed from the archive: it holds the message, whatever fence was left open.
    delete next.archiveHolder;
    delete next.archiveUntil;
    next.history = this.history(record, { what: 'queued', when: now, detail: 'replayed from the archive' });
    this.put(next);
    return true;
  }
  async park(r: ParkRequest): Promise<ParkResult> {
    const prior = this.jobs.get(r.jobId);
    const verdict = permits('park', prior, r);
    if (verdict !== 'ok') return { outcome: verdict === 'conflict' ? 'conflict' : 'exists', record: structuredClone(prior as JobRecord) };
    const { announced: _announced, ...kept } = prior ?? ({} as Partial<JobRecord>);
    const { state, entry } = parkedAs(r);
    this.put({
      ...kept,
      ...pickRef(r),
      state,
      // A claim handed back unstarted keeps the attempts it counted (see DynamoJobSchedules.park).
      attempt: prior?.attempt ?? 0,
      runAt: r.runAt,
      updatedAt: r.now,
      history: this.history(prior, entry),
    });
    const job: ParkedJob = {
      jobId: r.jobId,
      queue: r.queue,
      runAt: r.runAt,
      body: r.body,
      ...(r.attributes ? { attributes: r.attributes } : {}),
    };
    this.parked.set(r.jobId, { job, shard: dueShardOf(r.jobId) });
    return { outcome: 'parked' };
  }

  async dueJobs(shard: string, until: number, now: number, limit: number): Promise<ParkedJob[]> {
    return (
      [...this.parked.values()]
        .filter((p) => p.shard === shard && p.job.runAt <= until && (p.sweepLease ?? 0) < now)
        // A token wait is sent at its timeout, not ahead: until then a completion may still resume it.
        .filter((p) => !TIMED_OUT_ONLY.includes(this.jobs.get(p.job.jobId)?.state ?? 'queued') || p.job.runAt <= now)
        .sort((a, b) => a.job.runAt - b.job.runAt)
        .slice(0, limit)
        .map((p) => structuredClone(p.job))
    );
  }

  async parkedJob(jobId: string): Promise<ParkedJob | undefined> {
    const parked = this.parked.get(jobId);
    const record = this.jobs.get(jobId);
    return parked && isParked(record) ? structuredClone(parked.job) : undefined;
  }

  async bringForward(parked: ParkedJob, body: string, now: number, why?: string): Promise<boolean> {
    const record = this.jobs.get(parked.jobId);
    const kept = this.parked.get(parked.jobId);
    if (permits('bringForward', record) !== 'ok' || !record || !kept) return false;
    if (kept.job.runAt !== parked.runAt || (kept.sweepLease ?? 0) >= now) return false;
    kept.job = { ...kept.job, runAt: now, body };
    this.put({
      ...record,
      runAt: now,
      updatedAt: now,
      history: this.history(record, { what: 'scheduled', when: now, detail: broughtForward(parked, why) }),
    });
    return true;
  }

  async leaseForSweep(jobId: string, now: number, leaseUntil: number): Promise<boolean> {
    const parked = this.parked.get(jobId);
    if (permits('sweep', this.jobs.get(jobId)) !== 'ok' || !parked || (parked.sweepLease ?? 0) >= now) return false;
    this.writes += 1;
    parked.sweepLease = leaseUntil;
    return true;
  }

  async handOver(jobId: string, leaseUntil: number, now: number): Promise<boolean> {
    const record = this.jobs.get(jobId);
    if (permits('handOver', record) !== 'ok' || this.parked.get(jobId)?.sweepLease !== leaseUntil) return false;
    this.parked.delete(jobId);
    this.put({
      ...(record as JobRecord),
      state: 'queued',
      updatedAt: now,
      history: this.history(record, { what: 'queued', when: now, detail: 'due: sent to its queue' }),
    });
    return true;
  }

  async cancel(jobId: string, now: number): Promise<CancelResult> {
    const record = this.jobs.get(jobId);
    if (!record) return { outcome: 'unknown' };
    if (permits('requestCancel', record) === 'ok') {
      const asked = record.cancelRequestedAt ?? now;
      const next =
        record.cancelRequestedAt === undefined
          ? this.put({
              ...record,
              cancelRequestedAt: asked,
              updatedAt: now,
              history: this.history(record, { what: 'cancel-requested', when: now }),
            })
          : structuredClone(record);
      this.writes += 1;
      const requests = Object.fromEntries(
        Object.entries(this.cancelRequests.requests).filter(([, at]) => at > now - CANCELLATIONS_KEPT_MS),
      );
      this.cancelRequests = { version: this.cancelRequests.version + 1, requests: { ...requests, [jobId]: asked } };
      return { outcome: 'requested', record: next };
    }
    if (permits('cancel', record) !== 'ok') return { outcome: 'not-scheduled', record: structuredClone(record) };
    this.parked.delete(jobId);
    this.waitingBodies.delete(jobId);
    const next = this.put({
      ...record,
      state: 'cancelled',
      updatedAt: now,
      finishedAt: now,
      history: this.history(record, { what: 'cancelled', when: now }),
    });
    return { outcome: 'cancelled', record: next };
  }

  async wait(r: WaitRequest): Promise<WaitResult> {
    const prior = this.jobs.get(r.jobId);
    const verdict = permits('wait', prior, r);
    if (verdict !== 'ok') return { outcome: verdict === 'conflict' ? 'conflict' : 'exists', record: structuredClone(prior as JobRecord) };
    this.put({
      ...(prior ?? {}),
      ...pickRef(r),
      state: 'waiting',
      attempt: 0,
      updatedAt: r.now,
      onDependencyFailure: r.onDependencyFailure,
      ...(r.dependsOn ? { dependsOn: [...r.dependsOn] } : {}),
      ...(r.awaits !== undefined ? { awaits: r.awaits } : {}),
      ...(r.tags ? { tags: [...r.tags] } : {}),
      history: this.history(prior, { what: 'waiting', when: r.now, worker: r.workerId }),
    });
    this.waitingBodies.set(r.jobId, { body: r.body, ...(r.attributes ? { attributes: r.attributes } : {}) });
    return { outcome: 'waiting' };
  }

  async addDependent(dependencyId: string, edge: DependentEdge, _now: number): Promise<AddDependentResult> {
    const record = this.jobs.get(dependencyId);
    if (!record || permits('addDependent', record) !== 'ok') return { outcome: 'unknown' };
    const dependents = record.dependents ?? [];
    const next = dependents.some((d) => d.id === edge.id && d.index === edge.index)
      ? record
      : { ...record, dependents: [...dependents, { ...edge }] };
    if (next !== record) this.put(next);
    return TERMINAL_STATES.includes(next.state) ? { outcome: 'ended', record: structuredClone(next) } : { outcome: 'added' };
  }

  async countDependency(edge: DependentEdge, dependencyId: string, failed: boolean): Promise<DependencyCount> {
    return this.counts.count(edge, dependencyId, failed);
  }

  async dependencyCount(dependentId: string): Promise<DependencyCount> {
    return this.counts.read(dependentId);
  }

  async release(dependentId: string, now: number): Promise<ParkedJob | undefined> {
    const record = this.jobs.get(dependentId);
    const waiting = this.waitingBodies.get(dependentId);
    if (permits('release', record) !== 'ok' || !record || !waiting) return undefined;
    this.waitingBodies.delete(dependentId);
    this.put({
      ...record,
      state: 'scheduled',
      runAt: now,
      releasedAt: now,
      updatedAt: now,
      history: this.history(record, { what: 'released', when: now, detail: 'its dependencies ended' }),
    });
    const job: ParkedJob = { jobId: dependentId, queue: record.queue, runAt: now, ...waiting };
    this.parked.set(dependentId, { job, shard: dueShardOf(dependentId) });
    return structuredClone(job);
  }

  async failWaiting(dependentId: string, reason: ArchiveReason, detail: string, now: number): Promise<JobRecord | undefined> {
    const record = this.jobs.get(dependentId);
    if (permits('failWaiting', record) !== 'ok' || !record) return undefined;
    // The body stays: should the failed dependency be replayed, the job waits again.

    return this.put({
      ...record,
      state: 'archived',
      reason,
      lastError: { type: 'DependencyError', message: detail },
      updatedAt: now,
      finishedAt: now,
      history: this.history(record, { what: 'archived', when: now, detail: `${reason}: ${detail}` }),
    });
  }

  async tagJob(jobId: string, tags: readonly string[], taggedAt: number): Promise<void> {
    for (const tag of tags) {
      this.writes += 1;
      const jobs = this.tagged.get(tag) ?? new Map<string, number>();
      jobs.set(jobId, jobs.get(jobId) ?? taggedAt);
      this.tagged.set(tag, jobs);
    }
  }

  async jobsByTag(tag: string, limit: number, before?: number): Promise<JobRecord[]> {
    const ids = [...(this.tagged.get(tag) ?? new Map<string, number>())]
      .filter(([, at]) => before === undefined || at < before)
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([id]) => id);
    return this.getMany(ids);
  }

  async oldestByTag(tag: string, limit: number): Promise<JobRecord[]> {
    const ids = [...(this.tagged.get(tag) ?? new Map<string, number>())]
      .sort((a, b) => a[1] - b[1])
      .slice(0, limit)
      .map(([id]) => id);
    return this.getMany(ids);
  }

  async takeNumbers(task: string, key: string, count: number, now: number): Promise<number> {
    this.writes += 1;
    const order = this.orderOf(task, key);
    order.last += count;
    order.movedAt ??= now;
    return order.last;
  }

  async keyOrder(task: string, key: string): Promise<KeyOrder> {
    const { last, next, gapAt, gapSince, movedAt } = this.orderOf(task, key);
    return {
      last,
      next,
      ...(gapAt === next && gapSince !== undefined ? { gapSince } : {}),
      ...(movedAt !== undefined ? { movedAt } : {}),
    };
  }

  async advanceOrder(task: string, key: string, from: number, now: number): Promise<boolean> {
    const order = this.orderOf(task, key);
    if (order.next !== from) return false;
    this.writes += 1;
    order.next = from + 1;
    order.movedAt = now;
    return true;
  }

  async noteGap(task: string, key: string, at: number, now: number): Promise<number | undefined> {
    const order = this.orderOf(task, key);
    if (order.next !== at) return undefined;
    if (order.gapAt !== at) {
      this.writes += 1;
      order.gapAt = at;
      order.gapSince = now;
    }
    return order.gapSince;
  }

  async lineEntries(tag: string, limit: number): Promise<LineEntry[]> {
    const entries = [...(this.tagged.get(tag) ?? new Map<string, number>())].sort((a, b) => a[1] - b[1]).slice(0, limit);
    return entries.map(([jobId, at]) => ({ jobId, at }));
  }

  private orderOf(task: string, key: string): { last: number; next: number; gapAt?: number; gapSince?: number; movedAt?: number } {
    const id = `${task} ${key}`;
    const order = this.orders.get(id) ?? { last: 0, next: 1 };
    this.orders.set(id, order);
    return order;
  }

  async untagJob(jobId: string, tags: readonly string[]): Promise<void> {
    for (const tag of tags) {
      this.writes += 1;
      this.tagged.get(tag)?.delete(jobId);
    }
  }

  async uncountFailure(edge: DependentEdge, dependencyId: string): Promise<{ readonly stillFailed: boolean }> {
    return this.counts.uncountFailure(edge, dependencyId);
  }

  async reopen(dependentId: string, now: number): Promise<JobRecord | undefined> {
    const record = this.jobs.get(dependentId);
    if (permits('reopen', record) !== 'ok' || !record || !this.waitingBodies.has(dependentId)) return undefined;
    const next: Mutable<JobRecord> = {
      ...record,
      state: 'waiting',
      updatedAt: now,
      history: this.history(record, { what: 'waiting', when: now, detail: 'a failed dependency was replayed' }),
    };
    delete next.reason;
    delete next.finishedAt;
    return this.put(next);
  }

  async getMany(jobIds: readonly string[]): Promise<JobRecord[]> {
    return jobIds
      .map((id) => this.jobs.get(id))
      .filter((r): r is JobRecord => r !== undefined)
      .map((r) => structuredClone(r));
  }
}

function pickRef(r: JobRef): JobRef {
  return {
    jobId: r.jobId,
    task: r.task,
    payloadDigest: r.payloadDigest,
    queue: r.queue,
    version: r.version,
    publishedAt: r.publishedAt,
    ...(r.tags && r.tags.length > 0 ? { tags: [...r.tags] } : {}),
    ...(r.startBy !== undefined ? { startBy: r.startBy } : {}),
    ...(r.key !== undefined ? { key: r.key } : {}),
    ...(r.seq !== undefined ? { seq: r.seq } : {}),
  };
}

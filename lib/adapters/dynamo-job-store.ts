import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { JobStoreSettings } from '../policy/job-rules';
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
import type { JobStore, KeyOrder, LineEntry } from '../track/job-stores';
import type { ArchiveReason } from '../wire/archive-reasons';
import type { EventRef } from '../wire/event-ref';
import { DynamoJobClaims } from './dynamo-job-claims';
import { DynamoJobDebounces } from './dynamo-job-debounces';
import { DynamoJobFlows } from './dynamo-job-flows';
import { DynamoJobOrders } from './dynamo-job-orders';
import { DynamoJobQueries } from './dynamo-job-queries';
import { DynamoJobSchedules } from './dynamo-job-schedules';
import { type CapacityMeter, DynamoJobTable } from './dynamo-job-table';
import { DynamoJobUniques } from './dynamo-job-uniques';
import { DynamoScheduleTicks } from './dynamo-schedule-ticks';

/**
 * {@link JobStore} on a DynamoDB table (layout in lib/layout/tables.ts). Every write is one
 * conditional UpdateItem whose condition is the write's row of `TRANSITIONS` (the states it may
 * start from, and the job's identity where it must match); a failed condition returns the old
 * item, so classifying a duplicate or a conflict costs no extra read. A write that appends to a
 * history past `historyLimit` is followed by one that trims it (jobs with that many transitions only).
 * Its parts by role share one table: claim and complete, schedule and sweep, flows, queries.
 */
export class DynamoJobStore implements JobStore {
  /** Read and write units its calls consumed (the tracking benchmark reads them). */
  readonly capacity: CapacityMeter;
  private readonly table: DynamoJobTable;
  private readonly claims: DynamoJobClaims;
  private readonly schedules: DynamoJobSchedules;
  private readonly flows: DynamoJobFlows;
  private readonly queries: DynamoJobQueries;
  private readonly uniques: DynamoJobUniques;
  private readonly orders: DynamoJobOrders;
  private readonly debounces: DynamoJobDebounces;
  private readonly ticks: DynamoScheduleTicks;

  constructor(
    tableName: string,
    settings: JobStoreSettings,
    /** Its client (the dispatcher meters it: lib/adapters/usage-meter.ts). */
    readonly dynamo: DynamoDBClient,
  ) {
    this.table = new DynamoJobTable(tableName, settings, dynamo);
    this.capacity = this.table.capacity;
    this.claims = new DynamoJobClaims(this.table);
    this.schedules = new DynamoJobSchedules(this.table);
    this.flows = new DynamoJobFlows(this.table);
    this.queries = new DynamoJobQueries(this.table);
    this.uniques = new DynamoJobUniques(this.table);
    this.orders = new DynamoJobOrders(this.table);
    this.debounces = new DynamoJobDebounces(this.table);
    this.ticks = new DynamoScheduleTicks(this.table);
  }

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

  scheduleTicks(schedule: string): Promise<ScheduleTicks | undefined> {
    return this.ticks.scheduleTicks(schedule);
  }

  noteTick(schedule: string, at: number, counts: { readonly missed: number; readonly caughtUp: number }, now: number): Promise<boolean> {
    return this.ticks.noteTick(schedule, at, counts, now);
  }

  countSkipped(schedule: string, now: number): Promise<void> {
    return this.ticks.countSkipped(schedule, now);
  }

  holdKey(take: UniqueTake, over?: UniqueHold): Promise<UniqueWrite> {
    return this.uniques.holdKey(take, over);
  }

  releaseKey(task: string, key: string, jobId: string): Promise<void> {
    return this.uniques.releaseKey(task, key, jobId);
  }

  recordDeduplicated(job: DeduplicatedJob): Promise<boolean> {
    return this.uniques.recordDeduplicated(job);
  }

  recordQueued(job: JobRef, now: number): Promise<boolean> {
    return this.claims.recordQueued(job, now);
  }

  recordScheduled(job: ScheduleRequest, now: number): Promise<boolean> {
    return this.claims.recordScheduled(job, now);
  }

  claim(request: ClaimRequest): Promise<ClaimResult> {
    return this.claims.claim(request);
  }

  extendLease(jobId: string, token: number, leaseUntil: number, now: number, progress?: ProgressWrite): Promise<boolean> {
    return this.claims.extendLease(jobId, token, leaseUntil, now, progress);
  }

  keepStep(jobId: string, token: number, step: StepWrite, now: number): Promise<boolean> {
    return this.claims.keepStep(jobId, token, step, now);
  }

  parkAttempt(park: AttemptPark): Promise<boolean> {
    return this.claims.parkAttempt(park);
  }

  handBackClaim(handBack: ClaimHandBack): Promise<boolean> {
    return this.claims.handBackClaim(handBack);
  }

  completeToken(token: string, value: string | undefined, now: number, by?: EventRef): Promise<TokenCompletion> {
    return this.schedules.completeToken(token, value, now, by);
  }

  complete(completion: Completion, claimed: JobRecord): Promise<Completed> {
    return this.claims.complete(completion, claimed);
  }

  recordUnclaimed(outcome: UnclaimedOutcome): Promise<UnclaimedResult> {
    return this.claims.recordUnclaimed(outcome);
  }

  recordRejected(rejection: Rejection): Promise<boolean> {
    return this.claims.recordRejected(rejection);
  }

  takeArchive(jobId: string, fence: ArchiveFence, now: number): Promise<ArchiveTake> {
    return this.claims.takeArchive(jobId, fence, now);
  }

  markArchived(jobId: string, holder: string): Promise<boolean> {
    return this.claims.markArchived(jobId, holder);
  }

  lapseArchive(jobId: string, holder: string, at: number): Promise<boolean> {
    return this.claims.lapseArchive(jobId, holder, at);
  }

  rejectionsFor(envelopeId: string): Promise<JobRecord[]> {
    return this.claims.rejectionsFor(envelopeId);
  }

  recordDuplicate(jobId: string, identity: JobIdentity, workerId: string, now: number): Promise<void> {
    return this.claims.recordDuplicate(jobId, identity, workerId, now);
  }

  resetForReplay(jobId: string, identity: JobIdentity, now: number): Promise<boolean> {
    return this.claims.resetForReplay(jobId, identity, now);
  }

  park(request: ParkRequest): Promise<ParkResult> {
    return this.schedules.park(request);
  }

  dueJobs(shard: string, until: number, now: number, limit: number): Promise<ParkedJob[]> {
    return this.schedules.dueJobs(shard, until, now, limit);
  }

  parkedJob(jobId: string): Promise<ParkedJob | undefined> {
    return this.schedules.parkedJob(jobId);
  }

  bringForward(parked: ParkedJob, body: string, now: number, why?: string): Promise<boolean> {
    return this.schedules.bringForward(parked, body, now, why);
  }

  leaseForSweep(jobId: string, now: number, leaseUntil: number): Promise<boolean> {
    return this.schedules.leaseForSweep(jobId, now, leaseUntil);
  }

  handOver(jobId: string, leaseUntil: number, now: number): Promise<boolean> {
    return this.schedules.handOver(jobId, leaseUntil, now);
  }

  cancel(jobId: string, now: number): Promise<CancelResult> {
    return this.schedules.cancel(jobId, now);
  }

  cancellations(): Promise<CancelRequests> {
    return this.schedules.cancellations();
  }

  wait(request: WaitRequest): Promise<WaitResult> {
    return this.flows.wait(request);
  }

  addDependent(dependencyId: string, edge: DependentEdge, now: number): Promise<AddDependentResult> {
    return this.flows.addDependent(dependencyId, edge, now);
  }

  countDependency(edge: DependentEdge, dependencyId: string, failed: boolean, now: number): Promise<DependencyCount> {
    return this.flows.countDependency(edge, dependencyId, failed, now);
  }

  dependencyCount(dependentId: string): Promise<DependencyCount> {
    return this.flows.dependencyCount(dependentId);
  }

  release(dependentId: string, now: number): Promise<ParkedJob | undefined> {
    return this.flows.release(dependentId, now);
  }

  failWaiting(dependentId: string, reason: ArchiveReason, detail: string, now: number): Promise<JobRecord | undefined> {
    return this.flows.failWaiting(dependentId, reason, detail, now);
  }

  uncountFailure(edge: DependentEdge, dependencyId: string): Promise<{ readonly stillFailed: boolean }> {
    return this.flows.uncountFailure(edge, dependencyId);
  }

  reopen(dependentId: string, now: number): Promise<JobRecord | undefined> {
    return this.flows.reopen(dependentId, now);
  }

  get(jobId: string): Promise<JobRecord | undefined> {
    return this.table.get(jobId);
  }

  getMany(jobIds: readonly string[]): Promise<JobRecord[]> {
    return this.table.getMany(jobIds);
  }

  list(query: JobQuery): Promise<JobRecord[]> {
    return this.queries.list(query);
  }

  tagJob(jobId: string, tags: readonly string[], taggedAt: number): Promise<void> {
    return this.queries.tagJob(jobId, tags, taggedAt);
  }

  jobsByTag(tag: string, limit: number, before?: number): Promise<JobRecord[]> {
    return this.queries.jobsByTag(tag, limit, before);
  }

  oldestByTag(tag: string, limit: number): Promise<JobRecord[]> {
    return this.queries.oldestByTag(tag, limit);
  }

  untagJob(jobId: string, tags: readonly string[]): Promise<void> {
    return this.queries.untagJob(jobId, tags);
  }

  lineEntries(tag: string, limit: number): Promise<LineEntry[]> {
    return this.queries.lineEntries(tag, limit);
  }

  takeNumbers(task: string, key: string, count: number, now: number): Promise<number> {
    return this.orders.takeNumbers(task, key, count, now);
  }

  keyOrder(task: string, key: string): Promise<KeyOrder> {
    return this.orders.keyOrder(task, key);
  }

  advanceOrder(task: string, key: string, from: number, now: number): Promise<boolean> {
    return this.orders.advanceOrder(task, key, from, now);
  }

  noteGap(task: string, key: string, at: number, now: number): Promise<number | undefined> {
    return this.orders.noteGap(task, key, at, now);
  }
}

/**
 * The jobs table's interfaces, one per role: reading records ({@link JobReader}), claiming and
 * completing attempts ({@link ClaimStore}), recording jobs ahead of their run, parking and sweeping
 * ({@link ScheduleStore}), dependencies and tags ({@link FlowStore}), keys' unique holds and debounce
 * bursts ({@link UniqueStore}, {@link DebounceStore}), and what operators list and do
 * ({@link OperatorStore}). {@link JobStore} is all of them: the DynamoDB adapter and the in-memory
 * fake implement it, and a consumer that needs one role takes that role's interface.
 */
import type { ArchiveReason } from '../wire/archive-reasons';
import type { EventRef } from '../wire/event-ref';
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
} from './job-record';

/** Reading job records, which every role does. */
export interface JobReader {
  get(jobId: string): Promise<JobRecord | undefined>;
  /** Records by id, in the order asked, missing ones left out (strongly consistent). */
  getMany(jobIds: readonly string[]): Promise<JobRecord[]>;
}

/**
 * A dispatcher's writes around an attempt: the claim, its heartbeat, its end, and the records of
 * deliveries that never ran (a duplicate, a rejected message, an outcome without a claim).
 */
export interface ClaimStore extends JobReader {
  claim(request: ClaimRequest): Promise<ClaimResult>;
  /**
   * Heartbeat: extends the lease if the token still holds it and no cancel was asked, writing the
   * attempt's latest progress with it when there is one.
   */
  extendLease(jobId: string, token: number, leaseUntil: number, now: number, progress?: ProgressWrite): Promise<boolean>;
  /**
   * Keeps a step's result on the job's record, fenced: only while attempt `token` holds the job
   * (running, not cancelled) and the record holds exactly `step.index` steps before it (steps are
   * kept in the order they ran). False when it did not land: the attempt lost the job.
   */
  keepStep(jobId: string, token: number, step: StepWrite, now: number): Promise<boolean>;
  /**
   * Ends an attempt. `landed` false when the token no longer holds the job (the outcome was
   * rejected). `dependents` are the jobs waiting for it as the completion found them (a dependent
   * added after the claim is seen: the write is conditional on the list it read).
   */
  complete(completion: Completion, claimed: JobRecord): Promise<Completed>;
  /**
   * Ends an attempt parked at a step ({@link AttemptPark}): the job is kept until `runAt` with the
   * body to send then, in the due index the sweep reads. False when the token no longer holds the
   * job, a cancel was asked, or the steps kept are not the ones before `park.step`.
   */
  parkAttempt(park: AttemptPark): Promise<boolean>;
  /**
   * Gives a claim back before its body started: `queued` again with no attempt used (`parks` one
   * higher) and no lease, so the message's next delivery is claimed at once. False when the token no
   * longer holds the job (another attempt took it over, or it ended).
   */
  handBackClaim(handBack: ClaimHandBack): Promise<boolean>;
  recordUnclaimed(outcome: UnclaimedOutcome): Promise<UnclaimedResult>;
  /**
   * Creates the record of a message that never ran; false if one exists under that id (nothing
   * changed). One carrying an `envelopeId` is also filed under that id, for {@link OperatorStore.rejectionsFor}.
   * With `archiving` it is written with its archive fence open (before the archive send), as
   * {@link complete} and {@link recordUnclaimed} write an archive's end.
   */
  recordRejected(rejection: Rejection): Promise<boolean>;
  /**
   * Takes the archive fence of the record `jobId` for `fence.holder` until `fence.until`, where a
   * rejection, completion or unclaimed outcome that would have opened it found the record there
   * already: `taken` when its fence is open and lapsed or already this holder's, `sent` when it is
   * closed (or there is none), `held` (with its end) when another live holder has it
   * (lib/policy/archive-fences.ts). One conditional write; nothing but the fence changes.
   */
  takeArchive(jobId: string, fence: ArchiveFence, now: number): Promise<ArchiveTake>;
  /**
   * Closes the archive fence of `jobId` once the archive holds its message, if `holder` still has
   * it; false when another took it over (both sent) or it was closed already.
   */
  markArchived(jobId: string, holder: string): Promise<boolean>;
  /**
   * Ends the lease of `holder`'s archive fence on `jobId` at `at`, the fence left open: its send
   * failed, and the message's next delivery takes the fence over from then instead of waiting out
   * the lease. False when another took it over or it was closed.
   */
  lapseArchive(jobId: string, holder: string, at: number): Promise<boolean>;
  /** Notes a delivery of a finished job that was deleted unrun. */
  recordDuplicate(jobId: string, identity: JobIdentity, workerId: string, now: number): Promise<void>;
  /** The version's recent cancel requests of running jobs (one small eventually consistent read). */
  cancellations(): Promise<CancelRequests>;
}

/**
 * Jobs recorded ahead of their run: published ones (`queued`, or `scheduled` to run later), and
 * those parked until due with the sweep that sends them to their queue.
 */
export interface ScheduleStore extends JobReader {
  /** Records a job published through the library. False if the id already exists (nothing changed). */
  recordQueued(job: JobRef, now: number): Promise<boolean>;
  /**
   * Records a job published to run later: `scheduled` with its `runAt`, `announced` (no body, not in
   * the due index: its message is in SQS). False if the id already exists (nothing changed).
   */
  recordScheduled(job: ScheduleRequest, now: number): Promise<boolean>;
  /** Keeps a job whose `runAt` is more than 15 minutes ahead until it is due. */
  park(request: ParkRequest): Promise<ParkResult>;
  /**
   * Parked jobs of one index shard due by `until`, earliest first, that no sweep holds at `now`
   * (from the sparse due index, eventually consistent: a job parked a moment ago may be missing).
   */
  dueJobs(shard: string, until: number, now: number, limit: number): Promise<ParkedJob[]>;
  /**
   * A parked job as the sweep would send it (its body, attributes and due time; consistent read).
   * Undefined when the job is not parked: an announced one's message is in SQS, and a queued,
   * running or ended one has no body kept.
   */
  parkedJob(jobId: string): Promise<ParkedJob | undefined>;
  /**
   * An operator's run-now: the parked job `parked` (as {@link parkedJob} read it) becomes due `now`
   * with `body` (its envelope rewritten to be due now), if it is still parked as read — its `runAt`
   * unchanged, no sweep holding it. False when it moved on. The sweep's path (`leaseForSweep`, send,
   * `handOver`) then sends it.
   */
  bringForward(parked: ParkedJob, body: string, now: number, why?: string): Promise<boolean>;
  /**
   * Completes the token a `waiting-token` job waits for: its step's result becomes `value` (JSON) and
   * the job is due `now`, in one write conditional on the job waiting for that very token. The
   * caller sends it then (the sweep's path); a completion lost before that send is sent by the next sweep.
   * `by`: the event that completes an event wait's token (its history says so).
   */
  completeToken(token: string, value: string | undefined, now: number, by?: EventRef): Promise<TokenCompletion>;
  /** Takes a parked job for one sweep until `leaseUntil`; false if it is no longer parked or another sweep holds it. */
  leaseForSweep(jobId: string, now: number, leaseUntil: number): Promise<boolean>;
  /** After the sweep sent it: scheduled → queued, under the sweep's lease. False when it moved on meanwhile (claimed, cancelled). */
  handOver(jobId: string, leaseUntil: number, now: number): Promise<boolean>;
}

/**
 * The jobs table's side of dependencies. Counting is idempotent per dependency: a dependency
 * counted once cannot count again, whatever retries or crashes happen; counts live in small shard
 * items (never a list of every member in one item), so a fan-in of 100,000 stays far from 400 KB.
 */
export interface FlowStore extends JobReader {
  /** Records a job that waits (absent → waiting), with its body to send once released. */
  wait(request: WaitRequest): Promise<WaitResult>;
  /** Adds `edge` to the dependents of `dependencyId` unless that job has ended (or has no record). */
  addDependent(dependencyId: string, edge: DependentEdge, now: number): Promise<AddDependentResult>;
  /** Counts dependency number `edge.index` of `edge.id` as ended (failed or not); idempotent. */
  countDependency(edge: DependentEdge, dependencyId: string, failed: boolean, now: number): Promise<DependencyCount>;
  /** The count of `dependentId` as it stands (consistent read). */
  dependencyCount(dependentId: string): Promise<DependencyCount>;
  /** waiting → scheduled, due now: the job to send (the sweep's path). Undefined when it was not waiting. */
  release(dependentId: string, now: number): Promise<ParkedJob | undefined>;
  /** waiting → archived with `reason` (its body kept, should it wait again); the record as written, or undefined when it was not waiting. */
  failWaiting(dependentId: string, reason: ArchiveReason, detail: string, now: number): Promise<JobRecord | undefined>;
  /**
   * Takes back the failed count of dependency `dependencyId` (it was replayed); says whether another
   * dependency of `edge.id` is still counted as failed.
   */
  uncountFailure(edge: DependentEdge, dependencyId: string): Promise<{ readonly stillFailed: boolean }>;
  /** archived (`dependency-failed`) → waiting again; the record, or undefined when it was not such a job. */
  reopen(dependentId: string, now: number): Promise<JobRecord | undefined>;
  /** Indexes a job under each of its tags (idempotent: a second call rewrites the same items). */
  tagJob(jobId: string, tags: readonly string[], taggedAt: number): Promise<void>;
  /** Jobs with `tag`, newest first, in every state; `before`: only those tagged before it (the next page). */
  jobsByTag(tag: string, limit: number, before?: number): Promise<JobRecord[]>;
  /** The first `limit` jobs tagged `tag`, oldest tagging first (a line of parked jobs, whose tags go once they leave it). */
  oldestByTag(tag: string, limit: number): Promise<JobRecord[]>;
  /** Takes `tags` off a job (a job that left a line); a tag it does not have is no error. */
  untagJob(jobId: string, tags: readonly string[]): Promise<void>;
}

/**
 * The holds of tasks' keys under their `unique` rule (lib/settle/unique-holds.ts decides with them):
 * one item per task and key, written with one conditional write.
 */
export interface UniqueStore extends JobReader {
  /**
   * Takes the key for `take.jobId`. Without `over`: lands when no one holds it, the hold's window
   * has ended (`until` ≤ `now`, whatever TTL has not yet deleted), or the job holds it already.
   * With `over`: lands only over that very hold (same holder, same `takenAt`), so two takers of one
   * ended hold cannot both win. Refused: the hold as it stands.
   */
  holdKey(take: UniqueTake, over?: UniqueHold): Promise<UniqueWrite>;
  /** Lets go of a hold the job still has (its publish failed before anything was sent); a no-op otherwise. */
  releaseKey(task: string, key: string, jobId: string): Promise<void>;
  /** Records a job that joined another (absent → `deduplicated`); false if a record exists under its id (nothing changed). */
  recordDeduplicated(job: DeduplicatedJob): Promise<boolean>;
}

/**
 * Debounce cycles under tasks' `debounce` rule (lib/settle/debounce-cycles.ts decides with them): one
 * item per task and key while a burst is open, and one per closed cycle's job with the body it runs.
 */
export interface DebounceStore extends JobReader {
  /**
   * One publish, one write. Without `over`: opens the key's cycle with `publish.jobId` when none is
   * open, else joins the open one (its body and `dueAt` become this publish's, `seq` grows); refused
   * when the open cycle's `maxDueAt` is before `abandonedBefore`, with that cycle. With `over`: opens
   * a fresh cycle only over that very cycle (same `pending` and `seq`), so of two publishers taking
   * over one abandoned cycle exactly one wins.
   */
  debounce(publish: DebouncePublish, over?: Pick<DebounceCycle, 'pending' | 'seq'>): Promise<DebounceWrite>;
  /** The key's open cycle (consistent read); undefined when none is open. */
  debounceCycle(task: string, key: string): Promise<DebounceCycle | undefined>;
  /**
   * Keeps the body of `cycle` (about to be closed) under its job's id, for a dispatcher that finds it
   * closed: refused when the body of a later publish of that same cycle is kept already (`seq` above,
   * same `firstAt`). Written before the close, so a dispatcher lost between the two finds it.
   */
  keepDebouncedBody(cycle: DebounceCycle, now: number): Promise<boolean>;
  /** The body kept for a closed cycle's job (consistent read); undefined when none is kept. */
  debouncedBody(jobId: string): Promise<string | undefined>;
  /**
   * Closes the key's cycle if it is still the one read: same `pending`, and same `seq` (no publish
   * joined since) when given; the next publish opens a new one. False when it moved on. Without
   * `seq` it is a publisher letting go of the cycle its failed send opened.
   */
  closeDebounce(task: string, key: string, cycle: Pick<DebounceCycle, 'pending'> & { readonly seq?: number }): Promise<boolean>;
}

/** What operators list and do to jobs: lists by state, a message's rejections, replay, cancel. */
export interface OperatorStore extends JobReader {
  list(query: JobQuery): Promise<JobRecord[]>;
  /**
   * The records of messages that never ran (kept under their own message ids) that carried
   * `envelopeId`, newest first, at most `MAX_FILED_REJECTIONS` (job-record.ts): found without a
   * scan. Never the record of the job named `envelopeId` itself.
   */
  rejectionsFor(envelopeId: string): Promise<JobRecord[]>;
  /**
   * Puts an archived job back to `queued` with its attempts reset, for replay; only when the record
   * is that job (task and payload). False when nothing changed.
   */
  resetForReplay(jobId: string, identity: JobIdentity, now: number): Promise<boolean>;
  /**
   * scheduled or waiting → cancelled. A running job is asked to stop instead (`requested`): the
   * request is written on its record and in the cancellations item ({@link CancelRequests}).
   * Asked again, it writes both again (idempotent).
   */
  cancel(jobId: string, now: number): Promise<CancelResult>;
}

/**
 * The jobs table, in domain words: every role at once. Every transition is conditional on the
 * state it comes from; completions and heartbeats are conditional on the fencing token, so a stale
 * worker whose lease was taken over cannot overwrite the newer outcome.
 */
export interface JobStore extends ClaimStore, ScheduleStore, FlowStore, OperatorStore, UniqueStore, DebounceStore, TickStore, OrderStore {}

/**
 * The order of an `ordered` task's keys (lib/settle/key-order.ts decides with it): one item per task
 * and key in the jobs table, holding the key's counter and the number whose job may run, and the
 * key's line — its jobs in the tag index, tagged at their number.
 */
export interface OrderStore {
  /** Takes `count` numbers of the key's counter in one write; resolves with the last (they are `last − count + 1 … last`). */
  takeNumbers(task: string, key: string, count: number, now: number): Promise<number>;
  /** The key's order, read strongly consistent (a key never numbered: `{ last: 0, next: 1 }`). */
  keyOrder(task: string, key: string): Promise<KeyOrder>;
  /** Moves the key's `next` from `from` to `from + 1` if it is still `from`: true when this write moved it. */
  advanceOrder(task: string, key: string, from: number, now: number): Promise<boolean>;
  /**
   * Notes that no job numbered `at` was found in the key's line while it is the key's `next`; the
   * first note for `at` stays. Resolves with when it was first noted, undefined once `next` has moved on.
   */
  noteGap(task: string, key: string, at: number, now: number): Promise<number | undefined>;
  /** The first `limit` entries of the line `tag`, lowest tagging first (one query of the tag index, no record read). */
  lineEntries(tag: string, limit: number): Promise<LineEntry[]>;
}

/** A key's order ({@link OrderStore}). */
export interface KeyOrder {
  /** The last number taken (0: none yet). */
  readonly last: number;
  /** The number whose job may run: every job numbered below it has ended, or was skipped. */
  readonly next: number;
  /** When a dispatcher first found no job numbered `next` in the key's line (a gap), if one has. */
  readonly gapSince?: number;
  /** When `next` last moved (or the key was first numbered): a line that has not moved for a while is looked at. */
  readonly movedAt?: number;
}

/** One entry of a line in the tag index: the job and its place (the tag's `taggedAt`). */
export interface LineEntry {
  readonly jobId: string;
  readonly at: number;
}

/** The schedules' tick items (lib/dispatch/schedule-turns.ts keeps them): one per schedule. */
export interface TickStore {
  scheduleTicks(schedule: string): Promise<ScheduleTicks | undefined>;
  /**
   * Raises the schedule's latest tick to `at`, never lowering it, adding the counts in the same
   * write; false (nothing added) when a tick as late was noted first.
   */
  noteTick(schedule: string, at: number, counts: { readonly missed: number; readonly caughtUp: number }, now: number): Promise<boolean>;
  /** Counts one tick skipped for overlap. */
  countSkipped(schedule: string, now: number): Promise<void>;
}

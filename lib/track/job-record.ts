import type { SerializedError } from '../errors';
import type { ArchiveReason } from '../wire/archive-reasons';
import type { EventRef } from '../wire/event-ref';
import type { PayloadRef } from '../wire/payload-ref';

/**
 * The job record and what the stores are asked and answer, in domain words: states and history,
 * identity, dependencies' edges, and each write's request and result. The stores' interfaces by
 * role are in job-stores.ts; the stats table's model in stats-store.ts.
 */

/** The most rejected messages filed under one envelope id (further ones are archived as ever, just not filed). */
export const MAX_FILED_REJECTIONS = 100;

/**
 * A job's lifecycle. Terminal states never change again: a later delivery of a finished job is
 * recorded as a `skipped-duplicate` history entry and does not run. Every write and the states
 * it may start from are in `TRANSITIONS` (lib/policy/job-rules.ts).
 *
 *   (published) queued ──claim──▶ running ──▶ succeeded
 *                  │                 ├──▶ retrying ──claim──▶ running …
 *                  │                 └──▶ archived (exhausted, timed-out, unrecoverable, invalid-payload)
 *   running with an expired lease ──claim (takeover)──▶ running (attempt + 1)
 *   a message that never ran as a job (malformed, unknown-task, id-conflict) ──▶ archived, in a
 *     record of its own keyed by its SQS message id, never under an id it carries
 *   (published to run later) scheduled, announced ──its message arrives──▶ claim (≤ 15 min) or park (farther)
 *                                       └──cancel──▶ cancelled (its message, when it comes, is deleted unrun)
 *   a message whose runAt is > 15 min ahead ──park──▶ scheduled ──sweep (due within 15 min)──▶ queued
 *                                                        ├──cancel──▶ cancelled
 *                                                        └──claim once due (a swept copy before the sweep's mark)──▶ running
 *   a message with dependencies ──wait──▶ waiting ──last dependency counted──▶ scheduled (due now) ──sweep──▶ queued
 *                                           ├──a dependency failed (policy `fail`), unknown, or a cycle──▶ archived
 *                                           └──cancel──▶ cancelled
 *   running ──its body sleeps (`ctx.step.sleep`) or continues in a new invocation──▶ sleeping ──sweep (due)──▶ queued
 *   running ──its body waits for a token (`ctx.step.waitForToken`)──▶ waiting-token ──token completed, or its
 *     timeout (the sweep)──▶ queued        (both also: ──cancel──▶ cancelled; a due copy's claim ──▶ running)
 *   a message whose task and key another live job holds (a `unique` task), or that joins its key's open
 *     debounce burst (a `debounce` task, sent from another SDK) ──▶ deduplicated, never run, pointing at
 *     that job (`duplicateOf`)
 */
export const JOB_STATES = [
  'queued',
  'running',
  'retrying',
  'succeeded',
  'archived',
  'scheduled',
  'cancelled',
  'waiting',
  'deduplicated',
  'sleeping',
  'waiting-token',
  'waiting-event',
  'waiting-key',
] as const;
export type JobState = (typeof JOB_STATES)[number];

/** States a job never leaves. */
export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'archived', 'cancelled', 'deduplicated'];

/** The states of a job that has not ended (in `JOB_STATES`' order). */
export const LIVE_STATES: readonly JobState[] = JOB_STATES.filter((s) => !TERMINAL_STATES.includes(s));

/** What can happen to a job, as its history records it. */
export type HistoryWhat =
  | 'queued'
  | 'started'
  | 'took-over'
  | 'succeeded'
  | 'retrying'
  /** The body asked to run again later (RetryAfterError): `retrying`, with no attempt used. */
  | 'retry-after'
  /** The body was rate limited (RateLimitedError): `retrying`, no attempt used, its scope paused. */
  | 'rate-limited'
  | 'archived'
  | 'skipped-duplicate'
  | 'scheduled'
  | 'cancelled'
  | 'waiting'
  | 'released'
  /**
   * Claimed, then handed back before its body started (a stop, the invocation's end, its message's
   * visibility, or no task thread in time while it waited for a slot): `queued`, no attempt used.
   */
  | 'handed-back'
  | 'cancel-requested'
  | 'deduplicated'
  /** Its body slept at a step, or ended its attempt to continue in a new invocation: parked until due, no attempt used. */
  | 'sleeping'
  /** Its body waits for a token at a step: parked until the token is completed or the wait times out, no attempt used. */
  | 'waiting-token'
  /** Its awaited token was completed: due now. */
  | 'token-completed'
  /** Its body waits for an event at a step: parked until a matching event arrives or the wait times out, no attempt used. */
  | 'waiting-event'
  /** A matching event arrived for its wait: due now. */
  | 'event-received'
  /** Its key was at its limit (`limits.per: 'key'`): parked in its key's line until a job of the key ends. */
  | 'waiting-key';

export interface HistoryEntry {
  readonly what: HistoryWhat;
  /** Epoch ms. */
  readonly when: number;
  readonly worker?: string;
  readonly attempt?: number;
  readonly detail?: string;
}

/**
 * The attempts a job has used: its claims less those that asked to run again later
 * (RetryAfterError), parked at a step, or were handed back unstarted (`parks` counts both).
 */
export function attemptsUsed(record: Pick<JobRecord, 'attempt' | 'retryAfters' | 'parks'>): number {
  return record.attempt - (record.retryAfters ?? 0) - (record.parks ?? 0);
}

/** The states of a job parked at one of its steps: due at `runAt` (a sleep's end, a wait's timeout). */
export const STEP_PARKED_STATES = ['sleeping', 'waiting-token', 'waiting-event'] as const;
export type StepParkedState = (typeof STEP_PARKED_STATES)[number];

/**
 * Where a body parked its job at a step: a sleep until `until`, a wait for `token` (until its
 * timeout), or (`continue`) the end of an attempt whose next step would not fit its invocation.
 */
export interface StepWait {
  readonly kind: 'sleep' | 'token' | 'event' | 'continue';
  /** Epoch ms it ends: a sleep's due time, a wait's timeout, now for a continuation. */
  readonly until: number;
  /** A token wait's token: what `completeToken` names (an event wait's too: the event completes it). */
  readonly token?: string;
  /** An event wait's event, and the key its waiters are found by ({@link eventWaitKey}). */
  readonly event?: string;
  readonly key?: string;
}

/** One step a job's body kept (`ctx.step.run`): its name, its result's JSON, and the attempt that ran it. */
export interface StepEntry {
  readonly name: string;
  /** The step's return value as JSON; absent when it returned nothing. */
  readonly result?: string;
  readonly attempt: number;
  /** Epoch ms it was kept. */
  readonly at: number;
  /** A sleep's or a wait's step: where the job parked. */
  readonly wait?: StepWait;
  /** A token wait's completion (epoch ms): its value is `result`. None at resumption: the wait timed out (`null`). */
  readonly completedAt?: number;
}

/** A step's result as a body asks it kept: the step's place in the job's sequence (0-based), name and JSON. */
export interface StepWrite {
  readonly index: number;
  readonly name: string;
  readonly result?: string;
  /** A sleep's or a wait's step, as the body asks it. */
  readonly wait?: StepWaitAsk;
}

/** A step's wait as the body asks it: until a time, or for a span the dispatcher's clock starts. */
export interface StepWaitAsk {
  readonly kind: StepWait['kind'];
  readonly until?: number;
  readonly forMs?: number;
  readonly token?: string;
  readonly event?: string;
  readonly key?: string;
}

/** A wait asked for, its end on the dispatcher's clock. */
export function waitOf(ask: StepWaitAsk, now: number): StepWait {
  return {
    kind: ask.kind,
    until: ask.until ?? now + (ask.forMs ?? 0),
    ...(ask.token !== undefined ? { token: ask.token } : {}),
    ...(ask.event !== undefined ? { event: ask.event } : {}),
    ...(ask.key !== undefined ? { key: ask.key } : {}),
  };
}

/**
 * The key an event wait's job is found by when the event arrives: the event's name, and the matched
 * field's path and its value in the job's payload as JSON (none: every such event matches). Kept as
 * a tag of the job (`<jobId> tag <key>`, the `byTag` index), so the dispatcher that receives the
 * event finds its waiters with one query per declared match.
 */
export function eventWaitKey(event: string, match?: { readonly path: string; readonly value: unknown }): string {
  return match ? `~waits ${event} ${match.path}=${JSON.stringify(match.value ?? null)}` : `~waits ${event}`;
}

/** A step as a job record keeps it: a wait's end set on the writer's clock. */
export function stepEntryOf(step: StepWrite, token: number, now: number): StepEntry {
  return {
    name: step.name,
    ...(step.result !== undefined ? { result: step.result } : {}),
    attempt: token,
    at: now,
    ...(step.wait ? { wait: waitOf(step.wait, now) } : {}),
  };
}

/**
 * Why a token's completion did not land on `record` (as read after the refused write): no such
 * token, completed already (naming that completion), or its job no longer waiting for it.
 */
export function tokenRefusal(token: string, record: JobRecord | undefined): Exclude<TokenCompletion, { readonly outcome: 'completed' }> {
  const named = tokenJob(token);
  const kept = named ? record?.steps?.[named.index] : undefined;
  if (!named || !record || kept?.wait?.token !== token) return { outcome: 'unknown' };
  if (kept.completedAt !== undefined) {
    return {
      outcome: 'completed-already',
      jobId: named.jobId,
      completedAt: kept.completedAt,
      ...(kept.result !== undefined ? { value: kept.result } : {}),
    };
  }
  return { outcome: 'not-waiting', jobId: named.jobId, state: record.state };
}

/**
 * Whether a completion of `token` may land on `record`: the wait's step holds it, not completed, and
 * the job waits on it — parked on it (`waitToken`), or running the attempt that kept it and has yet to
 * park (a job that parked on it and was resumed since timed out: `waitToken` says so).
 */
export function tokenCompletable(token: string, record: JobRecord | undefined): boolean {
  const named = tokenJob(token);
  const step = named ? record?.steps?.[named.index] : undefined;
  if (!record || !step || step.wait?.token !== token || step.completedAt !== undefined) return false;
  if (record.state === 'running') return record.waitToken !== token;
  return (record.state === 'waiting-token' || record.state === 'waiting-event') && record.waitToken === token;
}

/** The history entry of a token's completion: by an event (`event-received`, naming it), or by someone (`token-completed`, naming the step). */
export function tokenHistory(step: string | undefined, now: number, by?: EventRef): HistoryEntry {
  return by
    ? { what: 'event-received', when: now, detail: `${by.name} ${by.id}` }
    : { what: 'token-completed', when: now, ...(step !== undefined ? { detail: step } : {}) };
}

/** A token: its job's id, the wait's step number and a random part, `<jobId>:<index>:<nonce>`. */
export function stepToken(jobId: string, index: number, nonce: string): string {
  return `${jobId}:${index}:${nonce}`;
}

/** The job a token belongs to and its step number; undefined for text that is not a token. */
export function tokenJob(token: string): { readonly jobId: string; readonly index: number } | undefined {
  const match = typeof token === 'string' ? /^([\x21-\x7e]{1,128}):(\d{1,3}):[A-Za-z0-9_-]{16,64}$/.exec(token) : null;
  return match ? { jobId: match[1] as string, index: Number(match[2]) } : undefined;
}

/**
 * An attempt that ends parked at a step (fenced by its token like a completion): the record becomes
 * `state` with `runAt` and the body the sweep sends then, its `parks` one higher (no attempt used),
 * and `step`, when given, appended as step number `step.index` (a token wait's step was kept before).
 */
export interface AttemptPark {
  readonly jobId: string;
  readonly queue: string;
  readonly token: number;
  /** A token wait's token (its step kept it before): the record waits for it. */
  readonly waitToken?: string;
  readonly state: StepParkedState;
  readonly runAt: number;
  readonly body: string;
  readonly attributes?: Readonly<Record<string, string>>;
  readonly step?: StepWrite;
  /** What the history entry says. */
  readonly detail: string;
  /** The history as the attempt's claim left it: the park's entry is added to it (within the history's limit). */
  readonly history: readonly HistoryEntry[];
  readonly workerId: string;
  readonly now: number;
}

/** What only a live attempt's record carries (its lease and progress): gone once it parks or is handed back. */
export const ATTEMPT_ONLY = ['leaseOwner', 'leaseUntil', 'leaseClaim', 'progress', 'progressAt'] as const;

/** A claim given back before its body started ({@link HistoryWhat} `handed-back`), fenced by its token. */
export interface ClaimHandBack {
  readonly jobId: string;
  readonly token: number;
  /** Why it did not start, for the history entry. */
  readonly detail: string;
  /**
   * The claim was the job's first start (it set `firstStartedAt`): the hand-back removes that, since
   * no body started, and the next claim sets it again.
   */
  readonly firstStart: boolean;
  /** The history as the claim left it: the hand-back's entry is added to it (within the history's limit). */
  readonly history: readonly HistoryEntry[];
  readonly workerId: string;
  readonly now: number;
}

/**
 * A token's completion: `completed` (the job is due now; `parked` is what to send), or refused —
 * `unknown` (no job has it), `completed-already` (its value and when), `not-waiting` (the wait timed
 * out, or was cancelled: the job's state given).
 */
export type TokenCompletion =
  /** `parked`: what to send now; none when the job is not parked (its attempt has yet to park on the wait, or a sweep sent it meanwhile). */
  | { readonly outcome: 'completed'; readonly jobId: string; readonly parked?: ParkedJob }
  | { readonly outcome: 'unknown' }
  | { readonly outcome: 'completed-already'; readonly jobId: string; readonly completedAt: number; readonly value?: string }
  | { readonly outcome: 'not-waiting'; readonly jobId: string; readonly state: JobState };

/** The most steps a job keeps: the record holds them (at most 1 KB of result each), and an item holds 400 KB. */
export const MAX_STEPS = 200;

export interface JobRecord {
  readonly jobId: string;
  readonly task: string;
  /**
   * Digest of the payload the job was first recorded with ({@link payloadDigest}). With `task` it
   * is the job's identity: a later message with the same id but another task or payload is not
   * this job (it is archived as `id-conflict`).
   */
  readonly payloadDigest?: string;
  /**
   * The payload as JSON text with its task's `redact` fields masked, kept by the first claim when it
   * is at most `tracking.keepPayloadBytes` long (so the dashboard and `jobs show` show every job's).
   */
  readonly payload?: string;
  readonly queue: string;
  readonly version: string;
  readonly state: JobState;
  /** Runs started (claims), the authoritative attempt count and the fencing token. */
  readonly attempt: number;
  /**
   * Of those runs, the ones that ended asking to run again later (RetryAfterError): they used no
   * attempt, so the attempts a job has used are `attempt − retryAfters`.
   */
  readonly retryAfters?: number;
  /** Of those runs, the ones that ended parked at a step (a sleep, a wait, a continuation): no attempt used either. */
  readonly parks?: number;
  /** The token a `waiting-token` job waits for (its step's): a completion must name it. */
  readonly waitToken?: string;
  readonly reason?: ArchiveReason;
  readonly publishedAt?: number;
  readonly firstStartedAt?: number;
  readonly lastStartedAt?: number;
  readonly finishedAt?: number;
  readonly updatedAt: number;
  readonly leaseOwner?: string;
  readonly leaseUntil?: number;
  /** The `claimId` of the claim that holds the lease. */
  readonly leaseClaim?: string;
  readonly lastError?: SerializedError;
  /** The task's return value as JSON, when it was small enough to keep. */
  readonly result?: string;
  /** The size of a return value too large to keep on the record (its JSON, bytes). */
  readonly resultBytes?: number;
  /**
   * Where a return value too large for the record is kept (an object under `results/` in the
   * version's bucket), with `resultBytes`: `publisher.result`, `jobs wait` and the dashboard read it back.
   */
  readonly resultRef?: PayloadRef;
  /** For a message that never ran (kept under its own message id): the id it carried. */
  readonly envelopeId?: string;
  /** Epoch ms the job may start at (jobs published to run later). */
  readonly runAt?: number;
  /**
   * A `scheduled` record the publisher wrote at publish (`schedule`): the job's message is in SQS —
   * delayed until `runAt` (15 minutes or nearer), or on its way to a dispatcher that parks it with its
   * body. Never swept; claimed whenever its message arrives; gone once claimed or parked.
   */
  readonly announced?: boolean;
  /** When its last dependency ended and it was sent to its queue (a job that waited). */
  readonly releasedAt?: number;
  /** Jobs this one waits for (named in its envelope). */
  readonly dependsOn?: readonly string[];
  /** A fan-in: the number of members (`<jobId>.0` …) this job waits for. */
  readonly awaits?: number;
  /** The fan-in this job is a member of. */
  readonly memberOf?: { readonly id: string; readonly size: number; readonly index: number };
  /** What a failed dependency does to this job. */
  readonly onDependencyFailure?: 'fail' | 'ignore';
  /** Jobs waiting for this one: each with its place among their dependencies. */
  readonly dependents?: readonly DependentEdge[];
  readonly tags?: readonly string[];
  /** Its envelope's `key`. */
  readonly key?: string;
  /** Its place in its key's order (an `ordered` task's: its envelope's `seq`). */
  readonly seq?: number;
  /** A `deduplicated` job: the job of the same task and key it joined (that one runs, this one never does). */
  readonly duplicateOf?: string;
  /** The event this job runs for, when it is a subscriber's (`on`). */
  readonly event?: EventRef;
  /**
   * Its envelope's `expiresAt` (epoch ms): no attempt starts after it. Named apart from the item's
   * `expiresAt`, which is DynamoDB's time to live for the record itself.
   */
  readonly startBy?: number;
  /**
   * When an operator asked the running job to stop (epoch ms). From then on its attempt's heartbeat
   * and lease extension are refused, its dispatcher aborts it, and it ends `cancelled`; a later claim
   * (its lease lapsed, or it ended `retrying` first) ends it `cancelled` without running it.
   */
  readonly cancelRequestedAt?: number;
  /** The latest `ctx.progress(data)` of its running attempt, as JSON (at most {@link MAX_PROGRESS_BYTES}). */
  readonly progress?: string;
  /**
   * An archive send under way: the record says `archived` (with its reason), but the archive queue
   * may not hold its message yet. Who sends it (one dispatcher's decision, {@link ArchiveFence}) and
   * until when no other may (epoch ms); both gone once the archive holds it ({@link ClaimStore.markArchived}).
   * lib/policy/archive-fences.ts reads them.
   */
  readonly archiveHolder?: string;
  readonly archiveUntil?: number;
  /** When that progress was written (epoch ms). */
  readonly progressAt?: number;
  readonly history: readonly HistoryEntry[];
  /** The steps its body kept (`ctx.step.run`), in the order they ran: later attempts return them without running them again. */
  readonly steps?: readonly StepEntry[];
}

/** The most JSON `ctx.progress(data)` may carry. */
export const MAX_PROGRESS_BYTES = 1024;

/** A progress report on its way to the record, written with the attempt's next lease extension. */
export interface ProgressWrite {
  readonly json: string;
  /** When the task reported it (epoch ms). */
  readonly at: number;
}

/**
 * The version's recent cancel requests of running jobs, in one small item every dispatcher with
 * running claimed jobs reads at most once a second: job id → when the cancel was asked. Requests
 * older than {@link CANCELLATIONS_KEPT_MS} are pruned as new ones are written: an attempt running
 * at a request's time has ended long before (time limits are at most 900 s); a later claim finds the
 * request on the job record.
 */
export interface CancelRequests {
  /** Grows with every write: a reader that saw this version has seen every request in it. */
  readonly version: number;
  readonly requests: Readonly<Record<string, number>>;
}

/** How long a cancel request stays in the cancellations item. */
export const CANCELLATIONS_KEPT_MS = 30 * 60_000;

/** "Job `id` waits for this one, as its dependency number `index` of `size`." */
export interface DependentEdge {
  readonly id: string;
  readonly index: number;
  readonly size: number;
}

/** A job that waits for others, as the dispatcher records it from its message. */
export interface WaitRequest extends JobRef {
  readonly body: string;
  readonly attributes?: Readonly<Record<string, string>>;
  readonly dependsOn?: readonly string[];
  readonly awaits?: number;
  readonly onDependencyFailure: 'fail' | 'ignore';
  readonly tags?: readonly string[];
  readonly workerId: string;
  readonly now: number;
}

export type WaitResult =
  | { readonly outcome: 'waiting' }
  | { readonly outcome: 'exists'; readonly record: JobRecord }
  | { readonly outcome: 'conflict'; readonly record: JobRecord };

/** `added`: the dependency will count itself into the dependent when it ends. `ended`: it had ended already. */
export type AddDependentResult =
  | { readonly outcome: 'added' }
  | { readonly outcome: 'ended'; readonly record: JobRecord }
  | { readonly outcome: 'unknown' };

/** Where a dependent's count stands: every dependency counted (`complete`), and the first that failed. */
export interface DependencyCount {
  readonly complete: boolean;
  readonly firstFailure?: string;
}

/** What makes two deliveries the same job: its task and its payload (as a digest). */
export interface JobIdentity {
  readonly task: string;
  readonly payloadDigest: string;
}

/** Identity of a job as a delivery reveals it. */
export interface JobRef extends JobIdentity {
  readonly jobId: string;
  readonly queue: string;
  readonly version: string;
  readonly publishedAt: number;
  /** Its tags, kept on the record where it is first written. */
  readonly tags?: readonly string[];
  /** The event it is a subscriber's run of, kept on the record by its claim. */
  readonly event?: EventRef;
  /** Its envelope's `key`, kept on the record where it is first written. */
  readonly key?: string;
  /** Its envelope's `seq` (an `ordered` task's place in its key's order), kept as `key` is. */
  readonly seq?: number;
  /** Its envelope's `expiresAt`, kept on the record where it is written (the record's `startBy`). */
  readonly startBy?: number;
}

export interface ClaimRequest extends JobRef {
  /** The fan-in this job is a member of (from its envelope): kept on the record, so whoever ends it counts it in. */
  readonly memberOf?: JobRecord['memberOf'];
  readonly workerId: string;
  readonly now: number;
  /** Epoch ms until which the claim holds unless extended by a heartbeat. */
  readonly leaseUntil: number;
  /**
   * Unique to this claim request, kept on the record while the lease lasts. It is how a store
   * tells the SDK's retry of this very claim after a lost answer (ours) from another delivery of
   * the same job claimed by the same worker at the same instant (two copies in one batch: a duplicate).
   * Without it a claim that finds the job running is never taken as ours.
   */
  readonly claimId?: string;
  /**
   * The payload as JSON text, redacted (its task's `redact`), when it is kept on the record
   * (`tracking.keepPayloadBytes`); written by the first claim only.
   */
  readonly payload?: string;
  /**
   * No record of the job is expected (its message's first receive, not sent again by taskworker):
   * a store may first try the claim that creates the record, shorter to write and evaluate, and
   * falls back to the full claim when a record is there after all. The outcome is the same either way.
   */
  readonly expectNew?: boolean;
}

/**
 * A claim's answer. `claimed` carries the fencing token (the new attempt number): completions
 * and heartbeats must present it. `finished` means the job already ended; `leased` that another
 * live worker holds it; `conflict` that the id belongs to another job (another task or payload),
 * which the claim left untouched.
 */
export type ClaimResult =
  | { readonly outcome: 'claimed'; readonly token: number; readonly record: JobRecord }
  | { readonly outcome: 'finished'; readonly record: JobRecord }
  | { readonly outcome: 'leased'; readonly record: JobRecord }
  | { readonly outcome: 'conflict'; readonly record: JobRecord };

export interface Completed {
  readonly landed: boolean;
  readonly dependents: readonly DependentEdge[];
}

/**
 * The fence of one message's archive send, kept on the record the archive is for (a rejection's,
 * under the message's own id; a job's, under its id): `holder` names the one decision that sends
 * it, `until` (epoch ms) when another dispatcher holding a copy of the message may take it over
 * (the holder died between taking it and closing it).
 */
export interface ArchiveFence {
  readonly holder: string;
  readonly until: number;
}

/**
 * Taking an archive's fence: `taken` — send it (this holder's, fresh or taken over from a lapsed
 * one); `sent` — the archive holds it already (the fence was closed), only the copy is deleted;
 * `held` — another live holder sends it, until `until`: the copy is handed back until then.
 */
export type ArchiveTake =
  | { readonly outcome: 'taken' }
  | { readonly outcome: 'sent' }
  | { readonly outcome: 'held'; readonly until: number };

/** How an attempt ended, as written by the worker that holds the token. */
export interface Completion {
  readonly jobId: string;
  readonly token: number;
  readonly state: 'succeeded' | 'retrying' | 'archived' | 'cancelled';
  readonly reason?: ArchiveReason;
  readonly error?: SerializedError;
  readonly result?: string;
  readonly resultBytes?: number;
  readonly resultRef?: PayloadRef;
  readonly workerId: string;
  readonly now: number;
  /** For retries: when the next attempt becomes possible (epoch ms), for the history. */
  readonly retryAt?: number;
  /** A retry the body asked for (RetryAfterError): counted in the record's `retryAfters`, no attempt used. */
  readonly retryAfter?: boolean;
  /** Of those, a rate limit's (RateLimitedError): the scope it paused (lib/track/operator-controls.ts `pauseScopeId`), for the history. */
  readonly rateLimited?: string;
  /** For an archive: its send's fence, taken with the completion (the record is `archived` before the send). */
  readonly archiving?: ArchiveFence;
}

/**
 * An attempt's outcome recorded without a claim (tracking mode `failures`): a failure creates or
 * updates the record; a success only ends one that an earlier failure left `retrying`.
 */
export interface UnclaimedOutcome extends JobRef {
  readonly state: 'retrying' | 'archived' | 'succeeded';
  readonly attempt: number;
  readonly reason?: ArchiveReason;
  readonly error?: SerializedError;
  readonly workerId: string;
  readonly now: number;
  /** For an archive: its send's fence, taken with the write. */
  readonly archiving?: ArchiveFence;
}

/**
 * `recorded`: the write landed. `ignored`: the record was in no state this outcome may follow
 * (finished already; or, for a success, never failed). `conflict`: the id belongs to another job.
 */
export type UnclaimedResult = 'recorded' | 'ignored' | 'conflict';

/**
 * A message that never ran as a job: it could not be decoded, named an unknown task, or carried
 * the id of another job. Recorded once, under its own SQS message id (`jobId`), never under an id
 * it carries; `task` and `payloadDigest` are empty where the body did not give them.
 */
export interface Rejection extends JobRef {
  readonly reason: ArchiveReason;
  readonly error: SerializedError;
  /** The id the message carried, when it named one. */
  readonly envelopeId?: string;
  readonly attempt: number;
  readonly workerId: string;
  readonly now: number;
  /** Its archive send's fence, taken with the record (written before the send). */
  readonly archiving?: ArchiveFence;
}

/** A job published to run later, as its publisher records it (`scheduled`, {@link JobRecord.announced}). */
export interface ScheduleRequest extends JobRef {
  readonly runAt: number;
}

/** A message whose `runAt` is too far ahead for SQS to hold it: kept in the jobs table until due. */
export interface ParkRequest extends JobRef {
  readonly runAt: number;
  /** The message body as the sweep will send it (id and publish time pinned). */
  readonly body: string;
  /** String message attributes to send with it. */
  readonly attributes?: Readonly<Record<string, string>>;
  readonly workerId: string;
  readonly now: number;
  /**
   * Parked in its key's line (`waiting-key`), not until a time: its key was at `limit` running
   * (a task's `limits.per: 'key'`). `runAt` is then when it comes back should no job of its key end first.
   */
  readonly overKeyLimit?: number;
  /**
   * Parked in its key's line (`waiting-key`) until its turn: an `ordered` task's job numbered
   * `seq`, while the key's turn was at this number. `runAt` is then when it comes back should no
   * move of the line reach it first.
   */
  readonly waitsForTurn?: number;
}

/** The state and history entry a park writes: `scheduled` until its due time, or `waiting-key` in its key's line. */
export function parkedAs(r: ParkRequest): { readonly state: 'scheduled' | 'waiting-key'; readonly entry: HistoryEntry } {
  const back = new Date(r.runAt).toISOString();
  const waiting = (detail: string) => ({
    state: 'waiting-key' as const,
    entry: { what: 'waiting-key' as const, when: r.now, worker: r.workerId, detail },
  });
  if (r.waitsForTurn !== undefined)
    return waiting(
      `#${r.seq ?? '?'} of key ${JSON.stringify(r.key ?? '')}, whose turn is at #${r.waitsForTurn}; sent when its turn comes, by ${back} at the latest`,
    );
  if (r.overKeyLimit !== undefined)
    return waiting(
      `key ${JSON.stringify(r.key ?? '')} at its limit of ${r.overKeyLimit} running; sent when one ends, by ${back} at the latest`,
    );
  return { state: 'scheduled', entry: { what: 'scheduled', when: r.now, worker: r.workerId, detail: `due ${back}` } };
}

/** A brought-forward job's history detail: `why` (an operator's run-now when absent), and when it was due. */
export function broughtForward(parked: Pick<ParkedJob, 'runAt'>, why = 'run now'): string {
  return `${why} (was due ${new Date(parked.runAt).toISOString()})`;
}

/**
 * `parked`: written. `exists`: the job already has a record (parked before by another copy, or
 * further along); nothing changed. `conflict`: the id belongs to another job.
 */
export type ParkResult =
  | { readonly outcome: 'parked' }
  | { readonly outcome: 'exists'; readonly record: JobRecord }
  | { readonly outcome: 'conflict'; readonly record: JobRecord };

/** A parked job as the sweep reads it from the due index. */
export interface ParkedJob {
  readonly jobId: string;
  readonly queue: string;
  readonly runAt: number;
  readonly body: string;
  readonly attributes?: Readonly<Record<string, string>>;
}

/**
 * `cancelled`: it will not run. `requested`: it is running; it was asked to stop and ends
 * `cancelled` within a second or two (its dispatcher aborts it). `not-scheduled`: it was already
 * handed to its queue and not yet started, or ended; `unknown`: no such job.
 */
export type CancelResult =
  | { readonly outcome: 'cancelled'; readonly record: JobRecord }
  | { readonly outcome: 'requested'; readonly record: JobRecord }
  | { readonly outcome: 'not-scheduled'; readonly record: JobRecord }
  | { readonly outcome: 'unknown' };

export interface JobQuery {
  readonly state: JobState;
  /** Queues to search (retrying and archived jobs are indexed per queue). */
  readonly queues: readonly string[];
  readonly task?: string;
  /** Only jobs published with this key. */
  readonly key?: string;
  readonly limit: number;
  /** Only records last updated at or before this time (epoch ms): the next page of a newest-first list. */
  readonly updatedAtMost?: number;
}

/**
 * Who holds a task's key under its `unique` rule: the item `<task> unique <key>` of the jobs table
 * (no job id has a space, so no job can take that key). `from` is the holder's publish time and
 * `until` the end of its window (epoch ms); `takenAt` tells two holds of one job apart.
 */
export interface UniqueHold {
  readonly holder: string;
  readonly from: number;
  readonly until: number;
  readonly takenAt: number;
}

/** A job asking to hold its task's key: published at `from`, its window ending at `until`. */
export interface UniqueTake {
  readonly task: string;
  readonly key: string;
  readonly jobId: string;
  readonly from: number;
  readonly until: number;
  readonly now: number;
}

/** A hold's write: landed, or refused with the hold as it stands (none: it went away meanwhile). */
export type UniqueWrite = { readonly landed: true } | { readonly landed: false; readonly hold: UniqueHold | undefined };

/** A job that joined another of its task and key: recorded `deduplicated`, never run. */
export interface DeduplicatedJob extends JobRef {
  readonly key?: string;
  readonly duplicateOf: string;
  readonly workerId: string;
  readonly now: number;
  /** What its history says; `joined <duplicateOf>` when absent. */
  readonly detail?: string;
}

/**
 * What the jobs table keeps per schedule (its `~ schedule <name>` item): the latest tick a
 * dispatcher saw (catch-up counts the missed ones from it), and the ticks counted missed (past the
 * catch-up window), caught up and skipped (overlap), each with when it last happened.
 */
export interface ScheduleTicks {
  readonly schedule: string;
  /** Epoch ms of the latest tick seen. */
  readonly lastTick?: number;
  readonly missed: number;
  readonly caughtUp: number;
  readonly skipped: number;
  readonly lastMissedAt?: number;
  readonly lastSkippedAt?: number;
}

/**
 * A key's debounce cycle under its task's `debounce` rule: the item `<task> debounce <key>` of the
 * jobs table, from the first publish of a burst until a dispatcher closes it to run its job.
 * `pending` is the job that will run, `body` the envelope of the burst's last publish (its payload,
 * or a claim check's pointer); `seq` counts the publishes. The job is due at
 * `min(dueAt, maxDueAt)`: `dueAt` is the last publish plus the period, `maxDueAt` the first plus `maxWait`.
 */
export interface DebounceCycle {
  readonly pending: string;
  readonly seq: number;
  readonly body: string;
  readonly firstAt: number;
  readonly dueAt: number;
  readonly maxDueAt: number;
}

/** A publish of a key under its task's `debounce` rule: starts a cycle with `jobId`, or joins the open one. */
export interface DebouncePublish {
  readonly task: string;
  readonly key: string;
  /** The job to run should this publish start the cycle. */
  readonly jobId: string;
  /** Its envelope, the payload the job runs with unless a later publish joins. */
  readonly body: string;
  readonly now: number;
  /** `now` plus the period. */
  readonly dueAt: number;
  /** `now` plus `maxWait`: kept only by the publish that starts the cycle. */
  readonly maxDueAt: number;
  /** An open cycle whose `maxDueAt` is before this was abandoned (see `DEBOUNCE_ABANDONED_MS`): the write is refused with it. */
  readonly abandonedBefore: number;
}

/**
 * A debounce publish's write: landed (`started`: its job is the cycle's `pending` one — it opened the
 * cycle, or it is that write again, retried by the SDK after it landed; else it joined `pending`), or
 * refused with the abandoned cycle it found.
 */
export type DebounceWrite =
  | { readonly landed: true; readonly started: boolean; readonly cycle: Omit<DebounceCycle, 'body'> }
  | { readonly landed: false; readonly cycle: DebounceCycle | undefined };

/** The job-record writes a batch makes, each run in the settle before its message is settled. */
import type { Clock } from '../clock';
import type { QueueConfig } from '../config/app-config';
import { MAX_QUEUE_DELAY_SECONDS } from '../layout/sqs-limits';
import { edgesOf } from '../policy/dependency-rules';
import { jobPayloadDigest } from '../policy/job-rules';
import type { Logger, QueueClient, QueueUrls, ReceivedMessage } from '../ports';
import type { SerializedError, StepPark } from '../run/executor-types';
import type { TaskRegistry } from '../tasks/task';
import { type ArchiveFence, type ArchiveTake, type JobIdentity, type JobRecord, type Rejection, waitOf } from '../track/job-record';
import type { ClaimStore, JobStore } from '../track/job-stores';
import type { ArchiveReason } from '../wire/archive-reasons';
import { type DecodedJob, pinEnvelope, readableEnvelopeId } from '../wire/envelope';
import type { PayloadRef } from '../wire/payload-ref';
import { type FlowDeps, propagate } from './dependents';
import { moveAfterEnd } from './key-order';
import { sendParked } from './parked-sends';
import type { ArchiveWrite, FencedArchive, RecordWrite } from './settle';

/** What a job-record write touches: the jobs table, as this worker, on the clock. */
export interface RecordPorts {
  readonly clock: Clock;
  readonly logger: Logger;
  readonly workerId: string;
  readonly tracking?: { readonly version: string; readonly jobs?: JobStore };
  /** Where a released dependent is sent (a job that ends counts itself into those waiting for it). */
  readonly queues: QueueClient;
  readonly urls: QueueUrls;
  /** The tasks, where their rules matter to a record (an archived job's `redact` paths). */
  readonly registry?: Pick<TaskRegistry, 'get'>;
}

/** The ports that carry a job's end on to the jobs waiting for it. */
export function flowPorts(deps: RecordPorts): FlowDeps | undefined {
  const jobs = deps.tracking?.jobs;
  return jobs ? { jobs, queues: deps.queues, urls: deps.urls, clock: deps.clock, logger: deps.logger } : undefined;
}

/** The tracking mode in force for a queue: `off` when no jobs table is configured. */
export function trackingOf(deps: RecordPorts, queue: QueueConfig): QueueConfig['tracking'] {
  return deps.tracking?.jobs ? queue.tracking : 'off';
}

export function identity(job: DecodedJob): JobIdentity {
  return { task: job.task, payloadDigest: jobPayloadDigest(job) };
}

export function ref(deps: Pick<RecordPorts, 'tracking'>, queue: QueueConfig, job: DecodedJob) {
  return {
    jobId: job.id,
    ...identity(job),
    queue: queue.name,
    version: deps.tracking?.version ?? '',
    publishedAt: job.publishedAt,
    ...(job.tags ? { tags: job.tags } : {}),
    ...(job.event ? { event: job.event } : {}),
    ...(job.expiresAt !== undefined ? { startBy: job.expiresAt } : {}),
    ...(job.key !== undefined ? { key: job.key } : {}),
    ...(job.seq !== undefined ? { seq: job.seq } : {}),
  };
}

/** The fenced completion of a claimed attempt (tracking `full`). */
export function completionWrite(
  deps: RecordPorts,
  job: DecodedJob,
  token: number,
  claimed: JobRecord,
  end: {
    state: 'succeeded' | 'retrying' | 'archived' | 'cancelled';
    reason?: ArchiveReason;
    error?: SerializedError;
    result?: string;
    resultBytes?: number;
    resultRef?: PayloadRef;
    retryAt?: number;
    retryAfter?: boolean;
    rateLimited?: string;
    archiving?: ArchiveFence;
  },
): RecordWrite {
  const flows = flowPorts(deps);
  if (!flows) throw new Error('completionWrite needs a job store');
  return async () => {
    // A cancel wrote its request into the record's history after the claim: end from the record as
    // it is now (one read, on this rare path), so the completion keeps that entry.
    const from = end.state === 'cancelled' ? ((await flows.jobs.get(job.id)) ?? claimed) : claimed;
    const completed = await flows.jobs.complete({ jobId: job.id, token, workerId: deps.workerId, now: deps.clock.now(), ...end }, from);
    // An end counts into the jobs waiting for it before its message goes: lost half-way, the
    // message comes back as a duplicate of a finished job, which counts again (idempotent).
    if (completed.landed && end.state !== 'retrying') {
      await propagate(flows, job.id, end.state !== 'succeeded', edgesOf({ dependents: completed.dependents, ...membership(job) }));
      // An ordered key's next job may run once this one has ended (after the counts: they are the flow's promise).
      await moveAfterEnd({ ...flows, ...(deps.registry ? { registry: deps.registry } : {}) }, job, end.state);
    }
    return completed.landed;
  };
}

/**
 * A claimed attempt that ends parked at a step (fenced by its token): the job is kept in the jobs
 * table with its message's body (id and publish time pinned) until the step's time, and the message
 * deleted. A sleep or a continuation due within SQS's 15 minutes is sent at once, delayed by the
 * time left, as the sweep would send it a minute later; a token wait only ever at its timeout (by
 * the sweep) or its completion, and an event wait the same (its completion an event's).
 */
export function parkWrite(
  deps: RecordPorts,
  at: { readonly queue: QueueConfig; readonly message: ReceivedMessage; readonly job: DecodedJob },
  token: number,
  claimed: JobRecord,
  park: StepPark,
): RecordWrite {
  const jobs = deps.tracking?.jobs;
  if (!jobs) throw new Error('parkWrite needs a job store');
  return async () => {
    const now = deps.clock.now();
    const { job, message, queue } = at;
    const wait = waitOf(park.wait, now);
    const state = park.wait.kind === 'token' ? 'waiting-token' : park.wait.kind === 'event' ? 'waiting-event' : 'sleeping';
    const body = pinEnvelope(message.body, job);
    const attributes = Object.keys(message.attributes).length > 0 ? message.attributes : undefined;
    // An event wait is found by its key when the event comes: tagged before it parks (a tag left by a
    // park that did not land is passed over: only a job waiting on that key is resumed).
    if (park.wait.kind === 'event' && park.wait.key !== undefined) await jobs.tagJob(job.id, [park.wait.key], now);
    const landed = await jobs.parkAttempt({
      jobId: job.id,
      queue: queue.name,
      token,
      state,
      runAt: wait.until,
      body,
      ...(attributes ? { attributes } : {}),
      ...(park.keep ? { step: { index: park.index, name: park.name, wait: { kind: wait.kind, until: wait.until } } } : {}),
      ...(park.wait.token !== undefined ? { waitToken: park.wait.token } : {}),
      detail: parkDetail(park, wait.until),
      history: claimed.history,
      workerId: deps.workerId,
      now,
    });
    if (!landed && park.wait.token !== undefined) return continueAfterCompletion(deps, at, token, claimed, park);
    if (landed && park.wait.kind !== 'token' && park.wait.kind !== 'event' && wait.until - now <= MAX_QUEUE_DELAY_SECONDS * 1000) {
      // Sent now or by the next sweep: a failed send leaves it parked, never lost.
      const parked = { jobId: job.id, queue: queue.name, runAt: wait.until, body, ...(attributes ? { attributes } : {}) };
      await sendParked({ jobs, queues: deps.queues, urls: deps.urls, clock: deps.clock, logger: deps.logger }, [parked], now).catch(
        () => undefined,
      );
    }
    return landed;
  };
}

/**
 * A wait's park that did not land because its token was completed meanwhile (while the attempt
 * settled): if the attempt still holds the job, it ends as a continuation instead — due now, sent at
 * once — and the next attempt gets the value from the kept step. Otherwise the attempt lost the job
 * (false: stale, as any fenced write).
 */
async function continueAfterCompletion(
  deps: RecordPorts,
  at: { readonly queue: QueueConfig; readonly message: ReceivedMessage; readonly job: DecodedJob },
  token: number,
  claimed: JobRecord,
  park: StepPark,
): Promise<boolean> {
  const jobs = deps.tracking?.jobs;
  const record = await jobs?.get(at.job.id);
  const step = record?.steps?.[park.index];
  if (!jobs || record?.state !== 'running' || record.attempt !== token || step?.completedAt === undefined) return false;
  return parkWrite(deps, at, token, claimed, { index: park.index, name: park.name, wait: { kind: 'continue', forMs: 0 }, keep: false })();
}

/** What a park's history entry says. */
function parkDetail(park: StepPark, until: number): string {
  const at = new Date(until).toISOString();
  if (park.wait.kind === 'sleep') return `step ${JSON.stringify(park.name)}: sleeps until ${at}`;
  if (park.wait.kind === 'token') return `step ${JSON.stringify(park.name)}: waits for its token until ${at}`;
  if (park.wait.kind === 'event') return `step ${JSON.stringify(park.name)}: waits for event ${park.wait.event} until ${at}`;
  return `continues in a new invocation before step ${JSON.stringify(park.name)}`;
}

const TAKEN: ArchiveTake = { outcome: 'taken' };

/**
 * A claimed attempt's archive (tracking `full`): its fenced completion, `archived` with the fence
 * open, is the take; stale when a newer attempt holds the job. Its next delivery's claim finds the
 * job ended, and {@link archiveTakeover} the fence.
 */
export function fencedCompletion(
  deps: RecordPorts,
  job: DecodedJob,
  token: number,
  claimed: JobRecord,
  end: { reason: ArchiveReason; error: SerializedError },
): ArchiveWrite {
  return {
    fenced: (fence) => {
      const complete = completionWrite(deps, job, token, claimed, { state: 'archived', ...end, archiving: fence });
      return { take: async () => ((await complete()) ? TAKEN : 'stale'), ...endsOf(deps, job.id, fence) };
    },
  };
}

/**
 * A delivery of a job whose record is `archived` with its archive fence still open: the dispatcher
 * that archived it may have died before its send landed. The fence says whether to send it (the
 * holder's lease lapsed), wait (it is live) or only delete the copy (closed meanwhile). `before`
 * runs first (the claim counts the ended job into its dependents again, as for any duplicate).
 */
export function archiveTakeover(deps: RecordPorts, jobId: string, before: () => Promise<void>): ArchiveWrite | undefined {
  const jobs = deps.tracking?.jobs;
  if (!jobs) return undefined;
  return {
    fenced: (fence) => ({
      take: async () => {
        await before();
        return jobs.takeArchive(jobId, fence, deps.clock.now());
      },
      ...endsOf(deps, jobId, fence),
    }),
  };
}

/** Closes the fence `fence` of the record `jobId` once sent, or ends its lease now when the send failed. */
function endsOf(deps: RecordPorts, jobId: string, fence: ArchiveFence): Pick<FencedArchive, 'close' | 'lapse'> {
  const jobs = deps.tracking?.jobs;
  return {
    close: async () => (jobs ? jobs.markArchived(jobId, fence.holder) : true),
    lapse: async () => (jobs ? jobs.lapseArchive(jobId, fence.holder, deps.clock.now()) : true),
  };
}

/** The fan-in a job's envelope names it a member of, as its record keeps it. */
export function membership(job: DecodedJob): Pick<JobRecord, 'memberOf'> {
  return job.memberOf ? { memberOf: job.memberOf } : {};
}

/**
 * An attempt's outcome without a claim (tracking `failures`). It lands only on a record of the
 * same job; one whose id belongs to another job is left untouched (the message still retries or
 * is archived by its own outcome).
 */
export function unclaimedWrite(
  deps: RecordPorts,
  queue: QueueConfig,
  job: DecodedJob,
  attempt: number,
  jobState: 'retrying' | 'archived' | 'succeeded',
  error?: SerializedError,
  reason?: ArchiveReason,
): RecordWrite | undefined {
  const jobs = deps.tracking?.jobs;
  if (!jobs || trackingOf(deps, queue) === 'off') return undefined;
  return async () => {
    const result = await jobs.recordUnclaimed({
      ...ref(deps, queue, job),
      state: jobState,
      attempt,
      workerId: deps.workerId,
      now: deps.clock.now(),
      ...(error ? { error } : {}),
      ...(reason ? { reason } : {}),
    });
    if (result === 'conflict') {
      deps.logger.warn('job id belongs to another job; its record was left alone', { jobId: job.id, task: job.task });
    }
    return true;
  };
}

/**
 * An unclaimed attempt's archive (tracking `failures`), fenced on the job's record: the outcome
 * written with the fence open is the take; a record an earlier copy archived goes through its fence
 * ({@link throughFence}); any other is left alone and the message sent unfenced, at least once.
 */
export function fencedUnclaimed(
  deps: RecordPorts,
  queue: QueueConfig,
  job: DecodedJob,
  attempt: number,
  error: SerializedError,
  reason: ArchiveReason,
): ArchiveWrite | undefined {
  const jobs = deps.tracking?.jobs;
  if (!jobs || trackingOf(deps, queue) === 'off') return undefined;
  return fencedOnRecord(deps, jobs, job.id, async (fence, now) => {
    const result = await jobs.recordUnclaimed({
      ...ref(deps, queue, job),
      state: 'archived',
      attempt,
      workerId: deps.workerId,
      now,
      error,
      reason,
      archiving: fence,
    });
    if (result === 'conflict')
      deps.logger.warn('job id belongs to another job; its record was left alone', { jobId: job.id, task: job.task });
    return result === 'recorded' ? 'opened' : result === 'ignored' ? 'found' : 'left';
  });
}

/**
 * The record of a message that never ran (malformed, unknown task, id conflict), under its own
 * message id, fenced: the rejection written with the fence open is the take; one an earlier copy
 * archived goes through its fence ({@link throughFence}); any other record under that id is left
 * alone and the message sent unfenced, at least once.
 */
export function rejectionWrite(
  deps: RecordPorts,
  queue: QueueConfig,
  message: ReceivedMessage,
  job: DecodedJob | undefined,
  reason: ArchiveReason,
  error: SerializedError,
): ArchiveWrite | undefined {
  const jobs = deps.tracking?.jobs;
  if (!jobs || trackingOf(deps, queue) === 'off') return undefined;
  // Under its own message id: the id it carried (if any) is filed beside it.
  const rejection: Omit<Rejection, 'now' | 'archiving'> = {
    jobId: message.messageId,
    task: job?.task ?? '',
    payloadDigest: job ? jobPayloadDigest(job) : '',
    queue: queue.name,
    version: deps.tracking?.version ?? '',
    publishedAt: job?.publishedAt ?? message.sentTimestamp,
    reason,
    error,
    attempt: message.receiveCount,
    workerId: deps.workerId,
    ...envelopeIdOf(message, job),
  };
  return fencedOnRecord(deps, jobs, message.messageId, async (fence, now) =>
    (await jobs.recordRejected({ ...rejection, now, archiving: fence })) ? 'opened' : 'found',
  );
}

/**
 * An archive fenced on the record `jobId` that `open` writes: `opened`, the write opened the fence
 * (the take); `found`, a record was there already, and the fence is taken through it when it is an
 * earlier copy's archive ({@link throughFence}), else the message is sent unfenced; `left`, a record
 * the write may not touch: sent unfenced, at least once. An unfenced send closes nothing.
 */
function fencedOnRecord(
  deps: RecordPorts,
  jobs: ClaimStore,
  jobId: string,
  open: (fence: ArchiveFence, now: number) => Promise<'opened' | 'found' | 'left'>,
): ArchiveWrite {
  return {
    fenced: (fence) => {
      let fenced = true;
      const take = async (): Promise<ArchiveTake> => {
        const now = deps.clock.now();
        const opened = await open(fence, now);
        const existing = opened === 'opened' ? TAKEN : opened === 'found' ? await throughFence(jobs, jobId, fence, now) : undefined;
        fenced = existing !== undefined;
        return existing ?? TAKEN;
      };
      // An unfenced send has no fence to close or lapse.
      const ends = endsOf(deps, jobId, fence);
      return { take, close: async () => !fenced || ends.close(), lapse: async () => !fenced || ends.lapse() };
    },
  };
}

/**
 * The fence of a record a write that would have opened it found there already: taken through the
 * fence when the record is archived (an earlier copy's archive). Undefined for any other record (a
 * job's under the same id, or one in a state the outcome may not follow, as an announced `scheduled`
 * one): it has no fence this message may use, and the message is sent unfenced, at least once.
 * One read, on this rare path only.
 */
async function throughFence(jobs: ClaimStore, jobId: string, fence: ArchiveFence, now: number): Promise<ArchiveTake | undefined> {
  return (await jobs.get(jobId))?.state === 'archived' ? jobs.takeArchive(jobId, fence, now) : undefined;
}

/** The id a rejected message carried (decoded, or read from a malformed body), unless it is its own message id. */
function envelopeIdOf(message: ReceivedMessage, job: DecodedJob | undefined): { envelopeId?: string } {
  const id = job?.id ?? readableEnvelopeId(message.body);
  return id !== undefined && id !== message.messageId ? { envelopeId: id } : {};
}

import { randomBytes } from 'node:crypto';
import type { QueueConfig } from '../config';
import { describe, EnvelopeError } from '../errors';
import type { ReceivedMessage, SendEntry, VisibilityEntry } from '../ports';
import { type DecodedJob, decodeEnvelope, messageBytes, pinEnvelope, SQS_MESSAGE_LIMIT_BYTES } from '../publishing/envelope';
import { callWithEntryRetries } from '../retry-entries';
import type { TaskDefinition } from '../tasks/task';
import type { JobIdentity, JobRecord } from '../tracking/model';
import { expiresAt, payloadDigest } from '../tracking/rules';
import { isEmptyDelta, statsOfBatch } from '../tracking/stats';
import { type ArchiveReason, type ArchiveRecord, archiveEntry, isRejection } from './archive';
import { MAX_VISIBILITY_SECONDS, retryDelaySeconds } from './backoff';
import type { SerializedError, TaskOutcome } from './executor/types';
import type { SlotLease, TaskSlots } from './slots';
import type { BatchReport, JobReport } from './summary';
import type { DispatcherDeps, RunOptions } from './types';

/** How long a message waits when its claim could not be made (the jobs table did not answer). */
const CLAIM_RETRY_SECONDS = 10;
/** Heartbeats go out this long before a running task's message would become visible again (or a quarter of the visibility timeout, if less). */
const HEARTBEAT_LEAD_MS = 5000;
/**
 * A message that waited for a slot until less than this (or a quarter of its visibility timeout)
 * was left of its visibility is not started: SQS may already have handed it to another worker.
 */
const LAPSE_MARGIN_MS = 1000;

/**
 * The job-record write that must land before a message is settled. Resolves false when the
 * attempt's token no longer holds the job: then the message is left alone for the newer attempt.
 */
type RecordWrite = () => Promise<boolean>;

/**
 * What happens to one message, decided while its batch runs, carried out in the settle.
 * `requeue`: a fresh copy goes to the queue (after `delaySeconds`), then the message is deleted —
 * how a tracked job's message leaves before SQS's redrive would move it to the DLQ.
 */
type Decision =
  | { readonly kind: 'leave'; readonly message: ReceivedMessage; readonly record?: never }
  | { readonly kind: 'delete'; readonly message: ReceivedMessage; readonly record?: RecordWrite }
  | { readonly kind: 'visibility'; readonly message: ReceivedMessage; readonly seconds: number; readonly record?: RecordWrite }
  | { readonly kind: 'requeue'; readonly message: ReceivedMessage; readonly copy: SendEntry; readonly record?: RecordWrite }
  | { readonly kind: 'archive'; readonly message: ReceivedMessage; readonly archive: ArchiveRecord; readonly record?: RecordWrite };

/** A decision that hands the message back to its queue: a visibility change, or leaving it to lapse. */
type HandBack = { readonly kind: 'visibility'; readonly seconds: number; readonly record?: RecordWrite } | { readonly kind: 'leave' };

interface Planned {
  readonly message: ReceivedMessage;
  readonly job: DecodedJob;
  readonly def: TaskDefinition;
}

/** One batch's bookkeeping. */
class BatchState {
  readonly decisions: Decision[] = [];
  readonly reports = new Map<string, JobReport>();

  decide(decision: Decision, report: JobReport): void {
    this.decisions.push(decision);
    this.reports.set(decision.message.messageId, report);
  }

  mark(messageId: string, patch: Partial<JobReport>): void {
    const report = this.reports.get(messageId);
    if (report) this.reports.set(messageId, { ...report, ...patch });
  }
}

/**
 * Decodes, claims, runs and settles one received batch. Never throws. Its tasks take slots from
 * `slots`, shared by every batch the dispatcher has in flight; the batch is settled when its own
 * tasks end.
 */
export async function processBatch(
  deps: DispatcherDeps,
  queue: QueueConfig,
  batch: readonly ReceivedMessage[],
  options: RunOptions,
  slots: TaskSlots,
): Promise<BatchReport> {
  const receivedAt = deps.clock.now();
  const state = new BatchState();
  const runnable: Planned[] = [];
  for (const message of batch) {
    const planned = plan(deps, queue, message, state);
    if (planned) runnable.push(planned);
  }
  announce(deps, queue, batch, runnable);
  // Slots are taken in message order (the limiter is first come, first served).
  const killGraceMs = deps.config.dispatcher.killGraceMs;
  await Promise.all(
    runnable.map((p) =>
      slots.run(p.def.timeLimitSeconds * 1000 + killGraceMs, (lease) => runOne(deps, queue, p, receivedAt, options, state, lease)),
    ),
  );
  const settleRetries = await settle(deps, queue, state);
  const report: BatchReport = { queue: queue.name, jobs: batch.map((m) => state.reports.get(m.messageId) as JobReport), settleRetries };
  await recordStats(deps, report);
  return report;
}

/** Tells the observer which jobs this batch holds. An observer that throws costs nothing but its own view. */
function announce(deps: DispatcherDeps, queue: QueueConfig, batch: readonly ReceivedMessage[], runnable: readonly Planned[]): void {
  if (!deps.observer?.onBatchStart) return;
  const known = new Map(runnable.map((p) => [p.message.messageId, p]));
  try {
    deps.observer.onBatchStart({
      queue: queue.name,
      jobs: batch.map((m) => {
        const p = known.get(m.messageId);
        return { messageId: m.messageId, ...(p ? { jobId: p.job.id, task: p.def.name } : {}) };
      }),
    });
  } catch (error) {
    deps.logger.warn('batch observer failed', { error: describe(error) });
  }
}

/** The tracking mode in force for a queue: `off` when no jobs table is configured. */
function trackingOf(deps: DispatcherDeps, queue: QueueConfig): QueueConfig['tracking'] {
  return deps.tracking?.jobs ? queue.tracking : 'off';
}

/** Decodes one message; routes undecodable and unknown ones to the archive. */
function plan(deps: DispatcherDeps, queue: QueueConfig, message: ReceivedMessage, state: BatchState): Planned | undefined {
  // A message that is not a runnable job is archived under its own message id: it never acts on
  // (nor even reads) the record of an id it carries.
  let job: DecodedJob;
  try {
    job = decodeEnvelope(message.body, { messageId: message.messageId, sentTimestamp: message.sentTimestamp });
  } catch (error) {
    const envelopeError = error instanceof EnvelopeError ? error : undefined;
    archive(deps, queue, state, message, undefined, 'malformed', {
      type: 'EnvelopeError',
      message: envelopeError?.message ?? describe(error),
      ...(envelopeError ? { code: envelopeError.code } : {}),
    });
    return undefined;
  }
  const def = deps.registry.get(job.task);
  if (!def) {
    archive(deps, queue, state, message, job, 'unknown-task', {
      type: 'UnknownTaskError',
      message: `task ${JSON.stringify(job.task)} is not registered in this version`,
    });
    return undefined;
  }
  return { message, job, def };
}

async function runOne(
  deps: DispatcherDeps,
  queue: QueueConfig,
  { message, job, def }: Planned,
  receivedAt: number,
  options: RunOptions,
  state: BatchState,
  lease: SlotLease,
): Promise<void> {
  const { clock, config } = deps;
  const start = clock.now();
  const timeLimitMs = def.timeLimitSeconds * 1000;
  const needMs = timeLimitMs + config.dispatcher.killGraceMs;
  lease.endsBy(start + needMs);
  const base = { messageId: message.messageId, jobId: job.id, task: def.name };
  const mode = trackingOf(deps, queue);
  const handBack = (decision: HandBack, report: JobReport) => {
    const made = handedBack(deps, queue, mode, message, job, decision);
    state.decide(made, made.kind === 'requeue' ? { ...report, requeued: true } : report);
  };
  if (options.signal?.aborted || start + needMs > options.deadline - config.dispatcher.settleMarginMs) {
    handBack({ kind: 'visibility', seconds: 0 }, { ...base, outcome: 'released', attempt: message.receiveCount });
    return;
  }
  const visibilityMs = queue.visibilityTimeoutSeconds * 1000;
  if (start >= receivedAt + visibilityMs - Math.min(LAPSE_MARGIN_MS, visibilityMs / 4)) {
    // It waited for a slot until its visibility (nearly) lapsed: SQS may have handed it to another
    // worker, whose receipt a visibility change could undo. Leave it alone; it comes back by itself.
    handBack({ kind: 'leave' }, { ...base, outcome: 'released', attempt: message.receiveCount });
    deps.logger.warn('message waited for a slot past its visibility; not started', { queue: queue.name, messageId: message.messageId });
    return;
  }

  const jobs = deps.tracking?.jobs;
  const leaseMs = needMs + config.dispatcher.settleMarginMs;
  let attempt = message.receiveCount;
  let claimed: JobRecord | undefined;
  if (mode === 'full' && jobs) {
    let claim: Awaited<ReturnType<typeof jobs.claim>>;
    try {
      claim = await jobs.claim({
        ...ref(deps, queue, job),
        workerId: deps.workerId,
        now: start,
        leaseUntil: start + leaseMs,
        claimId: randomBytes(9).toString('base64url'),
      });
    } catch (error) {
      deps.logger.error('claim failed; the message will come back', { jobId: job.id, error: describe(error) });
      handBack({ kind: 'visibility', seconds: CLAIM_RETRY_SECONDS }, { ...base, outcome: 'deferred', attempt });
      return;
    }
    if (claim.outcome === 'conflict') {
      const error = {
        type: 'JobIdConflictError',
        message:
          `job id ${JSON.stringify(job.id)} belongs to a job of task ${JSON.stringify(claim.record.task)}` +
          `${claim.record.task === job.task ? ' with another payload' : ''}; this message names task ${JSON.stringify(job.task)}`,
      };
      archive(deps, queue, state, message, job, 'id-conflict', error);
      return;
    }
    if (claim.outcome === 'finished') {
      state.decide(
        {
          kind: 'delete',
          message,
          record: async () => {
            await jobs.recordDuplicate(job.id, identity(job), deps.workerId, clock.now());
            return true;
          },
        },
        { ...base, outcome: 'duplicate', attempt: claim.record.attempt },
      );
      return;
    }
    if (claim.outcome === 'leased') {
      const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(1, Math.ceil(((claim.record.leaseUntil ?? start) - start) / 1000) + 1));
      handBack({ kind: 'visibility', seconds }, { ...base, outcome: 'deferred', attempt: claim.record.attempt });
      return;
    }
    attempt = claim.token;
    claimed = claim.record;
    if (attempt > def.maxRetries + 1) {
      // Earlier attempts were started but never finished: their worker was lost (a crash, a kill).
      const error = {
        type: 'WorkerLostError',
        message: `${attempt - 1} attempts started without finishing; maxRetries is ${def.maxRetries}`,
      };
      archive(
        deps,
        queue,
        state,
        message,
        job,
        'exhausted',
        error,
        { ...base, attempt },
        completionWrite(deps, job, attempt, claimed, { state: 'archived', reason: 'exhausted', error }),
      );
      return;
    }
  }

  let visibleUntil = receivedAt + queue.visibilityTimeoutSeconds * 1000;
  const url = deps.urls.queues[queue.name] as string;
  const heartbeat = async (): Promise<boolean> => {
    const now = clock.now();
    const changed = await callWithEntryRetries(
      [{ id: message.messageId, receiptHandle: message.receiptHandle, visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds }],
      (entries) => deps.queues.changeVisibilityBatch(url, entries),
      clock,
    );
    if (changed.failed.length > 0) return false;
    visibleUntil = now + queue.visibilityTimeoutSeconds * 1000;
    if (!claimed || !jobs) return true;
    try {
      return await jobs.extendLease(job.id, attempt, now + leaseMs, now);
    } catch (error) {
      deps.logger.warn('lease extension failed; the lease may still hold', { jobId: job.id, error: describe(error) });
      return true;
    }
  };
  // A task that started late in its batch may outlive its message's visibility: beat before that.
  // A failed beat is not repeated (the lease is lost, or SQS refuses): the outcome decides then.
  const hardEnd = start + needMs;
  const lead = Math.min(HEARTBEAT_LEAD_MS, (queue.visibilityTimeoutSeconds * 1000) / 4);
  let running = true;
  let beatTimer: NodeJS.Timeout | undefined;
  const arm = () => {
    if (!running || hardEnd <= visibleUntil - lead) return;
    beatTimer = setTimeout(
      () => {
        // The task's own ctx.heartbeat() may have moved the visibility on since this was set.
        if (clock.now() < visibleUntil - lead) return arm();
        void heartbeat().then(
          (kept) => kept && arm(),
          () => undefined,
        );
      },
      Math.max(0, visibleUntil - lead - clock.now()),
    );
  };
  arm();

  let outcome: TaskOutcome;
  try {
    outcome = await deps.executor.run(
      {
        task: def.name,
        jobId: job.id,
        queue: queue.name,
        attempt,
        payload: job.payload,
        appData: job.appData,
        timeLimitMs,
        fencingToken: attempt,
      },
      { heartbeat },
    );
  } catch (error) {
    outcome = { status: 'failed', kind: 'crashed', durationMs: 0, error: { type: 'ExecutorError', message: describe(error) } };
  } finally {
    running = false;
    clearTimeout(beatTimer);
  }

  const ran = {
    ...base,
    attempt,
    waitMs: Math.max(0, start - job.publishedAt),
    runMs: outcome.durationMs,
    ...(outcome.status === 'timed-out' ? { timedOut: true } : {}),
    ...(outcome.status !== 'succeeded' ? { error: outcome.error } : {}),
  };
  if (outcome.status === 'succeeded') {
    const record = claimed
      ? completionWrite(deps, job, attempt, claimed, {
          state: 'succeeded',
          ...(outcome.result !== undefined ? { result: outcome.result } : {}),
        })
      : // Tracking `failures`: an earlier delivery may have left a `retrying` record; end it.
        message.receiveCount > 1
        ? unclaimedWrite(deps, queue, job, attempt, 'succeeded')
        : undefined;
    state.decide({ kind: 'delete', message, ...(record ? { record } : {}) }, { ...ran, outcome: 'succeeded' });
    return;
  }
  const reason = archiveReasonFor(outcome, attempt, def);
  if (reason) {
    const record = claimed
      ? completionWrite(deps, job, attempt, claimed, { state: 'archived', reason, error: outcome.error })
      : unclaimedWrite(deps, queue, job, attempt, 'archived', outcome.error, reason);
    archive(deps, queue, state, message, job, reason, outcome.error, ran, record);
    return;
  }
  const seconds = retryDelaySeconds(attempt, def.backoff, deps.random);
  const retryAt = clock.now() + seconds * 1000;
  const record = claimed
    ? completionWrite(deps, job, attempt, claimed, { state: 'retrying', error: outcome.error, retryAt })
    : unclaimedWrite(deps, queue, job, attempt, 'retrying', outcome.error);
  handBack({ kind: 'visibility', seconds, ...(record ? { record } : {}) }, { ...ran, outcome: 'retried' });
  deps.logger.info('task failed; retrying', {
    task: def.name,
    jobId: job.id,
    attempt,
    retryInSeconds: seconds,
    error: outcome.error.message,
  });
}

function identity(job: DecodedJob): JobIdentity {
  return { task: job.task, payloadDigest: payloadDigest(job.payload) };
}

function ref(deps: DispatcherDeps, queue: QueueConfig, job: DecodedJob) {
  return { jobId: job.id, ...identity(job), queue: queue.name, version: deps.tracking?.version ?? '', publishedAt: job.publishedAt };
}

/**
 * Receives left before SQS's redrive moves a message to the DLQ at which a tracked job's message
 * is no longer handed back to its queue but replaced by a fresh copy. Releases and lost processes
 * use up receives without attempts; this way they never push a tracked job into the DLQ with its
 * record unfinished. Two receives, not one: a dispatcher lost between sending the copy and
 * deleting the original still leaves one more receive to do it again.
 */
const REQUEUE_RECEIVES_BEFORE_REDRIVE = 1;

/**
 * The decision that hands a message back to its queue. On a `full` tracked queue whose message is
 * at its last receives before redrive, a fresh copy with the job's id and publish time pinned is
 * sent instead (delayed as the visibility would have been, up to SQS's 15 minutes), and the
 * message is deleted: the dispatcher, not the redrive, decides when the job ends.
 */
function handedBack(
  deps: DispatcherDeps,
  queue: QueueConfig,
  mode: QueueConfig['tracking'],
  message: ReceivedMessage,
  job: DecodedJob,
  decision: HandBack,
): Decision {
  const seconds = decision.kind === 'visibility' ? decision.seconds : 0;
  const record = decision.kind === 'visibility' ? decision.record : undefined;
  if (mode === 'full' && message.receiveCount >= queue.maxReceiveCount - REQUEUE_RECEIVES_BEFORE_REDRIVE) {
    const copy: SendEntry = {
      id: message.messageId,
      body: pinEnvelope(message.body, job),
      ...(seconds > 0 ? { delaySeconds: Math.min(MAX_DELAY_SECONDS, seconds) } : {}),
      ...(Object.keys(message.attributes).length > 0 ? { attributes: message.attributes } : {}),
    };
    if (messageBytes(copy.body, copy.attributes) <= SQS_MESSAGE_LIMIT_BYTES) {
      deps.logger.info('message near its redrive limit: replaced by a fresh copy', {
        queue: queue.name,
        jobId: job.id,
        receiveCount: message.receiveCount,
      });
      return { kind: 'requeue', message, copy, ...(record ? { record } : {}) };
    }
  }
  return decision.kind === 'leave' ? { kind: 'leave', message } : { kind: 'visibility', message, seconds, ...(record ? { record } : {}) };
}

/** SQS's longest DelaySeconds. */
const MAX_DELAY_SECONDS = 900;

/** The fenced completion of a claimed attempt (tracking `full`). */
function completionWrite(
  deps: DispatcherDeps,
  job: DecodedJob,
  token: number,
  claimed: JobRecord,
  end: { state: 'succeeded' | 'retrying' | 'archived'; reason?: ArchiveReason; error?: SerializedError; result?: string; retryAt?: number },
): RecordWrite {
  const jobs = deps.tracking?.jobs;
  if (!jobs) throw new Error('completionWrite needs a job store');
  return () => jobs.complete({ jobId: job.id, token, workerId: deps.workerId, now: deps.clock.now(), ...end }, claimed);
}

/**
 * An attempt's outcome without a claim (tracking `failures`). It lands only on a record of the
 * same job; one whose id belongs to another job is left untouched (the message still retries or
 * is archived by its own outcome).
 */
function unclaimedWrite(
  deps: DispatcherDeps,
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

/** The record of a message that never ran (malformed, unknown task, id conflict), under its own message id. */
function rejectionWrite(
  deps: DispatcherDeps,
  queue: QueueConfig,
  message: ReceivedMessage,
  job: DecodedJob | undefined,
  reason: ArchiveReason,
  error: SerializedError,
): RecordWrite | undefined {
  const jobs = deps.tracking?.jobs;
  if (!jobs || trackingOf(deps, queue) === 'off') return undefined;
  return async () => {
    await jobs.recordRejected({
      jobId: message.messageId,
      task: job?.task ?? '',
      payloadDigest: job ? payloadDigest(job.payload) : '',
      queue: queue.name,
      version: deps.tracking?.version ?? '',
      publishedAt: job?.publishedAt ?? message.sentTimestamp,
      reason,
      error,
      attempt: message.receiveCount,
      workerId: deps.workerId,
      now: deps.clock.now(),
      ...(job && job.id !== message.messageId ? { envelopeId: job.id } : {}),
    });
    return true;
  };
}

/** Undefined means retry. */
function archiveReasonFor(
  outcome: Exclude<TaskOutcome, { status: 'succeeded' }>,
  attempt: number,
  def: TaskDefinition,
): ArchiveReason | undefined {
  if (outcome.status === 'failed' && outcome.kind === 'unrecoverable') return 'unrecoverable';
  if (outcome.status === 'failed' && outcome.kind === 'invalid-payload') return 'invalid-payload';
  if (attempt < def.maxRetries + 1) return undefined;
  return outcome.status === 'timed-out' ? 'timed-out' : 'exhausted';
}

function archive(
  deps: DispatcherDeps,
  queue: QueueConfig,
  state: BatchState,
  message: ReceivedMessage,
  job: DecodedJob | undefined,
  reason: ArchiveReason,
  error: SerializedError & { code?: string },
  base?: Omit<JobReport, 'outcome'>,
  record?: RecordWrite,
): void {
  const rejected = isRejection(reason);
  // A message that never ran is known under its own message id; the id it carried is kept aside.
  const jobId = rejected ? message.messageId : job?.id;
  const archiveRecord: ArchiveRecord = {
    reason,
    detail: error.message,
    errorType: error.type,
    ...(error.stack !== undefined ? { errorStack: error.stack } : {}),
    ...(error.code !== undefined ? { code: error.code } : {}),
    attempts: base?.attempt ?? message.receiveCount,
    queue: queue.name,
    ...(job ? { task: job.task } : {}),
    ...(jobId !== undefined ? { jobId } : {}),
    ...(rejected && job && job.id !== message.messageId ? { envelopeId: job.id } : {}),
    messageId: message.messageId,
    sentTimestamp: message.sentTimestamp,
    archivedAt: deps.clock.now(),
    workerId: deps.workerId,
  };
  const write = record ?? (rejected ? rejectionWrite(deps, queue, message, job, reason, error) : undefined);
  state.decide(
    { kind: 'archive', message, archive: archiveRecord, ...(write ? { record: write } : {}) },
    {
      ...(base ?? { messageId: message.messageId, attempt: message.receiveCount, ...(job ? { task: job.task } : {}) }),
      ...(jobId !== undefined ? { jobId } : {}),
      outcome: 'archived',
      reason,
      error: { type: error.type, message: error.message, ...(error.stack !== undefined ? { stack: error.stack } : {}) },
    },
  );
  deps.logger.warn('archiving message', {
    queue: queue.name,
    reason,
    messageId: message.messageId,
    task: job?.task,
    detail: error.message,
  });
}

/**
 * Settles a batch, one call per outcome list, in an order that never loses a message: archive
 * sends (and requeued copies) first; then the job records (a completion must land before its message is deleted, so a
 * crash in between leaves a duplicate the claim stops, never a lost or re-run job); then one
 * delete and one visibility change. A message whose archive send failed is not deleted; one whose
 * completion was rejected (stale token) is left to the newer attempt.
 */
async function settle(deps: DispatcherDeps, queue: QueueConfig, state: BatchState): Promise<number> {
  const url = deps.urls.queues[queue.name] as string;
  let retries = 0;
  const notSent = new Set<string>();
  const send = async (what: string, target: string, entries: readonly SendEntry[]) => {
    if (entries.length === 0) return;
    const sent = await callWithEntryRetries(entries, (e) => deps.queues.sendBatch(target, e), deps.clock);
    retries += sent.retries;
    for (const f of sent.failed) {
      notSent.add(f.id);
      state.mark(f.id, { unsettled: true });
    }
    logFailures(deps, what, queue, sent.failed);
  };
  await send(
    'archive send',
    deps.urls.archive,
    state.decisions.flatMap((d) => (d.kind === 'archive' ? [archiveEntry(d.message.messageId, d.message.body, d.archive)] : [])),
  );
  await send(
    'requeue send',
    url,
    state.decisions.flatMap((d) => (d.kind === 'requeue' ? [d.copy] : [])),
  );

  const proceeding = state.decisions.filter((d) => !notSent.has(d.message.messageId));
  const stale = new Set<string>();
  await Promise.all(
    proceeding.map(async (d) => {
      if (!d.record) return;
      try {
        if (!(await d.record())) {
          stale.add(d.message.messageId);
          state.mark(d.message.messageId, { outcome: 'stale' });
          deps.logger.warn('outcome rejected: a newer attempt holds the job', { messageId: d.message.messageId });
        }
      } catch (error) {
        // The job record could not be written; settling the message anyway avoids running the job twice.
        deps.logger.error('job record write failed', { messageId: d.message.messageId, error: describe(error) });
      }
    }),
  );
  const settling = proceeding.filter((d) => !stale.has(d.message.messageId));

  const deletes = settling
    .filter((d) => d.kind === 'delete' || d.kind === 'archive' || d.kind === 'requeue')
    .map((d) => ({ id: d.message.messageId, receiptHandle: d.message.receiptHandle }));
  if (deletes.length > 0) {
    const deleted = await callWithEntryRetries(deletes, (e) => deps.queues.deleteBatch(url, e), deps.clock);
    retries += deleted.retries;
    for (const f of deleted.failed) state.mark(f.id, { unsettled: true });
    logFailures(deps, 'delete', queue, deleted.failed);
  }
  const changes: VisibilityEntry[] = settling
    .filter((d): d is Extract<Decision, { kind: 'visibility' }> => d.kind === 'visibility')
    .map((d) => ({ id: d.message.messageId, receiptHandle: d.message.receiptHandle, visibilityTimeoutSeconds: d.seconds }));
  if (changes.length > 0) {
    const changed = await callWithEntryRetries(changes, (e) => deps.queues.changeVisibilityBatch(url, e), deps.clock);
    retries += changed.retries;
    for (const f of changed.failed) state.mark(f.id, { unsettled: true });
    logFailures(deps, 'visibility change', queue, changed.failed);
  }
  return retries;
}

/** One atomic ADD per queue per batch. A failure costs accuracy of the stats, never a job. */
async function recordStats(deps: DispatcherDeps, report: BatchReport): Promise<void> {
  const stats = deps.tracking?.stats;
  if (!stats) return;
  const now = deps.clock.now();
  const delta = statsOfBatch(report, now);
  if (isEmptyDelta(delta)) return;
  try {
    await stats.add(delta, expiresAt(now, deps.config.tracking.statsRetentionDays));
  } catch (error) {
    deps.logger.error('stats write failed', { queue: report.queue, error: describe(error) });
  }
}

function logFailures(
  deps: DispatcherDeps,
  what: string,
  queue: QueueConfig,
  failed: readonly { id: string; code: string; message: string }[],
): void {
  if (failed.length === 0) return;
  deps.logger.error(`${what} failed after retries; the messages will return when their visibility expires`, {
    queue: queue.name,
    failed: failed.map((f) => ({ messageId: f.id, code: f.code, message: f.message })),
  });
}

/**
 * How a message leaves the dispatcher's hands, decided while its batch runs and carried out by the
 * settle: handed back to its queue (or replaced by a fresh copy near its redrive limit), archived,
 * or, at an attempt's end, whatever its verdict says ({@link decideAttemptEnd}: the one table from a
 * verdict to a record and a message's fate; a new end state is a row there).
 */
import type { QueueConfig } from '../config/app-config';
import { MAX_QUEUE_DELAY_SECONDS, messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import type { ReceivedMessage, SendEntry } from '../ports';
import type { FailedOutcome, SerializedError, TaskOutcome } from '../run/executor-types';
import type { JobRecord } from '../track/job-record';
import { pauseScopeId } from '../track/operator-controls';
import { type ArchiveReason, isRejection } from '../wire/archive-reasons';
import type { ArchiveRecord } from '../wire/archive-record';
import { type DecodedJob, pinEnvelope } from '../wire/envelope';
import { markedRecorded } from '../wire/recorded';
import {
  completionWrite,
  fencedCompletion,
  fencedUnclaimed,
  parkWrite,
  type RecordPorts,
  rejectionWrite,
  trackingOf,
  unclaimedWrite,
} from './records';
import type { JobReport } from './report';
import type { ArchiveWrite, BatchState, Decision, RecordWrite } from './settle';
import type { Verdict } from './verdict';

/** A decision that hands the message back to its queue: a visibility change, or leaving it to lapse. */
export type HandBack =
  | { readonly kind: 'visibility'; readonly seconds: number; readonly record?: RecordWrite }
  | { readonly kind: 'leave' };

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
export function handedBack(
  deps: Pick<RecordPorts, 'logger'>,
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
      ...(seconds > 0 ? { delaySeconds: Math.min(MAX_QUEUE_DELAY_SECONDS, seconds) } : {}),
      // The job has its record (a full queue's claim wrote it): the copy's claim expects it.
      attributes: markedRecorded(message.attributes),
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

/** The message a decision is for: its queue and tracking mode, its batch's state, the message and its job. */
export interface MessageAt {
  readonly queue: QueueConfig;
  readonly mode: QueueConfig['tracking'];
  readonly state: BatchState;
  readonly message: ReceivedMessage;
  readonly job: DecodedJob;
}

/** Hands a message back to its queue (see {@link handedBack}) and reports it so. */
export function decideHandBack(deps: Pick<RecordPorts, 'logger'>, at: MessageAt, decision: HandBack, report: JobReport): void {
  const made = handedBack(deps, at.queue, at.mode, at.message, at.job, decision);
  at.state.decide(made, made.kind === 'requeue' ? { ...report, requeued: true } : report);
}

/**
 * Archives a message: its archive record (why, the error, the attempts, under which id), the
 * record write that goes with it (the attempt's, or a rejection's under the message's own id), and
 * its report. On a tracked queue the write is fenced ({@link ArchiveWrite}): taken now, so the
 * message is sent to the archive once whatever copies of it other dispatchers receive meanwhile.
 * The settle sends it to the archive before anything else.
 */
export function decideArchive(
  deps: RecordPorts,
  queue: QueueConfig,
  state: BatchState,
  message: ReceivedMessage,
  job: DecodedJob | undefined,
  reason: ArchiveReason,
  error: SerializedError & { code?: string },
  base?: Omit<JobReport, 'outcome'>,
  record?: ArchiveWrite,
): void {
  const rejected = isRejection(reason);
  // A message that never ran is known under its own message id; the id it carried is kept aside.
  const jobId = rejected ? message.messageId : job?.id;
  const redact = job ? deps.registry?.get(job.task)?.redact : undefined;
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
    ...(redact ? { redact } : {}),
  };
  const given = record ?? (rejected ? rejectionWrite(deps, queue, message, job, reason, error) : undefined);
  // A copy met while another holds the job's fence is handed back like any (a fresh copy near its redrive limit).
  const heldBack =
    !rejected && job
      ? (seconds: number) => handedBack(deps, queue, trackingOf(deps, queue), message, job, { kind: 'visibility', seconds })
      : undefined;
  const write =
    given === undefined
      ? {}
      : typeof given === 'function'
        ? { record: given }
        : { fence: given.fenced(state.archiveFence(deps.workerId)), ...(heldBack ? { heldBack } : {}) };
  state.decide(
    { kind: 'archive', message, archive: archiveRecord, ...write },
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

/** The error an `id-conflict` archive carries: which job the id belongs to, and what this message named. */
export function conflictError(job: DecodedJob, record: JobRecord): SerializedError {
  return {
    type: 'JobIdConflictError',
    message:
      `job id ${JSON.stringify(job.id)} belongs to a job of task ${JSON.stringify(record.task)}` +
      `${record.task === job.task ? ' with another payload' : ''}; this message names task ${JSON.stringify(job.task)}`,
  };
}

/** The attempt an end is decided for: its token, the record its claim took (tracking `full`), its outcome. */
export interface EndedAttempt {
  readonly attempt: number;
  readonly claimed?: JobRecord;
  readonly outcome: TaskOutcome;
  /** The report's fields so far (ids, attempt, wait, run time, error). */
  readonly ran: Omit<JobReport, 'outcome'>;
}

/**
 * An attempt's end, one row per verdict (lib/settle/verdict.ts decides which):
 *
 * | verdict   | job record                      | message                            | report      |
 * | --------- | ------------------------------- | ---------------------------------- | ----------- |
 * | succeeded | `succeeded`, with the result    | deleted                            | `succeeded` |
 * | retry     | `retrying`, with its retry time | visible again after the backoff    | `retried`   |
 * | archive   | `archived`, with the reason     | sent to the archive, then deleted  | `archived`  |
 * | cancelled | `cancelled` (dependents: failed) | deleted (no retry)                | `cancelled` |
 * | park      | `sleeping` / `waiting-token`, its body kept, due at the step's time | deleted | `scheduled` |
 *
 * The record is the claim's fenced completion on a `full` queue, an unclaimed outcome on a
 * `failures` one (a success only when an earlier delivery may have left a `retrying` record).
 */
export function decideAttemptEnd(deps: RecordPorts, at: MessageAt, ended: EndedAttempt, verdict: Verdict): void {
  const { queue, state, message, job } = at;
  const { attempt, claimed, outcome, ran } = ended;
  switch (verdict.kind) {
    case 'succeeded': {
      const result = outcome.status === 'succeeded' ? outcome.result : undefined;
      const resultBytes = outcome.status === 'succeeded' ? outcome.resultBytes : undefined;
      const resultRef = outcome.status === 'succeeded' ? outcome.resultRef : undefined;
      const record = claimed
        ? completionWrite(deps, job, attempt, claimed, {
            state: 'succeeded',
            ...(result !== undefined ? { result } : {}),
            ...(resultBytes !== undefined ? { resultBytes } : {}),
            ...(resultRef !== undefined ? { resultRef } : {}),
          })
        : message.receiveCount > 1
          ? unclaimedWrite(deps, queue, job, attempt, 'succeeded')
          : undefined;
      if (result !== undefined) state.results.set(message.messageId, result);
      state.decide({ kind: 'delete', message, ...(record ? { record } : {}) }, { ...ran, outcome: 'succeeded' });
      return;
    }
    case 'archive': {
      const { reason } = verdict;
      const error = (outcome as FailedOutcome).error;
      const record = claimed
        ? fencedCompletion(deps, job, attempt, claimed, { reason, error })
        : fencedUnclaimed(deps, queue, job, attempt, error, reason);
      decideArchive(deps, queue, state, message, job, reason, error, ran, record);
      return;
    }
    case 'cancelled': {
      // Only a claimed attempt can be cancelled (the request is on its record): fenced by its token.
      const error = (outcome as FailedOutcome).error;
      const record = claimed ? completionWrite(deps, job, attempt, claimed, { state: 'cancelled', error }) : undefined;
      state.decide({ kind: 'delete', message, ...(record ? { record } : {}) }, { ...ran, outcome: 'cancelled' });
      deps.logger.info('job cancelled by an operator', { task: job.task, jobId: job.id, attempt });
      return;
    }
    case 'park': {
      // Only a claimed attempt parks (a body without a job record cannot sleep): fenced by its token.
      const record = claimed ? parkWrite(deps, at, attempt, claimed, verdict.park) : undefined;
      state.decide(
        { kind: 'delete', message, ...(record ? { record } : {}) },
        { ...ran, outcome: 'scheduled', parked: verdict.park.wait.kind },
      );
      return;
    }
    case 'retry-after': {
      // Only a claimed attempt gets here (its record counts the re-runs): fenced by its token.
      const { seconds } = verdict;
      const error = (outcome as FailedOutcome).error;
      const retryAt = deps.clock.now() + seconds * 1000;
      const rateLimited = verdict.rateLimited
        ? { rateLimited: pauseScopeId(verdict.rateLimited, { task: job.task, queue: at.queue.name, key: job.key }) }
        : {};
      const record = claimed
        ? completionWrite(deps, job, attempt, claimed, { state: 'retrying', error, retryAt, retryAfter: true, ...rateLimited })
        : undefined;
      decideHandBack(
        deps,
        at,
        { kind: 'visibility', seconds, ...(record ? { record } : {}) },
        { ...ran, outcome: 'retried', retryAfter: true, ...(verdict.rateLimited ? { rateLimited: true } : {}) },
      );
      deps.logger.info(verdict.rateLimited ? 'task rate limited; no attempt used' : 'task asked to run again later; no attempt used', {
        task: job.task,
        jobId: job.id,
        attempt,
        retryInSeconds: seconds,
      });
      return;
    }
    case 'retry': {
      const { seconds } = verdict;
      const error = (outcome as FailedOutcome).error;
      const retryAt = deps.clock.now() + seconds * 1000;
      const record = claimed
        ? completionWrite(deps, job, attempt, claimed, { state: 'retrying', error, retryAt })
        : unclaimedWrite(deps, queue, job, attempt, 'retrying', error);
      decideHandBack(deps, at, { kind: 'visibility', seconds, ...(record ? { record } : {}) }, { ...ran, outcome: 'retried' });
      deps.logger.info('task failed; retrying', { task: job.task, jobId: job.id, attempt, retryInSeconds: seconds, error: error.message });
      return;
    }
  }
}

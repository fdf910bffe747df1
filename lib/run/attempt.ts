/**
 * One attempt of a task: the executor runs its body under its time limit while a heartbeat keeps
 * its message invisible (and, through `extendLease`, the claim's lease alive) for as long as it
 * may run. An executor that throws is an attempt that crashed. The task's progress rides on the
 * lease writes; an operator's cancel (`cancel`) stops it and makes it an attempt `cancelled`.
 */
import type { Clock } from '../clock';
import { describe, JobCancelledError } from '../errors';
import type { Logger, QueueClient, ReceivedMessage } from '../ports';
import { callWithEntryRetries } from '../retry-entries';
import type { ProgressWrite, StepWrite } from '../track/job-record';
import { type RunReservation, serializeError, type TaskExecutor, type TaskOutcome, type TaskRun } from './executor-types';
import { autoHeartbeat } from './heartbeat';

/**
 * Progress is written at most this often while it changes: with the next heartbeat, or by a lease
 * write of its own when no heartbeat comes sooner (one UpdateItem, never one per `ctx.progress` call).
 */
export const PROGRESS_WRITE_INTERVAL_MS = 5_000;

/** What an attempt touches: the executor, and the queue for its message's visibility. */
export interface AttemptPorts {
  readonly executor: TaskExecutor;
  readonly queues: QueueClient;
  readonly clock: Clock;
  readonly logger: Logger;
}

export interface AttemptRequest {
  readonly run: TaskRun;
  readonly message: ReceivedMessage;
  /** The message's queue URL and visibility timeout. */
  readonly url: string;
  readonly visibilityTimeoutSeconds: number;
  /** When the task's thread is killed at the latest. */
  readonly hardEnd: number;
  /** Where the message's visibility stands as the attempt starts. */
  readonly visibleUntil: number;
  /** Hears each visibility a heartbeat moved the message to. */
  readonly onVisibility: (until: number) => void;
  /**
   * Renews the claim's lease after each extended visibility, writing the task's latest progress with
   * it; false when the attempt no longer holds the job (taken over, or cancelled). None: no claim,
   * and progress is kept nowhere.
   */
  readonly extendLease?: (now: number, progress?: ProgressWrite) => Promise<boolean>;
  /** Hears a lease write refused (the job may have been cancelled: look now, not at the next poll). */
  readonly onLeaseRefused?: () => void;
  /** Fires when an operator cancels the job: the task is stopped and the attempt ends `cancelled`. */
  readonly cancel?: AbortSignal;
  /** The worker set aside for this run before its job was claimed ({@link TaskExecutor.reserve}). */
  readonly reservation?: RunReservation;
  /** Keeps a step's result on the job's record, fenced by the claim; none: no claim, steps are not kept. */
  readonly keepStep?: (step: StepWrite) => Promise<boolean>;
}

/** Runs the attempt; never throws. */
export async function runAttempt(ports: AttemptPorts, request: AttemptRequest): Promise<TaskOutcome> {
  const { clock } = ports;
  const { message, visibilityTimeoutSeconds } = request;
  let visibleUntil = request.visibleUntil;
  /** The latest progress not yet written, when the last progress write was, and whether the lease is gone. */
  let pending: ProgressWrite | undefined;
  let progressWrittenAt = Number.NEGATIVE_INFINITY;
  let progressTimer: NodeJS.Timeout | undefined;
  let refused = false;
  const renew = async (now: number): Promise<boolean> => {
    if (!request.extendLease) return true;
    const progress = pending;
    pending = undefined;
    if (progress) progressWrittenAt = now;
    const kept = await request.extendLease(now, progress);
    if (!kept) {
      refused = true;
      request.onLeaseRefused?.();
    }
    return kept;
  };
  const onProgress = (json: string) => {
    if (!request.extendLease || refused) return;
    pending = { json, at: clock.now() };
    if (progressTimer) return;
    progressTimer = setTimeout(
      () => {
        progressTimer = undefined;
        if (pending && !refused) void renew(clock.now());
      },
      Math.max(0, progressWrittenAt + PROGRESS_WRITE_INTERVAL_MS - clock.now()),
    );
  };
  const heartbeat = async (): Promise<boolean> => {
    const now = clock.now();
    const changed = await callWithEntryRetries(
      [{ id: message.messageId, receiptHandle: message.receiptHandle, visibilityTimeoutSeconds }],
      (entries) => ports.queues.changeVisibilityBatch(request.url, entries),
      clock,
    );
    if (changed.failed.length > 0) return false;
    visibleUntil = now + visibilityTimeoutSeconds * 1000;
    request.onVisibility(visibleUntil);
    return renew(now);
  };
  const beating = autoHeartbeat({
    clock,
    visibilityTimeoutSeconds,
    hardEnd: request.hardEnd,
    visibleUntil: () => visibleUntil,
    beat: heartbeat,
  });
  const cancel = request.cancel;
  try {
    const outcome = await ports.executor.run(
      request.run,
      { heartbeat, progress: onProgress, ...(cancel ? { cancel } : {}), ...(request.keepStep ? { step: request.keepStep } : {}) },
      request.reservation,
    );
    // Cancelled while it ran: whatever the body did after the request, the attempt ends here.
    if (cancel?.aborted && outcome.status !== 'cancelled') {
      return { status: 'cancelled', durationMs: outcome.durationMs, error: serializeError(new JobCancelledError(request.run.jobId)) };
    }
    return outcome;
  } catch (error) {
    return { status: 'failed', kind: 'crashed', durationMs: 0, error: { type: 'ExecutorError', message: describe(error) } };
  } finally {
    beating.stop();
    clearTimeout(progressTimer);
  }
}

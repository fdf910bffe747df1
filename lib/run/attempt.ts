/**
 * One attempt of a task: the executor runs its body under its time limit while a heartbeat keeps
 * its message invisible (and, through `extendLease`, the claim's lease alive) for as long as it
 * may run. An executor that throws is an attempt that crashed.
 */
import type { Clock } from '../clock';
import { describe } from '../errors';
import type { Logger, QueueClient, ReceivedMessage } from '../ports';
import { callWithEntryRetries } from '../retry-entries';
import { autoHeartbeat } from './heartbeat';
import type { TaskExecutor, TaskOutcome, TaskRun } from './types';

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
  /** Renews the claim's lease after each extended visibility; false when the lease is lost. None: no claim. */
  readonly extendLease?: (now: number) => Promise<boolean>;
}

/** Runs the attempt; never throws. */
export async function runAttempt(ports: AttemptPorts, request: AttemptRequest): Promise<TaskOutcome> {
  const { clock } = ports;
  const { message, visibilityTimeoutSeconds } = request;
  let visibleUntil = request.visibleUntil;
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
    return request.extendLease ? request.extendLease(now) : true;
  };
  const beating = autoHeartbeat({
    clock,
    visibilityTimeoutSeconds,
    hardEnd: request.hardEnd,
    visibleUntil: () => visibleUntil,
    beat: heartbeat,
  });
  try {
    return await ports.executor.run(request.run, { heartbeat });
  } catch (error) {
    return { status: 'failed', kind: 'crashed', durationMs: 0, error: { type: 'ExecutorError', message: describe(error) } };
  } finally {
    beating.stop();
  }
}

import { type ArchiveReason, type ArchiveRecord, archiveEntry } from './archive';
import { retryDelaySeconds } from './backoff';
import type { Clock } from './clock';
import type { QueueConfig, TaskworkerConfig } from './config';
import { type DecodedJob, decodeEnvelope } from './envelope';
import { EnvelopeError } from './errors';
import type { SerializedError, TaskExecutor, TaskOutcome } from './executor/types';
import type { Logger, QueueClient, ReceivedMessage, VisibilityEntry } from './ports';
import type { Random } from './random';
import { callWithEntryRetries } from './retry-entries';
import type { Probes, QueueSelector } from './selectors/types';
import { addBatch, type BatchReport, type DispatcherSummary, emptySummary, type JobReport } from './summary';
import type { TaskDefinition, TaskRegistry } from './task';

/** Where each configured queue and the archive live. */
export interface QueueUrls {
  readonly queues: Readonly<Record<string, string>>;
  readonly archive: string;
}

/** Receives every settled batch: metrics, local progress displays, tests. */
export interface DispatcherObserver {
  onBatch(report: BatchReport): void;
}

export interface DispatcherDeps {
  readonly config: TaskworkerConfig;
  readonly registry: TaskRegistry;
  readonly queues: QueueClient;
  readonly urls: QueueUrls;
  readonly executor: TaskExecutor;
  readonly selector: QueueSelector<ReceivedMessage>;
  readonly clock: Clock;
  readonly random: Random;
  readonly logger: Logger;
  readonly workerId: string;
  readonly observer?: DispatcherObserver;
}

export interface RunOptions {
  /** Epoch ms when the invocation must have returned (Lambda: now + remaining time). */
  readonly deadline: number;
  /** Aborting stops new receives and unstarted tasks; running tasks finish and the batch is settled. */
  readonly signal?: AbortSignal;
}

/** Pause after a failed receive or selection, so an outage does not become a hot loop. */
const ERROR_PAUSE_MS = 1000;
/** Pause after a selection that found nothing without long-polling (long poll 0, or too little time for one). */
const IDLE_PAUSE_MS = 200;
/** Below this much usable time the loop ends: there is no room for a receive and a settle. */
const MIN_USABLE_MS = 1000;

/** The receive-or-attributes probes selectors use, bound to a queue client. */
export function queueProbes(queues: QueueClient, urls: QueueUrls): Probes<ReceivedMessage> {
  return {
    async receive(queue) {
      const messages = await queues.receive(urls.queues[queue.name] as string, {
        maxMessages: queue.batchSize,
        waitSeconds: 0,
        visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
      });
      return { empty: messages.length === 0, messages };
    },
    async attributes(queue) {
      const depth = await queues.depth(urls.queues[queue.name] as string);
      return { empty: depth.visible === 0, messages: [] };
    },
  };
}

interface Planned {
  readonly message: ReceivedMessage;
  readonly job: DecodedJob;
  readonly def: TaskDefinition;
}

interface ToArchive {
  readonly message: ReceivedMessage;
  readonly record: ArchiveRecord;
}

/** Messages of one batch sorted by how they are settled: one batch call per list. */
interface Settlement {
  readonly deletes: ReceivedMessage[];
  readonly archives: ToArchive[];
  readonly visibility: Array<{ message: ReceivedMessage; seconds: number }>;
  readonly reports: Map<string, JobReport>;
}

/**
 * The dispatcher loop: select a queue, receive up to `iterations` batches from it, run each
 * batch's tasks concurrently under their time limits, settle, repeat until the deadline.
 * One bad message or one failed call never stops the loop.
 */
export async function runDispatcher(deps: DispatcherDeps, options: RunOptions): Promise<DispatcherSummary> {
  const { config, clock, logger, selector } = deps;
  const margin = config.dispatcher.settleMarginMs;
  const summary = emptySummary();
  const stopped = () => options.signal?.aborted === true;
  const usableMs = () => options.deadline - margin - clock.now();

  const longestTaskMs = longestTaskByQueue(deps);
  const fitting = () => config.queues.filter((q) => (longestTaskMs.get(q.name) ?? 0) <= usableMs());

  while (!stopped() && usableMs() >= MIN_USABLE_MS) {
    const candidates = fitting();
    if (candidates.length === 0) {
      logger.info('time left is too short for any queue; ending the invocation early', { usableMs: usableMs() });
      break;
    }
    let selection: Awaited<ReturnType<typeof selector.select>>;
    try {
      selection = await selector.select(candidates);
    } catch (error) {
      summary.errors += 1;
      logger.error('queue selection failed', { error: describe(error) });
      await clock.sleep(Math.min(ERROR_PAUSE_MS, Math.max(0, usableMs())), options.signal);
      continue;
    }
    summary.selections += 1;
    const queue = selection.queue;
    let batch: readonly ReceivedMessage[] = selection.messages;
    let longPolled = false;
    let receivedAny = batch.length > 0;
    if (batch.length > 0) observe(deps, summary, queue, batch);
    for (let i = 0; i < queue.iterations && !stopped(); i++) {
      if (i > 0 && (longestTaskMs.get(queue.name) ?? 0) > usableMs()) break;
      if (i > 0 || batch.length === 0) {
        const waitSeconds = Math.min(i === 0 ? selection.waitSeconds : queue.longPollSeconds, Math.floor(usableMs() / 1000));
        if (waitSeconds < 0) break;
        longPolled ||= waitSeconds > 0;
        try {
          batch = await deps.queues.receive(
            deps.urls.queues[queue.name] as string,
            { maxMessages: queue.batchSize, waitSeconds, visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds },
            options.signal,
          );
        } catch (error) {
          if (stopped()) break;
          summary.errors += 1;
          logger.error('receive failed', { queue: queue.name, error: describe(error) });
          await clock.sleep(Math.min(ERROR_PAUSE_MS, Math.max(0, usableMs())), options.signal);
          break;
        }
        observe(deps, summary, queue, batch);
        receivedAny ||= batch.length > 0;
      }
      if (batch.length === 0) break;
      const report = await processBatch(deps, queue, batch, options);
      addBatch(summary, report);
      try {
        deps.observer?.onBatch(report);
      } catch (error) {
        logger.warn('batch observer failed', { error: describe(error) });
      }
    }
    if (!receivedAny && !longPolled) await clock.sleep(Math.min(IDLE_PAUSE_MS, Math.max(0, usableMs())), options.signal);
  }
  return summary;
}

/**
 * Per queue, the time its longest registered task needs (limit + kill grace). A queue is only
 * received from while that fits the time left, so messages are not taken just to be released
 * (each release adds a receive, and enough of them move a message to the DLQ).
 */
function longestTaskByQueue(deps: DispatcherDeps): Map<string, number> {
  const longest = new Map<string, number>();
  for (const def of deps.registry.values()) {
    const need = def.timeLimitSeconds * 1000 + deps.config.dispatcher.killGraceMs;
    longest.set(def.queue, Math.max(longest.get(def.queue) ?? 0, need));
  }
  return longest;
}

function observe(deps: DispatcherDeps, summary: DispatcherSummary, queue: QueueConfig, batch: readonly ReceivedMessage[]): void {
  summary.receives += 1;
  if (batch.length === 0) summary.emptyReceives += 1;
  const now = deps.clock.now();
  const oldest = batch.reduce((min, m) => Math.min(min, m.sentTimestamp), now);
  deps.selector.observe?.({ queue: queue.name, received: batch.length, oldestAgeMs: now - oldest });
}

/** Decodes, runs and settles one received batch. Never throws. */
export async function processBatch(
  deps: DispatcherDeps,
  queue: QueueConfig,
  batch: readonly ReceivedMessage[],
  options: RunOptions,
): Promise<BatchReport> {
  const receivedAt = deps.clock.now();
  const settlement: Settlement = { deletes: [], archives: [], visibility: [], reports: new Map() };
  const runnable: Planned[] = [];
  for (const message of batch) {
    const planned = plan(deps, queue, message, settlement);
    if (planned) runnable.push(planned);
  }
  await forEachConcurrently(runnable, deps.config.dispatcher.concurrency, (p) => runOne(deps, queue, p, receivedAt, options, settlement));
  const settleRetries = await settle(deps, queue, settlement);
  return { queue: queue.name, jobs: batch.map((m) => settlement.reports.get(m.messageId) as JobReport), settleRetries };
}

/** Decodes one message; routes undecodable and unknown ones to the archive. */
function plan(deps: DispatcherDeps, queue: QueueConfig, message: ReceivedMessage, settlement: Settlement): Planned | undefined {
  let job: DecodedJob;
  try {
    job = decodeEnvelope(message.body, { messageId: message.messageId, sentTimestamp: message.sentTimestamp });
  } catch (error) {
    const envelopeError = error instanceof EnvelopeError ? error : undefined;
    archive(deps, queue, settlement, message, undefined, 'malformed', {
      type: 'EnvelopeError',
      message: envelopeError?.message ?? describe(error),
      ...(envelopeError ? { code: envelopeError.code } : {}),
    });
    return undefined;
  }
  const def = deps.registry.get(job.task);
  if (!def) {
    archive(deps, queue, settlement, message, job, 'unknown-task', {
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
  settlement: Settlement,
): Promise<void> {
  const now = deps.clock.now();
  const timeLimitMs = def.timeLimitSeconds * 1000;
  const needMs = timeLimitMs + deps.config.dispatcher.killGraceMs;
  const fitsInvocation = now + needMs <= options.deadline - deps.config.dispatcher.settleMarginMs;
  const fitsVisibility = now + needMs <= receivedAt + queue.visibilityTimeoutSeconds * 1000;
  if (options.signal?.aborted || !fitsInvocation || !fitsVisibility) {
    settlement.visibility.push({ message, seconds: 0 });
    settlement.reports.set(message.messageId, {
      messageId: message.messageId,
      jobId: job.id,
      task: def.name,
      outcome: 'released',
      attempt: message.receiveCount,
    });
    return;
  }
  const attempt = message.receiveCount;
  let outcome: TaskOutcome;
  try {
    outcome = await deps.executor.run({
      task: def.name,
      jobId: job.id,
      queue: queue.name,
      attempt,
      payload: job.payload,
      appData: job.appData,
      timeLimitMs,
    });
  } catch (error) {
    outcome = { status: 'failed', kind: 'crashed', durationMs: 0, error: { type: 'ExecutorError', message: describe(error) } };
  }
  const base = {
    messageId: message.messageId,
    jobId: job.id,
    task: def.name,
    attempt,
    waitMs: Math.max(0, now - job.publishedAt),
    runMs: outcome.durationMs,
  };
  if (outcome.status === 'succeeded') {
    settlement.deletes.push(message);
    settlement.reports.set(message.messageId, { ...base, outcome: 'succeeded' });
    return;
  }
  const reason = archiveReasonFor(outcome, attempt, def);
  if (reason) {
    archive(deps, queue, settlement, message, job, reason, outcome.error, base);
    return;
  }
  const seconds = retryDelaySeconds(attempt, def.backoff, deps.random);
  settlement.visibility.push({ message, seconds });
  settlement.reports.set(message.messageId, { ...base, outcome: 'retried' });
  deps.logger.info('task failed; retrying', {
    task: def.name,
    jobId: job.id,
    attempt,
    retryInSeconds: seconds,
    error: outcome.error.message,
  });
}

/** Undefined means retry. Attempts are SQS receive counts until tracking makes them authoritative. */
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
  settlement: Settlement,
  message: ReceivedMessage,
  job: DecodedJob | undefined,
  reason: ArchiveReason,
  error: SerializedError & { code?: string },
  base?: Omit<JobReport, 'outcome'>,
): void {
  const record: ArchiveRecord = {
    reason,
    detail: error.message,
    errorType: error.type,
    ...(error.stack !== undefined ? { errorStack: error.stack } : {}),
    ...(error.code !== undefined ? { code: error.code } : {}),
    attempts: message.receiveCount,
    queue: queue.name,
    ...(job ? { task: job.task, jobId: job.id } : {}),
    messageId: message.messageId,
    sentTimestamp: message.sentTimestamp,
    archivedAt: deps.clock.now(),
    workerId: deps.workerId,
  };
  settlement.archives.push({ message, record });
  settlement.reports.set(message.messageId, {
    ...(base ?? { messageId: message.messageId, attempt: message.receiveCount, ...(job ? { jobId: job.id, task: job.task } : {}) }),
    outcome: 'archived',
    reason,
  });
  deps.logger.warn('archiving message', {
    queue: queue.name,
    reason,
    messageId: message.messageId,
    task: job?.task,
    detail: error.message,
  });
}

/**
 * Settles a batch with one call per outcome list, archive first: send to the archive, then delete
 * what succeeded or was archived, then change visibility for retries and releases. A message whose
 * archive send failed is not deleted, so it comes back; nothing is lost.
 */
async function settle(deps: DispatcherDeps, queue: QueueConfig, s: Settlement): Promise<number> {
  const url = deps.urls.queues[queue.name] as string;
  let retries = 0;
  const markUnsettled = (messageId: string) => {
    const report = s.reports.get(messageId);
    if (report) s.reports.set(messageId, { ...report, unsettled: true });
  };
  const deletes = [...s.deletes];
  if (s.archives.length > 0) {
    const entries = s.archives.map(({ message, record }) => archiveEntry(message.messageId, message.body, record));
    const sent = await callWithEntryRetries(entries, (e) => deps.queues.sendBatch(deps.urls.archive, e), deps.clock);
    retries += sent.retries;
    const notSent = new Set(sent.failed.map((f) => f.id));
    for (const { message } of s.archives) {
      if (notSent.has(message.messageId)) markUnsettled(message.messageId);
      else deletes.push(message);
    }
    logFailures(deps, 'archive send', queue, sent.failed);
  }
  if (deletes.length > 0) {
    const entries = deletes.map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle }));
    const deleted = await callWithEntryRetries(entries, (e) => deps.queues.deleteBatch(url, e), deps.clock);
    retries += deleted.retries;
    for (const f of deleted.failed) markUnsettled(f.id);
    logFailures(deps, 'delete', queue, deleted.failed);
  }
  if (s.visibility.length > 0) {
    const entries: VisibilityEntry[] = s.visibility.map(({ message, seconds }) => ({
      id: message.messageId,
      receiptHandle: message.receiptHandle,
      visibilityTimeoutSeconds: seconds,
    }));
    const changed = await callWithEntryRetries(entries, (e) => deps.queues.changeVisibilityBatch(url, e), deps.clock);
    retries += changed.retries;
    for (const f of changed.failed) markUnsettled(f.id);
    logFailures(deps, 'visibility change', queue, changed.failed);
  }
  return retries;
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

/** Runs `fn` over items with at most `limit` in flight. */
export async function forEachConcurrently<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

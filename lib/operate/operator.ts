export type { RedriveResult, ReplayResult } from './answers';

import type { DynamoClientOption, SqsClientOption } from '../aws/clients';
import { s3PayloadStore, sqsQueues, versionStores } from '../aws/wiring';
import { type Clock, systemClock } from '../clock';
import type { TaskworkerConfig } from '../config/app-config';
import { MoveTaskUnavailableError, TaskworkerError } from '../errors';
import { archiveQueueName, deadLetterQueueName, queueResourceName } from '../layout/queues';
import { tableNames } from '../layout/tables';
import type {
  DeadLetterMover,
  OldestAge,
  PayloadStore,
  QueueClient,
  QueueDepth,
  QueueDirectory,
  QueueLister,
  QueueUrls,
  ReceivedMessage,
} from '../ports';
import { type StoredResultReader, storedResultReader } from '../publish/results';
import { callWithEntryRetries, chunk } from '../retry-entries';
import { type ControlStore, NO_CONTROLS } from '../track/controls';
import { edgesOf, reopenDependents } from '../track/flows';
import type { JobRecord, JobState, JobStore, QueueDayStats, StatsStore } from '../track/model';
import { INDEXED_STATES, jobPayloadDigest } from '../track/rules';
import { bucketQuantile, utcDay } from '../track/stats';
import type { MetricsThroughput } from '../track/throughput';
import { lastMinutes, type MinuteCounts, NO_COUNTS, type Throughput } from '../track/throughput';
import type { WorkerRegistry } from '../track/workers';
import { type ArchiveReason, isRejection } from '../wire/archive-reasons';
import { type ArchiveRecord, readArchiveRecord } from '../wire/archive-record';
import { type DecodedJob, decodeEnvelope, envelopeWithout, pinEnvelope } from '../wire/envelope';
import type { RedriveResult, ReplayResult } from './answers';
import { controlView, type QueueControlView } from './controls';
import { runningJobs } from './running';

function decodedOrUndefined(message: ReceivedMessage) {
  try {
    return decodeEnvelope(message.body, { messageId: message.messageId, sentTimestamp: message.sentTimestamp });
  } catch {
    return undefined;
  }
}

/** The version's queues or tables are not there: it was never deployed, or was destroyed. */
export class VersionNotFoundError extends TaskworkerError {
  readonly version: string;
  constructor(version: string, resource: string, options?: { cause?: unknown }) {
    super(`version ${version} is not deployed here: ${resource} does not exist`, options);
    this.name = 'VersionNotFoundError';
    this.version = version;
  }
}

export interface VersionUrls extends QueueUrls {
  readonly deadLetter: Readonly<Record<string, string>>;
}

/** What every operator command works on: one release version's queues and tables. */
export interface OperatorContext {
  readonly config: TaskworkerConfig;
  readonly version: string;
  readonly queues: QueueClient & DeadLetterMover;
  readonly urls: VersionUrls;
  readonly jobs: JobStore;
  readonly stats: StatsStore;
  /** The operator controls (paused queues, priority and SLA set at run time); without it status shows the config. */
  readonly controls?: ControlStore;
  /** The worker registry (`taskworker workers`); without it no worker is listed. */
  readonly workers?: WorkerRegistry;
  readonly clock: Clock;
  /** Reads a result the dispatcher kept in the version's bucket (over 1 KB); without it such a result shows its size only. */
  readonly readStoredResult?: StoredResultReader;
  /** Age of the oldest message per queue resource name (CloudWatch), when available. */
  readonly oldestAge?: OldestAge;
  /** Jobs per queue and minute from CloudWatch (AWS); without it {@link throughput} reads the stats table's minute counters. */
  readonly metricsThroughput?: MetricsThroughput;
}

/** Seconds, per queue resource name; undefined where unknown. */

export interface OperatorOptions {
  readonly config: TaskworkerConfig;
  readonly version: string;
  readonly sqs?: SqsClientOption;
  readonly dynamo?: DynamoClientOption;
  /** Age of the oldest message per queue resource name, e.g. {@link cloudWatchOldestAge}'s (AWS only; emulators have none). */
  readonly oldestAge?: OldestAge;
  /** Jobs per queue and minute, e.g. {@link cloudWatchThroughput}'s (AWS only). */
  readonly metricsThroughput?: MetricsThroughput;
  readonly clock?: Clock;
}

/** Resolves a version's queue URLs by name; a missing queue becomes {@link VersionNotFoundError}. */
export async function resolveVersionUrls(directory: QueueDirectory, config: TaskworkerConfig, version: string): Promise<VersionUrls> {
  const lookup = async (name: string) => {
    const url = await directory.urlOf(name);
    if (url === undefined) throw new VersionNotFoundError(version, `queue ${name}`);
    return url;
  };
  // One at a time, in config order: a version that is not deployed is reported by its first queue.
  const queues: Record<string, string> = {};
  const deadLetter: Record<string, string> = {};
  for (const q of config.queues) {
    queues[q.name] = await lookup(queueResourceName(config.app, version, q.name));
    deadLetter[q.name] = await lookup(deadLetterQueueName(config.app, version, q.name));
  }
  return { queues, deadLetter, archive: await lookup(archiveQueueName(config.app, version)) };
}

export async function operatorContext(options: OperatorOptions): Promise<OperatorContext> {
  const queues = sqsQueues(options.sqs);
  const urls = await resolveVersionUrls(queues, options.config, options.version);
  let s3: PayloadStore | undefined;
  const { jobs, stats, controls, workers } = versionStores(options.config, tableNames(options.config.app, options.version), options.dynamo);
  return {
    config: options.config,
    version: options.version,
    queues,
    urls,
    jobs,
    stats,
    controls,
    workers,
    clock: options.clock ?? systemClock,
    // The S3 client (and @aws-sdk/client-s3) is made only when a kept result is first read.
    readStoredResult: storedResultReader(() => {
      s3 ??= s3PayloadStore();
      return s3;
    }),
    ...(options.oldestAge ? { oldestAge: options.oldestAge } : {}),
    ...(options.metricsThroughput ? { metricsThroughput: options.metricsThroughput } : {}),
  };
}

/**
 * Jobs started, succeeded and archived per queue and minute over the last `minutes` (1..180):
 * from CloudWatch where the context has it (AWS) and it answers, else from the stats table's minute counters
 * (`taskworker dev`; one BatchGetItem per queue).
 */
export async function throughput(ctx: OperatorContext, minutes: number): Promise<Throughput> {
  const keys = lastMinutes(ctx.clock.now(), minutes);
  const queues = ctx.config.queues.map((q) => q.name);
  if (ctx.metricsThroughput) {
    // A refusal (no cloudwatch:GetMetricData on these credentials) falls back to the stats table.
    const counts = await ctx
      .metricsThroughput({ service: ctx.config.app, version: ctx.version, queues, minutes: keys })
      .catch(() => undefined);
    if (counts) return { source: 'cloudwatch', minutes: keys, queues: counts };
  }
  const read = ctx.stats.minutes;
  const entries = await Promise.all(
    queues.map(async (queue): Promise<[string, MinuteCounts[]]> => {
      const found = read ? await read.call(ctx.stats, queue, keys) : {};
      return [queue, keys.map((k) => found[k] ?? NO_COUNTS)];
    }),
  );
  return { source: 'stats', minutes: keys, queues: Object.fromEntries(entries) };
}

export interface QueueStatus extends QueueControlView {
  readonly queue: string;
  /** The priority in force: an operator's override, else the config's ({@link QueueControlView}). */
  readonly priority: number;
  readonly depth: QueueDepth;
  readonly deadLetter: number;
  /** Seconds; undefined where CloudWatch is not available. */
  readonly oldestAgeSeconds: number | undefined;
  /** The SLA in force, seconds. */
  readonly slaSeconds: number;
  /** Today's wait (publish → start) from the stats table, ms. */
  readonly waitP50Ms: number;
  readonly waitP99Ms: number;
  readonly today: QueueDayStats | undefined;
}

export interface VersionStatus {
  readonly version: string;
  readonly day: string;
  readonly queues: readonly QueueStatus[];
  readonly archive: number;
  /** Nothing visible, in flight or delayed on any queue: safe to destroy once the DLQs and archive are handled. */
  readonly drained: boolean;
}

export async function versionStatus(ctx: OperatorContext): Promise<VersionStatus> {
  const day = utcDay(ctx.clock.now());
  const names = ctx.config.queues.map((q) => queueResourceName(ctx.config.app, ctx.version, q.name));
  const ages = ctx.oldestAge ? await ctx.oldestAge(names).catch(() => ({}) as Record<string, number | undefined>) : {};
  // Consistent: an operator who just paused a queue sees it paused.
  const controls = ctx.controls ? await ctx.controls.read(true) : NO_CONTROLS;
  const queues = await Promise.all(
    ctx.config.queues.map(async (q, i): Promise<QueueStatus> => {
      const [depth, dlq, today] = await Promise.all([
        ctx.queues.depth(ctx.urls.queues[q.name] as string),
        ctx.queues.depth(ctx.urls.deadLetter[q.name] as string),
        ctx.stats.get(q.name, day),
      ]);
      return {
        queue: q.name,
        ...controlView(q, controls.queues[q.name]),
        depth,
        deadLetter: dlq.visible + dlq.inFlight + dlq.delayed,
        oldestAgeSeconds: ages[names[i] as string],
        waitP50Ms: today ? bucketQuantile(today.wait, 0.5) : Number.NaN,
        waitP99Ms: today ? bucketQuantile(today.wait, 0.99) : Number.NaN,
        today,
      };
    }),
  );
  const archive = await ctx.queues.depth(ctx.urls.archive);
  return {
    version: ctx.version,
    day,
    queues,
    archive: archive.visible + archive.inFlight + archive.delayed,
    drained: queues.every((q) => q.depth.visible + q.depth.inFlight + q.depth.delayed === 0),
  };
}

export interface ArchiveFilter {
  readonly reason?: ArchiveReason;
  readonly task?: string;
  /** Only these archived messages (by their message id). */
  readonly messageIds?: readonly string[];
  /** Only the archive entries of this job. */
  readonly jobId?: string;
}

export interface ArchivedMessage {
  readonly messageId: string;
  readonly record: ArchiveRecord | undefined;
  readonly body: string;
}

const matches = (filter: ArchiveFilter, record: ArchiveRecord | undefined, messageId: string) =>
  (filter.reason === undefined || record?.reason === filter.reason) &&
  (filter.task === undefined || record?.task === filter.task) &&
  (filter.messageIds === undefined || filter.messageIds.includes(messageId)) &&
  (filter.jobId === undefined || record?.jobId === filter.jobId);

/** How long scanned archive messages stay hidden, so a scan does not see one twice. */
const SCAN_VISIBILITY_SECONDS = 120;

/**
 * Walks the archive queue: receives batches (hiding them while the walk lasts), hands each
 * message to `visit`, and makes everything it did not consume visible again at the end.
 * `visit` returns true when it consumed (deleted) the message.
 */
async function walkArchive(
  ctx: OperatorContext,
  visit: (message: ReceivedMessage, record: ArchiveRecord | undefined) => Promise<'consumed' | 'kept' | 'stop'>,
): Promise<void> {
  const kept: ReceivedMessage[] = [];
  const seen = new Set<string>();
  try {
    walk: for (;;) {
      const batch = await ctx.queues.receive(ctx.urls.archive, {
        maxMessages: 10,
        waitSeconds: 0,
        visibilityTimeoutSeconds: SCAN_VISIBILITY_SECONDS,
      });
      const fresh = batch.filter((m) => !seen.has(m.messageId));
      if (fresh.length === 0) break;
      for (const message of fresh) {
        seen.add(message.messageId);
        const verdict = await visit(message, readArchiveRecord(message.attributes));
        if (verdict !== 'consumed') kept.push(message);
        if (verdict === 'stop') {
          kept.push(...fresh.slice(fresh.indexOf(message) + 1));
          break walk;
        }
      }
    }
  } finally {
    for (const part of chunk(kept, 10)) {
      await callWithEntryRetries(
        part.map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle, visibilityTimeoutSeconds: 0 })),
        (entries) => ctx.queues.changeVisibilityBatch(ctx.urls.archive, entries),
        ctx.clock,
      );
    }
  }
}

/** Archived messages matching the filter, oldest archive first as SQS hands them out. Leaves the archive as it was. */
export async function listArchived(ctx: OperatorContext, filter: ArchiveFilter, limit: number): Promise<ArchivedMessage[]> {
  const found: ArchivedMessage[] = [];
  await walkArchive(ctx, async (message, record) => {
    if (!matches(filter, record, message.messageId)) return 'kept';
    found.push({ messageId: message.messageId, record, body: message.body });
    return found.length >= limit ? 'stop' : 'kept';
  });
  return found;
}

/** How many archived messages match the filter, counting up to `cap` (the walk stops there). */
export async function countArchived(
  ctx: OperatorContext,
  filter: ArchiveFilter,
  cap = 10_000,
): Promise<{ count: number; capped: boolean }> {
  let count = 0;
  await walkArchive(ctx, async (message, record) => {
    if (matches(filter, record, message.messageId)) count += 1;
    return count >= cap ? 'stop' : 'kept';
  });
  return { count, capped: count >= cap };
}

/**
 * Sends archived messages back to the queue they came from, attempts reset (a tracked job goes
 * back to `queued` with attempt 0), then deletes them from the archive. Send first, delete after:
 * an interrupted replay leaves a copy in the archive, never loses one; a job replayed twice runs
 * once, because the claim stops the second copy.
 */
export async function replayArchived(
  ctx: OperatorContext,
  filter: ArchiveFilter,
  limit: number,
  onProgress?: (done: number) => void,
): Promise<ReplayResult> {
  let replayed = 0;
  const skipped: Array<{ messageId: string; why: string }> = [];
  await walkArchive(ctx, async (message, record) => {
    if (!matches(filter, record, message.messageId)) return 'kept';
    if (replayed >= limit) return 'stop';
    const origin = record ? ctx.urls.queues[record.queue] : undefined;
    if (!record || !origin) {
      skipped.push({ messageId: message.messageId, why: record ? `queue ${record.queue} is not configured` : 'no archive record' });
      return 'kept';
    }
    if (record.reason === 'malformed' && filter.reason !== 'malformed' && filter.messageIds === undefined) {
      skipped.push({ messageId: message.messageId, why: 'malformed (replay it explicitly with --reason malformed)' });
      return 'kept';
    }
    // A job that ran goes back to `queued` with its attempts reset, if the record is still that job
    // (a rejected message's record is its own delivery's and stays as it was).
    const job = isRejection(record.reason) ? undefined : decodedOrUndefined(message);
    if (record.jobId && job) {
      await ctx.jobs.resetForReplay(record.jobId, { task: job.task, payloadDigest: jobPayloadDigest(job) }, ctx.clock.now());
      // The jobs its failure archived wait again, before it can run and count into them.
      const replayed = await ctx.jobs.get(record.jobId);
      if (replayed) await reopenDependents(ctx, record.jobId, edgesOf(replayed));
    }
    const sent = await callWithEntryRetries(
      [{ id: 'replay', body: job ? replayBody(message.body, job, record.reason) : message.body }],
      (entries) => ctx.queues.sendBatch(origin, entries),
      ctx.clock,
    );
    if (sent.failed.length > 0) {
      skipped.push({ messageId: message.messageId, why: `send failed: ${sent.failed[0]?.code}` });
      return 'kept';
    }
    await callWithEntryRetries(
      [{ id: message.messageId, receiptHandle: message.receiptHandle }],
      (entries) => ctx.queues.deleteBatch(ctx.urls.archive, entries),
      ctx.clock,
    );
    replayed += 1;
    onProgress?.(replayed);
    return 'consumed';
  });
  return { replayed, skipped };
}

/** A job's body as it is replayed: its id pinned (a job published without one was known by its first message's id), an expired one's expiry left out. */
function replayBody(body: string, job: DecodedJob, reason: ArchiveReason): string {
  const pinned = pinEnvelope(body, job);
  return reason === 'expired' ? envelopeWithout(pinned, 'expiresAt') : pinned;
}

/**
 * Moves each dead-letter queue's messages back to its source queue: with SQS's own move task, or
 * where the service has none (emulators), by receiving, re-sending and then deleting each batch.
 */
export async function redriveDeadLetters(ctx: OperatorContext, queue?: string, wait = true): Promise<RedriveResult[]> {
  const names = queue ? [queue] : ctx.config.queues.map((q) => q.name);
  const results: RedriveResult[] = [];
  for (const name of names) {
    const dlqUrl = ctx.urls.deadLetter[name];
    if (!dlqUrl) throw new VersionNotFoundError(ctx.version, `queue ${name}`);
    const depth = await ctx.queues.depth(dlqUrl);
    const messages = depth.visible + depth.inFlight + depth.delayed;
    if (messages === 0) {
      results.push({ queue: name, messages });
      continue;
    }
    let started: { readonly taskHandle?: string };
    try {
      started = await ctx.queues.startMove(dlqUrl);
    } catch (error) {
      if (!(error instanceof MoveTaskUnavailableError)) throw error;
      const moved = await moveMessages(ctx, dlqUrl, ctx.urls.queues[name] as string);
      results.push({ queue: name, messages: moved, via: 'client', status: 'COMPLETED', moveTaskError: error.message });
      continue;
    }
    let status = 'RUNNING';
    for (let i = 0; wait && status === 'RUNNING' && i < 600; i++) {
      await ctx.clock.sleep(500);
      status = await ctx.queues.moveStatus(dlqUrl);
    }
    results.push({ queue: name, messages, via: 'move-task', ...(started.taskHandle ? { taskHandle: started.taskHandle } : {}), status });
  }
  return results;
}

/** Moves messages between queues, send first and delete after, so an interruption duplicates rather than loses. */
async function moveMessages(ctx: OperatorContext, fromUrl: string, toUrl: string): Promise<number> {
  let moved = 0;
  for (;;) {
    const batch = await ctx.queues.receive(fromUrl, { maxMessages: 10, waitSeconds: 0, visibilityTimeoutSeconds: 60 });
    if (batch.length === 0) return moved;
    const sent = await callWithEntryRetries(
      batch.map((m) => ({ id: m.messageId, body: m.body, ...(Object.keys(m.attributes).length > 0 ? { attributes: m.attributes } : {}) })),
      (entries) => ctx.queues.sendBatch(toUrl, entries),
      ctx.clock,
    );
    const failed = new Set(sent.failed.map((f) => f.id));
    const done = batch.filter((m) => !failed.has(m.messageId));
    if (done.length > 0) {
      await callWithEntryRetries(
        done.map((m) => ({ id: m.messageId, receiptHandle: m.receiptHandle })),
        (entries) => ctx.queues.deleteBatch(fromUrl, entries),
        ctx.clock,
      );
    }
    moved += done.length;
    if (failed.size > 0) throw new Error(`could not move ${failed.size} message(s): ${sent.failed[0]?.code}`);
  }
}

/** The release versions deployed where `lister` looks (account and region): those with an archive queue. */
export async function deployedVersions(lister: QueueLister, app: string): Promise<string[]> {
  // The archive queue's name without app and version: what follows `<app>-<version>`.
  const suffix = archiveQueueName('', '').slice(1);
  const names = await lister.namesWithPrefix(`${app}-`);
  return names
    .filter((name) => name.endsWith(suffix))
    .map((name) => name.slice(app.length + 1, name.length - suffix.length))
    .filter((version) => version.length > 0)
    .sort();
}

/** One queue's (or task's: `task:<name>`) stats for each of the last `days` UTC days, oldest first; days without any are left out. */
export async function statsHistory(ctx: OperatorContext, key: string, days: number): Promise<QueueDayStats[]> {
  const now = ctx.clock.now();
  const wanted = Array.from({ length: days }, (_, i) => utcDay(now - (days - 1 - i) * 86_400_000));
  const found = await Promise.all(wanted.map((day) => ctx.stats.get(key, day)));
  return found.filter((d): d is QueueDayStats => d !== undefined);
}

export interface JobsPageQuery {
  readonly state: JobState;
  readonly queues: readonly string[];
  readonly task?: string;
  readonly limit: number;
  /** From the previous page's `next`. */
  readonly cursor?: string;
}

export interface JobsPage {
  readonly jobs: readonly JobRecord[];
  /** Where the next page starts; absent on the last page. */
  readonly next?: string;
  /**
   * The state has no index: the jobs are the first a table scan found (sorted, but not the newest
   * of the table), and there are no further pages.
   */
  readonly scanned?: boolean;
  /**
   * Running jobs: those the live workers held at their last beat, confirmed running now, newest
   * start first, without a scan (lib/operate/running.ts); `running` of them in all (the page shows
   * the newest `limit`), and `uncarried` more the beats had no room to name. No further pages.
   */
  readonly fromWorkers?: { readonly running: number; readonly uncarried: number };
}

/** What a page cursor carries: the oldest update time shown, and the jobs shown with exactly that time. */
interface PageMark {
  readonly at: number;
  readonly ids: readonly string[];
}

/** Thrown for a page cursor this server did not make. */
export class BadCursorError extends TaskworkerError {
  constructor(cursor: string) {
    super(`cursor ${JSON.stringify(cursor.slice(0, 40))} is not one this list handed out`);
    this.name = 'BadCursorError';
  }
}

function readCursor(cursor: string): PageMark {
  try {
    const mark = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as PageMark;
    if (Number.isFinite(mark.at) && Array.isArray(mark.ids) && mark.ids.every((id) => typeof id === 'string')) return mark;
  } catch {
    // reported below
  }
  throw new BadCursorError(cursor);
}

/**
 * One page of jobs in a state, newest update first. A page ends at an update time and the next
 * starts at that same time minus the jobs already shown, so jobs updated in the same millisecond
 * are neither skipped nor shown twice. Running jobs come from the live workers' beats, newest start
 * first ({@link JobsPage.fromWorkers}); the other states without an index (queued, succeeded, and
 * running without a worker registry) give one page of what a scan found first ({@link JobsPage.scanned}).
 */
export async function listJobsPage(ctx: OperatorContext, q: JobsPageQuery): Promise<JobsPage> {
  if (q.state === 'running' && ctx.workers) {
    const running = await runningJobs({ workers: ctx.workers, jobs: ctx.jobs, clock: ctx.clock }, q);
    return { jobs: running.jobs.slice(0, q.limit), fromWorkers: { running: running.jobs.length, uncarried: running.uncarried } };
  }
  if (!INDEXED_STATES.includes(q.state)) {
    const jobs = await ctx.jobs.list({
      state: q.state,
      queues: q.queues,
      ...(q.task !== undefined ? { task: q.task } : {}),
      limit: q.limit,
    });
    return { jobs, scanned: true };
  }
  const mark = q.cursor === undefined ? undefined : readCursor(q.cursor);
  const shown = new Set(mark?.ids ?? []);
  const found = await ctx.jobs.list({
    state: q.state,
    queues: q.queues,
    ...(q.task !== undefined ? { task: q.task } : {}),
    limit: q.limit + shown.size + 1,
    ...(mark ? { updatedAtMost: mark.at } : {}),
  });
  const fresh = found.filter((job) => !shown.has(job.jobId));
  const jobs = fresh.slice(0, q.limit);
  const last = jobs.at(-1);
  if (fresh.length <= q.limit || !last) return { jobs };
  const sameTime = jobs.filter((job) => job.updatedAt === last.updatedAt).map((job) => job.jobId);
  const ids = last.updatedAt === mark?.at ? [...shown, ...sameTime] : sameTime;
  return { jobs, next: Buffer.from(JSON.stringify({ at: last.updatedAt, ids } satisfies PageMark)).toString('base64url') };
}

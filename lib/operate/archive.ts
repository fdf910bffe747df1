/** The archive queue's commands: list and count archived messages, and replay them to their queues. */
import { MAX_BATCH_ENTRIES } from '../layout/sqs-limits';
import { edgesOf } from '../policy/dependency-rules';
import { jobPayloadDigest } from '../policy/job-rules';
import { redact } from '../policy/redaction';
import type { ReceivedMessage } from '../ports';
import { callWithEntryRetries, chunk } from '../retry-entries';
import { reopenDependents } from '../settle/dependents';
import { type ArchiveReason, isRejection } from '../wire/archive-reasons';
import { type ArchiveRecord, readArchiveRecord } from '../wire/archive-record';
import { type DecodedJob, decodeEnvelope, envelopeWithout, pinEnvelope } from '../wire/envelope';
import { markedRecorded } from '../wire/recorded';
import type { ReplayResult } from './answers';
import type { OperatorContext } from './operator-context';

export interface ArchiveFilter {
  readonly reason?: ArchiveReason;
  readonly task?: string;
  /** Only these archived messages (by their message id). */
  readonly messageIds?: readonly string[];
  /** Only the archive entries of this job. */
  readonly jobId?: string;
  /** Only messages archived from this queue. */
  readonly queue?: string;
  /** Only messages archived at or after this time (epoch ms). */
  readonly since?: number;
  /** Only messages archived before this time (epoch ms). */
  readonly until?: number;
}

export interface ArchivedMessage {
  readonly messageId: string;
  readonly record: ArchiveRecord | undefined;
  readonly body: string;
}

/**
 * An archived message as every view shows it: its body's payload with the task's `redact` fields
 * masked (the archive record carries the paths). The message in the archive stays whole: a replay
 * sends it back as it was. A body that is not a JSON envelope is shown as it is.
 */
export function shownArchived(message: ArchivedMessage): ArchivedMessage {
  const paths = message.record?.redact;
  if (!paths || paths.length === 0) return message;
  let envelope: unknown;
  try {
    envelope = JSON.parse(message.body);
  } catch {
    return message;
  }
  if (typeof envelope !== 'object' || envelope === null || !('payload' in envelope)) return message;
  const payload = (envelope as { payload: unknown }).payload;
  return { ...message, body: JSON.stringify({ ...envelope, payload: redact(payload, paths) }) };
}

const matches = (filter: ArchiveFilter, record: ArchiveRecord | undefined, messageId: string) =>
  (filter.reason === undefined || record?.reason === filter.reason) &&
  (filter.task === undefined || record?.task === filter.task) &&
  (filter.messageIds === undefined || filter.messageIds.includes(messageId)) &&
  (filter.jobId === undefined || record?.jobId === filter.jobId) &&
  (filter.queue === undefined || record?.queue === filter.queue) &&
  (filter.since === undefined || (record?.archivedAt ?? Number.NEGATIVE_INFINITY) >= filter.since) &&
  (filter.until === undefined || (record?.archivedAt ?? Number.POSITIVE_INFINITY) < filter.until);

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
    for (const part of chunk(kept, MAX_BATCH_ENTRIES)) {
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
  /** Awaited before each replay (a bulk run's rate). */
  pace?: () => Promise<void>,
): Promise<ReplayResult> {
  let replayed = 0;
  const skipped: Array<{ messageId: string; why: string }> = [];
  await walkArchive(ctx, async (message, record) => {
    if (!matches(filter, record, message.messageId)) return 'kept';
    if (replayed >= limit) return 'stop';
    await pace?.();
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
      // A job's record was reset for it: its claim expects the record (lib/wire/recorded.ts).
      [
        {
          id: 'replay',
          body: job ? replayBody(message.body, job, record.reason) : message.body,
          ...(job ? { attributes: markedRecorded({}) } : {}),
        },
      ],
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

/**
 * Deletes archived messages matching the filter from the archive, at most `limit`, each after
 * `pace`; resolves with how many. Their job records stay as they are (`archived`): the record, not
 * the message, is the job's history.
 */
export async function deleteArchived(
  ctx: OperatorContext,
  filter: ArchiveFilter,
  limit: number,
  onProgress?: (done: number) => void,
  pace?: () => Promise<void>,
): Promise<number> {
  let deleted = 0;
  await walkArchive(ctx, async (message, record) => {
    if (!matches(filter, record, message.messageId)) return 'kept';
    if (deleted >= limit) return 'stop';
    await pace?.();
    const out = await callWithEntryRetries(
      [{ id: message.messageId, receiptHandle: message.receiptHandle }],
      (entries) => ctx.queues.deleteBatch(ctx.urls.archive, entries),
      ctx.clock,
    );
    if (out.failed.length > 0) return 'kept';
    deleted += 1;
    onProgress?.(deleted);
    return 'consumed';
  });
  return deleted;
}

/** A job's body as it is replayed: its id pinned (a job published without one was known by its first message's id), an expired one's expiry left out. */
function replayBody(body: string, job: DecodedJob, reason: ArchiveReason): string {
  const pinned = pinEnvelope(body, job);
  return reason === 'expired' ? envelopeWithout(pinned, 'expiresAt') : pinned;
}

function decodedOrUndefined(message: ReceivedMessage) {
  try {
    return decodeEnvelope(message.body, { messageId: message.messageId, sentTimestamp: message.sentTimestamp });
  } catch {
    return undefined;
  }
}

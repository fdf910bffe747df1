/**
 * Sending a publish: the items prepared, their dependencies checked, large payloads put in the
 * version's bucket, the jobs that wait recorded, then SendMessageBatch per queue (at most 10
 * entries and 1 MiB a call), failed entries retried, and the jobs sent remembered and recorded.
 */
import { claimCheckRef, putClaimCheck } from '../claim-check';
import { type FailedPublish, MessageTooLargeError, PublishBatchError } from '../errors';
import { payloadKey } from '../layout/payloads';
import { bodyBytes, MAX_BATCH_ENTRIES, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import { MAX_DEBOUNCED_BODY_BYTES } from '../policy/debounce-rules';
import type { QueueUrls } from '../ports';
import { callWithEntryRetries } from '../retry-entries';
import { publishDebounced } from '../settle/debounce-cycles';
import { holdUniqueKey } from '../settle/unique-holds';
import type { DebounceWindow, UniqueWindow } from '../tasks/task';
import type { PublishSpan } from '../trace/producer';
import { encodeEnvelope, MAX_BODY_BYTES } from '../wire/envelope';
import { markRecorded, recordAhead, recordSent, remember } from './job-records';
import { numberOrdered, parkBeforeTurn, tagOrdered, takeTurnsCome } from './ordered-publish';
import { type Prepared, prepare } from './prepare';
import type { PublishContext } from './publish-context';
import { checkDependencies } from './publish-flows';
import type { Published, PublishItem } from './publish-options';

/** The most SendMessageBatch accepts in one call, in entries and in total bytes. */
const BATCH_ENTRIES = MAX_BATCH_ENTRIES;
const BATCH_BYTES = SQS_MESSAGE_LIMIT_BYTES;

export async function sendItems(ctx: PublishContext, items: readonly PublishItem[], span: PublishSpan): Promise<Published[]> {
  const now = ctx.clock.now();
  const checked = items.map((item, index) => prepare(ctx, item, index, now, span));
  await checkDependencies(ctx, checked);
  const urls = await ctx.queueUrls();
  const { held, joined: deduplicated } = await holdKeys(ctx, checked, now);
  let debounced: Awaited<ReturnType<typeof debounceKeys>> = { opened: [], joined: [] };
  let prepared: Prepared[];
  try {
    debounced = await debounceKeys(ctx, checked, urls, now);
    const joined = [...deduplicated, ...debounced.joined];
    const opened = new Map(debounced.opened.map((p) => [p.index, p]));
    const fresh = checked.filter((p) => !joined.some((j) => j.index === p.index)).map((p) => opened.get(p.index) ?? p);
    prepared = markRecorded(ctx, await numberOrdered(ctx, await offload(ctx, fresh, urls), now));
    await recordAhead(ctx, prepared, now);
  } catch (error) {
    await releaseKeys(ctx, [...held, ...debounced.opened]);
    throw error;
  }
  const joined = [...deduplicated, ...debounced.joined];
  // An ordered key's jobs after its turn wait parked in the jobs table, not in the queue.
  const { parked, toSend } = await parkBeforeTurn(ctx, prepared, now);
  const sent: Array<Published & { index: number }> = [];
  const failed: FailedPublish[] = [];
  for (const group of groupByQueue(toSend)) {
    for (const batch of chunkBySize(group)) {
      const url = urls.queues[batch[0]?.queue.name as string] as string;
      const result = await callWithEntryRetries(
        batch.map((p) => p.entry),
        (entries) => ctx.queues.sendBatch(url, entries),
        ctx.clock,
      );
      const failedIds = new Map(result.failed.map((f) => [f.id, f]));
      const messageIds = Object.assign({}, ...result.results.map((r) => r.messageIds)) as Record<string, string>;
      for (const p of batch) {
        const failure = failedIds.get(p.entry.id);
        if (failure) failed.push({ index: p.index, task: p.task, code: failure.code, message: failure.message });
        else
          sent.push({
            index: p.index,
            jobId: p.jobId,
            messageId: messageIds[p.entry.id] ?? '',
            queue: p.queue.name,
            ...(p.runAt !== undefined ? { runAt: p.runAt } : {}),
          });
      }
    }
  }
  sent.sort((a, b) => a.index - b.index);
  await tagOrdered(ctx, prepared, sent);
  await takeTurnsCome(ctx, parked, urls);
  remember(ctx, prepared, [...sent, ...parked], now);
  await recordSent(ctx, prepared, sent, now);
  if (failed.length > 0) {
    // A key taken for a job that was not sent is let go, so the next publish of it is sent.
    await releaseKeys(
      ctx,
      [...held, ...debounced.opened].filter((p) => failed.some((f) => f.index === p.index)),
    );
    throw new PublishBatchError(failed, sent);
  }
  const waiting = parked.map((p) => ({ index: p.index, jobId: p.jobId, messageId: '', queue: p.queue.name, inLine: true as const }));
  return [...sent, ...waiting, ...joined].sort((a, b) => a.index - b.index).map(({ index: _index, ...published }) => published);
}

/**
 * The keys of the items whose task has a `unique` rule, taken before anything is sent (one
 * conditional write each, lib/settle/unique-holds.ts): `held` the items that hold their key and are
 * sent, `joined` the answers for those that found a live job of their key, which are not. Items of
 * one key in one batch: the first holds it, the others join it.
 */
async function holdKeys(
  ctx: PublishContext,
  prepared: readonly Prepared[],
  now: number,
): Promise<{ held: Prepared[]; joined: Array<Published & { index: number }> }> {
  const keyed = prepared.filter((p) => p.unique !== undefined && p.key !== undefined);
  if (keyed.length === 0) return { held: [], joined: [] };
  const jobs = ctx.jobStore();
  const held: Prepared[] = [];
  const joined: Array<Published & { index: number }> = [];
  const byKey = new Map<string, Prepared[]>();
  for (const p of keyed) byKey.set(`${p.task} ${p.key}`, [...(byKey.get(`${p.task} ${p.key}`) ?? []), p]);
  try {
    // Keys at once; one key's items in order, so that within a batch the first item of a key holds it.
    await Promise.all(
      [...byKey.values()].map(async (items) => {
        for (const p of items) {
          const outcome = await holdUniqueKey(
            jobs,
            { task: p.task, key: p.key as string, jobId: p.jobId, publishedAt: now },
            p.unique as UniqueWindow,
            now,
          );
          if (outcome.outcome === 'holds') held.push(p);
          else joined.push({ index: p.index, jobId: outcome.holder, messageId: '', queue: p.queue.name, deduplicated: true });
        }
      }),
    );
  } catch (error) {
    await releaseKeys(ctx, held);
    throw error;
  }
  return { held, joined };
}

/**
 * Lets go of the keys these items hold, and closes the debounce cycles they opened (their publish
 * failed before they were sent; a publish that joined such a cycle meanwhile was answered with a job
 * that does not come); best effort.
 */
async function releaseKeys(ctx: PublishContext, items: readonly Prepared[]): Promise<void> {
  if (items.length === 0) return;
  const jobs = ctx.jobStore();
  await Promise.allSettled(
    items.map((p) =>
      p.debounce ? jobs.closeDebounce(p.task, p.key as string, { pending: p.jobId }) : jobs.releaseKey(p.task, p.key as string, p.jobId),
    ),
  );
}

/**
 * The items whose task has a `debounce` rule, each one write to its key's cycle
 * (lib/settle/debounce-cycles.ts) with its envelope — its payload, or its claim check's pointer, put
 * in the bucket first: `opened` the items that opened a cycle, to be sent (delayed by the period),
 * `joined` the answers for those that joined the open one, which are not. Items of one key in one
 * batch: the first opens the cycle (when none is open), the others join it, the last one's payload runs.
 */
async function debounceKeys(
  ctx: PublishContext,
  prepared: readonly Prepared[],
  urls: QueueUrls,
  now: number,
): Promise<{ opened: Prepared[]; joined: Array<Published & { index: number }> }> {
  const keyed = prepared.filter((p) => p.debounce !== undefined && p.key !== undefined);
  if (keyed.length === 0) return { opened: [], joined: [] };
  const ready = await offload(ctx, keyed, urls);
  for (const p of ready) {
    if (bodyBytes(p.entry.body) > MAX_DEBOUNCED_BODY_BYTES)
      throw new MessageTooLargeError(p.task, bodyBytes(p.entry.body), MAX_DEBOUNCED_BODY_BYTES);
  }
  const jobs = ctx.jobStore();
  const opened: Prepared[] = [];
  const joined: Array<Published & { index: number }> = [];
  const byKey = new Map<string, Prepared[]>();
  for (const p of ready) byKey.set(`${p.task} ${p.key}`, [...(byKey.get(`${p.task} ${p.key}`) ?? []), p]);
  try {
    await Promise.all(
      [...byKey.values()].map(async (items) => {
        for (const p of items) {
          const job = { task: p.task, key: p.key as string, jobId: p.jobId, body: p.entry.body };
          const outcome = await publishDebounced(jobs, job, p.debounce as DebounceWindow, now);
          if (outcome.outcome === 'started') opened.push(p);
          else
            joined.push({
              index: p.index,
              jobId: outcome.jobId,
              messageId: '',
              queue: p.queue.name,
              runAt: outcome.dueAt,
              debounced: true,
            });
        }
      }),
    );
  } catch (error) {
    await releaseKeys(ctx, opened);
    throw error;
  }
  return { opened, joined };
}

/**
 * Claim checks: each payload marked in {@link prepare} is put in the version's bucket (all at once,
 * one PutObject each, keyed by job id and content so a publish retried writes the same object),
 * and its message carries the pointer instead. After validation, before any record or send: a
 * failed put sends nothing of its job.
 */
async function offload(ctx: PublishContext, prepared: readonly Prepared[], urls: QueueUrls): Promise<Prepared[]> {
  if (!prepared.some((p) => p.offload)) return [...prepared];
  const bucket = ctx.bucketNear(urls);
  const store = ctx.payloadStore();
  return Promise.all(
    prepared.map(async (p) => {
      if (!p.offload) return p;
      const { text, envelope } = p.offload;
      const payloadRef = claimCheckRef(bucket, (sha256) => payloadKey(p.jobId, sha256), text);
      const body = encodeEnvelope({ ...envelope, payloadRef });
      const bytes = bodyBytes(body);
      // What stays in the message (appData, tags, ...) must fit it too.
      if (bytes > MAX_BODY_BYTES) throw new MessageTooLargeError(p.task, bytes, MAX_BODY_BYTES);
      await putClaimCheck(store, payloadRef, text);
      const { offload: _offload, ...rest } = p;
      return { ...rest, entry: { ...p.entry, body }, bytes };
    }),
  );
}

function groupByQueue(items: readonly Prepared[]): Prepared[][] {
  const groups = new Map<string, Prepared[]>();
  for (const item of items) {
    const group = groups.get(item.queue.name) ?? [];
    group.push(item);
    groups.set(item.queue.name, group);
  }
  return [...groups.values()];
}

/** Greedy chunks of at most 10 entries and 1 MiB in total. */
function chunkBySize(items: readonly Prepared[]): Prepared[][] {
  const chunks: Prepared[][] = [];
  let current: Prepared[] = [];
  let bytes = 0;
  for (const item of items) {
    if (current.length === BATCH_ENTRIES || (current.length > 0 && bytes + item.bytes > BATCH_BYTES)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += item.bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

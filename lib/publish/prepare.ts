/**
 * A publish's first step, before anything is sent: each item checked against the config and the
 * tasks the publisher knows (task, queue, id, time limit, dependencies, tags, timing), encoded as
 * an envelope and its SQS entry, and marked for a claim check when it is over the threshold.
 */
import { randomUUID } from 'node:crypto';
import type { QueueConfig } from '../config/app-config';
import { fitsVisibility, taskNeedMs } from '../deadlines';
import {
  DependencyError,
  MessageTooLargeError,
  PublishOptionError,
  TimeLimitExceedsVisibilityError,
  UnknownQueueError,
  UnknownTaskError,
} from '../errors';
import { payloadExpiryDays } from '../layout/payloads';
import { bodyBytes } from '../layout/sqs-limits';
import { publishTiming } from '../policy/due-times';
import { jobPayloadDigest } from '../policy/job-rules';
import type { SendEntry } from '../ports';
import { turnMsOf } from '../settle/key-order';
import type { DebounceWindow, OrderWindow, TaskDefinition, UniqueWindow } from '../tasks/task';
import type { PublishSpan, TraceOptions } from '../trace/producer';
import type { JobRef } from '../track/job-record';
import {
  dependencyListProblem,
  type EnvelopeV1,
  encodeEnvelope,
  JOB_ID_PATTERN,
  keyProblem,
  MAX_BODY_BYTES,
  TASK_NAME_PATTERN,
  tagListProblem,
} from '../wire/envelope';
import { MAX_PAYLOAD_REF_BYTES, type PayloadRef } from '../wire/payload-ref';
import type { PublishContext } from './publish-context';

import type { PublishItem } from './publish-options';

/** Marks options whose id `chain` or `chord` generated (not one the caller chose). */
export const GENERATED_ID = Symbol('generated id');

export interface Prepared {
  readonly index: number;
  readonly task: string;
  readonly jobId: string;
  readonly queue: QueueConfig;
  readonly entry: SendEntry;
  readonly bytes: number;
  readonly dependsOn: readonly string[];
  /** The caller chose the id (a raw message may have named it as a dependency before it existed). */
  readonly explicitId: boolean;
  readonly tags: readonly string[];
  /** The job's key, if it has one. */
  readonly key?: string;
  /** Its task's `unique` rule, when the job has a key to hold. */
  readonly unique?: UniqueWindow;
  /** Its task's `debounce` rule, when the job has a key to debounce. */
  readonly debounce?: DebounceWindow;
  /** Its task is `ordered`: the job takes its key's next number before it is sent; `turnMs`, the most one job holds the key. */
  readonly ordered?: { readonly turnMs: number; readonly rule: OrderWindow };
  /** Its number in its key's order, once taken. */
  readonly seq?: number;
  readonly awaits?: number;
  readonly runAt?: number;
  /** The envelope's `expiresAt`, for its record's `startBy`. */
  readonly expiresAt?: number;
  /** Published to run later (SQS's delay, or parked by the dispatcher): recorded `scheduled`, not `queued`. */
  readonly delayed: boolean;
  /** Over the threshold: the payload's JSON to put in S3, and the envelope to send with its pointer. */
  readonly offload?: { readonly text: string; readonly envelope: Omit<EnvelopeV1, 'payload'> };
}

export function prepare(ctx: PublishContext, item: PublishItem, index: number, now: number, span: PublishSpan): Prepared {
  const options = item.options ?? {};
  const name = typeof item.task === 'string' ? item.task : item.task.name;
  if (!TASK_NAME_PATTERN.test(name)) throw new UnknownTaskError(name, `task names match ${TASK_NAME_PATTERN}`);
  const def = typeof item.task === 'string' ? ctx.tasks.get(name) : item.task;
  const queueName = options.queue ?? def?.queue;
  if (queueName === undefined) {
    throw new UnknownTaskError(name, 'this publisher does not know the task; pass its definition, list it in `tasks`, or give `queue`');
  }
  const queue = ctx.config.queues.find((q) => q.name === queueName);
  if (!queue)
    throw new UnknownQueueError(
      queueName,
      ctx.config.queues.map((q) => q.name),
    );
  if (def && !fitsVisibility(taskNeedMs(def.timeLimitSeconds, ctx.config.dispatcher.killGraceMs), queue.visibilityTimeoutSeconds)) {
    throw new TimeLimitExceedsVisibilityError(name, def.timeLimitSeconds, queue.name, queue.visibilityTimeoutSeconds);
  }
  const timing = publishTiming(now, options);
  const jobId = options.id ?? randomUUID();
  if (typeof jobId !== 'string' || !JOB_ID_PATTERN.test(jobId))
    throw new PublishOptionError('id', jobId, '1..128 printable ASCII characters');
  const dependsOn = (options.dependsOn ?? []).map((d) => (typeof d === 'string' ? d : d?.jobId));
  const problem = dependencyListProblem(dependsOn, jobId);
  if (problem) throw new PublishOptionError('dependsOn', options.dependsOn, `a list of other jobs' ids: it ${problem}`);
  if ((dependsOn.length > 0 || options.awaits !== undefined || options.memberOf !== undefined) && queue.tracking !== 'full') {
    throw new DependencyError(
      dependsOn[0] ?? jobId,
      `dependencies need tracking 'full'; queue ${JSON.stringify(queue.name)} is tracked '${queue.tracking}'`,
    );
  }
  if (options.onDependencyFailure !== undefined && options.onDependencyFailure !== 'fail' && options.onDependencyFailure !== 'ignore') {
    throw new PublishOptionError('onDependencyFailure', options.onDependencyFailure, '"fail" or "ignore"');
  }
  if (options.tags !== undefined) {
    const tagProblem = tagListProblem(options.tags);
    if (tagProblem) throw new PublishOptionError('tags', options.tags, `a list of tags: it ${tagProblem}`);
  }
  const debounce = options.key !== undefined ? keyRules(def, options, queue, name).debounce : undefined;
  if (def?.ordered) orderRules(options, queue, name);
  const envelope: EnvelopeV1 = {
    task: name,
    payload: item.payload,
    id: jobId,
    appData: options.appData,
    publishedAt: now,
    ...(timing.runAt !== undefined ? { runAt: timing.runAt } : {}),
    ...(timing.expiresAt !== undefined ? { expiresAt: timing.expiresAt } : {}),
    ...(dependsOn.length > 0 ? { dependsOn } : {}),
    ...(options.awaits !== undefined ? { awaits: options.awaits } : {}),
    ...(options.memberOf !== undefined ? { memberOf: options.memberOf } : {}),
    ...(options.onDependencyFailure !== undefined ? { onDependencyFailure: options.onDependencyFailure } : {}),
    ...(options.tags !== undefined && options.tags.length > 0 ? { tags: options.tags } : {}),
    ...(options.key !== undefined ? { key: options.key } : {}),
  };
  const body = encodeEnvelope(envelope);
  const bytes = bodyBytes(body);
  // Above the threshold the payload goes to S3 (offload) and the message carries a pointer.
  let offload: Prepared['offload'];
  if (bytes > ctx.config.payloads.offloadAboveBytes) {
    const text = JSON.stringify(item.payload ?? null);
    const textBytes = bodyBytes(text);
    if (textBytes > MAX_PAYLOAD_REF_BYTES) throw new MessageTooLargeError(name, textBytes, MAX_PAYLOAD_REF_BYTES);
    // Its object must outlive the wait: the lifecycle expires it, and the message may wait in its queue as long as it retains it.
    const aheadDays = payloadExpiryDays(ctx.config) - Math.ceil(queue.retentionSeconds / 86_400);
    if (timing.runAt !== undefined && timing.runAt > now + aheadDays * 86_400_000) {
      throw new PublishOptionError(
        'runAt',
        new Date(timing.runAt).toISOString(),
        `within ${aheadDays} days for a payload over payloads.offloadAboveBytes (its S3 object expires after ${payloadExpiryDays(ctx.config)} days)`,
      );
    }
    const { payload: _payload, ...rest } = envelope;
    offload = { text, envelope: rest };
  } else if (bytes > MAX_BODY_BYTES) throw new MessageTooLargeError(name, bytes, MAX_BODY_BYTES);
  const attributes = span.attributesFor(name, options satisfies TraceOptions);
  // A debounced job's message comes when its period has passed; the dispatcher holds it back further while publishes join it.
  const delaySeconds = debounce ? Math.ceil(debounce.periodSeconds) : timing.delaySeconds;
  const entry: SendEntry = {
    id: String(index),
    body,
    ...(delaySeconds ? { delaySeconds } : {}),
    ...(attributes ? { attributes } : {}),
  };
  return {
    index,
    task: name,
    jobId,
    queue,
    entry,
    bytes,
    dependsOn,
    explicitId: options.id !== undefined && !(GENERATED_ID in options),
    tags: options.tags ?? [],
    ...(options.key !== undefined ? { key: options.key } : {}),
    ...(options.key !== undefined && def?.unique ? { unique: def.unique } : {}),
    ...(debounce ? { debounce } : {}),
    ...(def?.ordered ? { ordered: { turnMs: turnMsOf(def.timeLimitSeconds, ctx.config.dispatcher), rule: def.ordered } } : {}),
    ...(options.awaits !== undefined ? { awaits: options.awaits } : {}),
    ...(offload ? { offload } : {}),
    ...(timing.expiresAt !== undefined ? { expiresAt: timing.expiresAt } : {}),
    delayed: (timing.runAt ?? now) > now || delaySeconds !== undefined,
    ...(timing.runAt !== undefined ? { runAt: timing.runAt } : delaySeconds ? { runAt: now + delaySeconds * 1000 } : {}),
  };
}

/**
 * A keyed publish checked against its task's key rules: malformed keys refused, a `unique` or
 * `debounce` task only on a queue tracked `full`; a debounced job takes its time from its key's
 * cycle and its id from whichever publish opens it, so it has no delay, date, id or dependencies of
 * its own. Answers the debounce rule that applies.
 */
function keyRules(
  def: TaskDefinition | undefined,
  options: PublishItem['options'] & { readonly key?: string },
  queue: QueueConfig,
  name: string,
): { debounce?: DebounceWindow } {
  const problem = keyProblem(options.key);
  if (problem) throw new PublishOptionError('key', options.key, `a key of 1..128 printable characters: it ${problem}`);
  const rule = def?.unique ? 'unique' : def?.debounce ? 'debounce' : undefined;
  if (rule && queue.tracking !== 'full') {
    throw new PublishOptionError(
      'key',
      options.key,
      `a queue tracked 'full' for task ${name}'s ${rule} rule (queue ${queue.name} is tracked '${queue.tracking}')`,
    );
  }
  if (!def?.debounce) return {};
  const own = (['id', 'delaySeconds', 'runAt', 'dependsOn', 'awaits', 'memberOf'] as const).find((o) => options[o] !== undefined);
  if (own !== undefined) {
    throw new PublishOptionError(
      own,
      options[own],
      `no ${own} on a keyed job of task ${name}, which is debounced: its cycle decides when it runs and which job it is`,
    );
  }
  return { debounce: def.debounce };
}

/**
 * A job of an `ordered` task: its queue tracked `full`, a key checked (none: the task's one group),
 * and no time or dependency of its own — its key's order decides when it runs (SQS FIFO queues
 * have no per-message delay either).
 */
function orderRules(options: PublishItem['options'] & { readonly key?: string }, queue: QueueConfig, name: string): void {
  if (queue.tracking !== 'full') {
    throw new PublishOptionError(
      'key',
      options.key,
      `a queue tracked 'full' for task ${name}'s ordered rule (queue ${queue.name} is tracked '${queue.tracking}')`,
    );
  }
  if (options.key !== undefined) {
    const problem = keyProblem(options.key);
    if (problem) throw new PublishOptionError('key', options.key, `a key of 1..128 printable characters: it ${problem}`);
  }
  const own = (['delaySeconds', 'runAt', 'dependsOn', 'awaits', 'memberOf'] as const).find(
    (o) => options[o] !== undefined && !(o === 'dependsOn' && options.dependsOn?.length === 0),
  );
  if (own !== undefined) {
    throw new PublishOptionError(
      own,
      options[own],
      `no ${own} on a job of task ${name}, which is ordered: its key's order decides when it runs`,
    );
  }
}

export function refOf(p: Prepared, version: string, now: number): JobRef {
  return {
    jobId: p.jobId,
    task: p.task,
    // As the dispatcher will see it: decoded from the body, after JSON's own conversions.
    payloadDigest: jobPayloadDigest(JSON.parse(p.entry.body) as { payload?: unknown; payloadRef?: PayloadRef }),
    queue: p.queue.name,
    version,
    publishedAt: now,
    ...(p.tags.length > 0 ? { tags: p.tags } : {}),
    ...(p.key !== undefined ? { key: p.key } : {}),
    ...(p.seq !== undefined ? { seq: p.seq } : {}),
    ...(p.expiresAt !== undefined ? { startBy: p.expiresAt } : {}),
  };
}

import { randomBytes } from 'node:crypto';
import type { QueueConfig } from '../config';
import { fitsInvocation, leaseMs, stillVisibleToUs, taskNeedMs } from '../deadlines';
import { describe, EnvelopeError } from '../errors';
import { bodyBytes, MAX_VISIBILITY_SECONDS, messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import type { ReceivedMessage, SendEntry } from '../ports';
import { callWithEntryRetries } from '../retry-entries';
import { autoHeartbeat } from '../run/heartbeat';
import type { SerializedError, TaskOutcome } from '../run/types';
import { SettleHold } from '../settle/hold';
import { completionWrite, identity, ref, rejectionWrite, trackingOf, unclaimedWrite } from '../settle/records';
import type { BatchReport, JobReport } from '../settle/report';
import { type HookJob, runHooks } from '../settle/run-hooks';
import { BatchState, type Decision, type RecordWrite, recordStats, type SettleOptions, settle } from '../settle/settle';
import { decide } from '../settle/verdict';
import type { TaskDefinition } from '../tasks/task';
import { arrivalTiming, MAX_PARKED_BODY_BYTES, MAX_QUEUE_DELAY_SECONDS, MAX_SCHEDULE_SECONDS } from '../track/due';
import { burstOf, type LimitKey, queueLimitKey, taskLimitKey } from '../track/limits';
import type { ClaimResult, JobRecord, JobStore } from '../track/model';
import { type ArchiveReason, type ArchiveRecord, isRejection } from '../wire/archive-record';
import { type DecodedJob, decodeEnvelope, pinEnvelope } from '../wire/envelope';
import type { SlotLease, TaskSlots } from './slots';
import type { DispatcherDeps, RunOptions } from './types';

/** A day's slack past the farthest a publisher may schedule, for clocks and time zones. */
const DAY_MS = 86_400_000;
/** How long a message waits when its claim could not be made (the jobs table did not answer). */
const CLAIM_RETRY_SECONDS = 10;

/** A decision that hands the message back to its queue: a visibility change, or leaving it to lapse. */
type HandBack = { readonly kind: 'visibility'; readonly seconds: number; readonly record?: RecordWrite } | { readonly kind: 'leave' };

interface Planned {
  readonly message: ReceivedMessage;
  readonly job: DecodedJob;
  readonly def: TaskDefinition;
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
  settling: SettleOptions = {},
): Promise<BatchReport> {
  const receivedAt = deps.clock.now();
  const hold = new SettleHold(deps, deps.urls.queues[queue.name] as string, queue.visibilityTimeoutSeconds);
  const state = new BatchState(hold, receivedAt + queue.visibilityTimeoutSeconds * 1000);
  try {
    return await runBatch(deps, queue, batch, options, slots, settling, state, receivedAt);
  } finally {
    // Settled or not, nothing is held past the batch.
    await state.release();
  }
}

async function runBatch(
  deps: DispatcherDeps,
  queue: QueueConfig,
  batch: readonly ReceivedMessage[],
  options: RunOptions,
  slots: TaskSlots,
  settling: SettleOptions,
  state: BatchState,
  receivedAt: number,
): Promise<BatchReport> {
  const planned: Planned[] = [];
  for (const message of batch) {
    const one = plan(deps, queue, message, state);
    if (one) planned.push(one);
  }
  const due = await holdUntilDue(deps, queue, planned, state);
  const { runnable, release } = await admit(deps, queue, due, state, options);
  announce(deps, queue, batch, runnable);
  // Slots are taken in message order (the limiter is first come, first served).
  const killGraceMs = deps.config.dispatcher.killGraceMs;
  try {
    await Promise.all(
      runnable.map((p) =>
        slots.run(taskNeedMs(p.def.timeLimitSeconds, killGraceMs), (lease) => runOne(deps, queue, p, receivedAt, options, state, lease)),
      ),
    );
  } finally {
    await release();
  }
  const settleRetries = await settle(deps, queue, state, settling);
  const settled = batch.map((m) => state.reports.get(m.messageId) as JobReport);
  const hookJobs = new Map<string, HookJob>(
    runnable.map((p) => {
      const result = state.results.get(p.message.messageId);
      return [p.message.messageId, { payload: p.job.payload, appData: p.job.appData, ...(result !== undefined ? { result } : {}) }];
    }),
  );
  const report: BatchReport = {
    queue: queue.name,
    jobs: await runHooks(deps, queue.name, settled, hookJobs, options.deadline - deps.config.dispatcher.settleMarginMs / 2),
    settleRetries,
  };
  await recordStats(deps, report);
  // A batch held back whole by limits is an empty look for the selector: the queue rests a while
  // and the others are served, rather than its limited head being received again and again.
  if (report.jobs.length > 0 && report.jobs.every((j) => j.limited))
    deps.selector.observe?.({ queue: queue.name, received: 0, oldestAgeMs: 0 });
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

/**
 * Messages whose `runAt` is ahead do not run now: within SQS's 15 minutes a copy is sent delayed by
 * the seconds left (id and publish time pinned) and the message deleted; farther, the job is parked
 * in the jobs table (state `scheduled`) before its message is deleted, and a sweep sends it back
 * when it is due (lib/track/sweep.ts). Returns the messages that are due.
 */
async function holdUntilDue(deps: DispatcherDeps, queue: QueueConfig, planned: readonly Planned[], state: BatchState): Promise<Planned[]> {
  const due: Planned[] = [];
  const jobs = deps.tracking?.jobs;
  await Promise.all(
    planned.map(async (p) => {
      const { message, job, def } = p;
      const now = deps.clock.now();
      const timing = arrivalTiming(job.runAt, now);
      if (timing.kind === 'due') {
        due.push(p);
        return;
      }
      if ((job.runAt as number) > now + MAX_SCHEDULE_SECONDS * 1000 + DAY_MS) {
        // What a publisher may not ask for is not kept for centuries by a raw message either.
        archive(deps, queue, state, message, job, 'malformed', {
          type: 'EnvelopeError',
          code: 'bad-run-at',
          message: `runAt is ${new Date(job.runAt as number).toISOString()}, more than ${MAX_SCHEDULE_SECONDS / 86_400} days ahead`,
        });
        return;
      }
      const report: JobReport = { messageId: message.messageId, jobId: job.id, task: def.name, outcome: 'scheduled', attempt: 0 };
      const body = pinEnvelope(message.body, job);
      if (timing.kind === 'delay' || !jobs || bodyBytes(body) > MAX_PARKED_BODY_BYTES) {
        // Without a jobs table (or for a body larger than a DynamoDB item holds) there is nowhere to
        // park: the message waits in its queue, 15 minutes at a time.
        const copy = delayedCopy(message, job, timing.kind === 'delay' ? timing.seconds : MAX_QUEUE_DELAY_SECONDS);
        if (copy) state.decide({ kind: 'requeue', message, copy }, { ...report, requeued: true });
        else due.push(p);
        return;
      }
      try {
        const parked = await jobs.park({
          ...ref(deps, queue, job),
          runAt: job.runAt as number,
          body,
          ...(Object.keys(message.attributes).length > 0 ? { attributes: message.attributes } : {}),
          workerId: deps.workerId,
          now,
        });
        if (parked.outcome === 'conflict') {
          archive(deps, queue, state, message, job, 'id-conflict', conflictError(job, parked.record));
          return;
        }
        // `exists`: another copy parked it, or the job is further along already; this copy is not needed.
        state.decide({ kind: 'delete', message }, parked.outcome === 'parked' ? report : { ...report, outcome: 'duplicate' });
      } catch (error) {
        deps.logger.error('parking failed; the message will come back', { jobId: job.id, error: describe(error) });
        state.decide({ kind: 'visibility', message, seconds: CLAIM_RETRY_SECONDS }, { ...report, outcome: 'deferred' });
      }
    }),
  );
  // Slots are taken in message order.
  return planned.filter((p) => due.includes(p));
}

/**
 * Fleet-wide limits (the queue's and each task's `limits`): reserves concurrency slots and rate
 * tokens for the batch's jobs, one reservation per key per batch; the jobs that did not get them
 * are deferred — handed back with jitter sized to when room is expected, no claim, no attempt
 * used (at their last receives a fresh copy replaces them, so waiting never sends a job to the
 * DLQ). `release` gives the slots back once the batch's tasks have ended.
 */
async function admit(
  deps: DispatcherDeps,
  queue: QueueConfig,
  due: readonly Planned[],
  state: BatchState,
  options: RunOptions,
): Promise<{ runnable: Planned[]; release: () => Promise<void> }> {
  const store = deps.tracking?.limits;
  const keyed = due.map((p) => ({ p, keys: limitKeys(queue, p.def) }));
  if (!store || keyed.every((k) => k.keys.length === 0)) return { runnable: [...due], release: async () => {} };
  const now = deps.clock.now();
  const holder = `${deps.workerId}:${randomBytes(6).toString('base64url')}`;
  const longest = Math.max(...due.map((p) => taskNeedMs(p.def.timeLimitSeconds, deps.config.dispatcher.killGraceMs)));
  // A holder that dies keeps its slots until here: its tasks could not have run longer.
  const until = Math.min(options.deadline, now + longest) + deps.config.dispatcher.settleMarginMs;
  const held = new Set<string>();
  const waitMs = new Map<Planned, number>();
  let admitted = keyed;
  const keys = [...new Map(keyed.flatMap((k) => k.keys).map((k) => [k.key, k])).values()];
  try {
    for (const { key, limits } of keys) {
      const members = admitted.filter((k) => k.keys.some((x) => x.key === key));
      let room = members.length;
      let retryAfterMs = 0;
      if (limits.concurrency !== undefined) {
        room = await store.acquire({ key, limit: limits.concurrency, holder, want: members.length, now, until });
        if (room > 0) held.add(key);
      }
      if (limits.perSecond !== undefined && room > 0) {
        const taken = await store.take({ key, perSecond: limits.perSecond, burst: burstOf(limits), want: room, now });
        room = taken.granted;
        retryAfterMs = taken.retryAfterMs;
      }
      const over = members.slice(room);
      over.forEach((k, i) => {
        // Room comes with the next tokens, or when a running job of the key ends: within its time
        // limit, spread over up to 3 s so the waiting jobs do not all come back at once.
        const expected =
          limits.perSecond !== undefined && retryAfterMs > 0
            ? retryAfterMs + (i * 1000) / limits.perSecond
            : 1000 + deps.random() * Math.min(3_000, k.p.def.timeLimitSeconds * 1000);
        waitMs.set(k.p, Math.max(waitMs.get(k.p) ?? 0, expected));
      });
      admitted = admitted.filter((k) => !over.includes(k));
    }
  } catch (error) {
    // The limits could not be read: hold the work back rather than run it past them.
    deps.logger.error('limits could not be reserved; the batch waits', { queue: queue.name, error: describe(error) });
    for (const k of keyed) if (k.keys.length > 0 && !waitMs.has(k.p)) waitMs.set(k.p, 10_000);
    admitted = keyed.filter((k) => k.keys.length === 0);
  }
  for (const { p } of keyed) {
    const wait = waitMs.get(p);
    if (wait === undefined || admitted.some((k) => k.p === p)) continue;
    const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(1, Math.ceil((wait + deps.random() * 500) / 1000)));
    const made = handedBack(deps, queue, 'full', p.message, p.job, { kind: 'visibility', seconds });
    state.decide(made, {
      messageId: p.message.messageId,
      jobId: p.job.id,
      task: p.def.name,
      outcome: 'deferred',
      limited: true,
      attempt: 0,
      ...(made.kind === 'requeue' ? { requeued: true } : {}),
    });
  }
  const release = async () => {
    await Promise.all(
      [...held].map((key) =>
        store.release(key, holder, deps.clock.now()).catch((error: unknown) => {
          deps.logger.warn('limit slots not released; they come back when their lease ends', { key, error: describe(error) });
        }),
      ),
    );
  };
  return { runnable: admitted.map((k) => k.p), release };
}

function limitKeys(queue: QueueConfig, def: TaskDefinition): LimitKey[] {
  return [
    ...(queue.limits ? [{ key: queueLimitKey(queue.name), limits: queue.limits }] : []),
    ...(def.limits ? [{ key: taskLimitKey(def.name), limits: def.limits }] : []),
  ];
}

function delayedCopy(message: ReceivedMessage, job: DecodedJob, seconds: number): SendEntry | undefined {
  const copy: SendEntry = {
    id: message.messageId,
    body: pinEnvelope(message.body, job),
    delaySeconds: Math.min(MAX_QUEUE_DELAY_SECONDS, seconds),
    ...(Object.keys(message.attributes).length > 0 ? { attributes: message.attributes } : {}),
  };
  return messageBytes(copy.body, copy.attributes) <= SQS_MESSAGE_LIMIT_BYTES ? copy : undefined;
}

function conflictError(job: DecodedJob, record: JobRecord): SerializedError {
  return {
    type: 'JobIdConflictError',
    message:
      `job id ${JSON.stringify(job.id)} belongs to a job of task ${JSON.stringify(record.task)}` +
      `${record.task === job.task ? ' with another payload' : ''}; this message names task ${JSON.stringify(job.task)}`,
  };
}

/** Runs one message's task, from the checks before it starts to its outcome, and decides what the settle does. */
async function runOne(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: Planned,
  receivedAt: number,
  options: RunOptions,
  state: BatchState,
  lease: SlotLease,
): Promise<void> {
  const { message, job, def } = planned;
  const { clock, config } = deps;
  const start = clock.now();
  const needMs = taskNeedMs(def.timeLimitSeconds, config.dispatcher.killGraceMs);
  lease.endsBy(start + needMs);
  const base = { messageId: message.messageId, jobId: job.id, task: def.name };
  const mode = trackingOf(deps, queue);
  const handBack = (decision: HandBack, report: JobReport) => {
    const made = handedBack(deps, queue, mode, message, job, decision);
    state.decide(made, made.kind === 'requeue' ? { ...report, requeued: true } : report);
  };
  if (options.signal?.aborted || !fitsInvocation(start, needMs, options.deadline, config.dispatcher.settleMarginMs)) {
    handBack({ kind: 'visibility', seconds: 0 }, { ...base, outcome: 'released', attempt: message.receiveCount });
    return;
  }
  if (!stillVisibleToUs(receivedAt, start, queue.visibilityTimeoutSeconds)) {
    // It waited for a slot until its visibility (nearly) lapsed: SQS may have handed it to another
    // worker, whose receipt a visibility change could undo. Leave it alone; it comes back by itself.
    handBack({ kind: 'leave' }, { ...base, outcome: 'released', attempt: message.receiveCount });
    deps.logger.warn('message waited for a slot past its visibility; not started', { queue: queue.name, messageId: message.messageId });
    return;
  }

  const claim = mode === 'full' ? await claimJob(deps, queue, planned, start, state, handBack) : { attempt: message.receiveCount };
  if (!claim) return;
  const { attempt, claimed } = claim;
  const jobs = deps.tracking?.jobs;
  const heartbeatLeaseMs = leaseMs(needMs, config.dispatcher.settleMarginMs);
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
    state.movedVisibility(message.messageId, visibleUntil);
    if (!claimed || !jobs) return true;
    try {
      return await jobs.extendLease(job.id, attempt, now + heartbeatLeaseMs, now);
    } catch (error) {
      deps.logger.warn('lease extension failed; the lease may still hold', { jobId: job.id, error: describe(error) });
      return true;
    }
  };
  const beating = autoHeartbeat({
    clock,
    visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
    hardEnd: start + needMs,
    visibleUntil: () => visibleUntil,
    beat: heartbeat,
  });

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
        timeLimitMs: def.timeLimitSeconds * 1000,
        fencingToken: attempt,
      },
      { heartbeat },
    );
  } catch (error) {
    outcome = { status: 'failed', kind: 'crashed', durationMs: 0, error: { type: 'ExecutorError', message: describe(error) } };
  } finally {
    beating.stop();
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
    if (outcome.result !== undefined) state.results.set(message.messageId, outcome.result);
    state.decide({ kind: 'delete', message, ...(record ? { record } : {}) }, { ...ran, outcome: 'succeeded' });
    return;
  }
  const verdict = decide(outcome, attempt, def, deps.random);
  if (verdict.kind === 'archive') {
    const { reason } = verdict;
    const record = claimed
      ? completionWrite(deps, job, attempt, claimed, { state: 'archived', reason, error: outcome.error })
      : unclaimedWrite(deps, queue, job, attempt, 'archived', outcome.error, reason);
    archive(deps, queue, state, message, job, reason, outcome.error, ran, record);
    return;
  }
  const seconds = verdict.kind === 'retry' ? verdict.seconds : 0;
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

/**
 * Claims the job of a `full` tracked queue. Returns the attempt (the fencing token) and the claimed
 * record, or undefined when the claim already decided the message: a conflict (archived), a
 * duplicate (deleted), held elsewhere or unanswered (handed back), or attempts all lost (archived).
 */
async function claimJob(
  deps: DispatcherDeps,
  queue: QueueConfig,
  { message, job, def }: Planned,
  start: number,
  state: BatchState,
  handBack: (decision: HandBack, report: JobReport) => void,
): Promise<{ attempt: number; claimed?: JobRecord } | undefined> {
  const jobs = deps.tracking?.jobs as JobStore;
  const base = { messageId: message.messageId, jobId: job.id, task: def.name };
  const needMs = taskNeedMs(def.timeLimitSeconds, deps.config.dispatcher.killGraceMs);
  let claim: ClaimResult;
  try {
    claim = await jobs.claim({
      ...ref(deps, queue, job),
      workerId: deps.workerId,
      now: start,
      leaseUntil: start + leaseMs(needMs, deps.config.dispatcher.settleMarginMs),
      claimId: randomBytes(9).toString('base64url'),
    });
  } catch (error) {
    deps.logger.error('claim failed; the message will come back', { jobId: job.id, error: describe(error) });
    handBack({ kind: 'visibility', seconds: CLAIM_RETRY_SECONDS }, { ...base, outcome: 'deferred', attempt: message.receiveCount });
    return undefined;
  }
  switch (claim.outcome) {
    case 'conflict':
      archive(deps, queue, state, message, job, 'id-conflict', conflictError(job, claim.record));
      return undefined;
    case 'finished':
      state.decide(
        {
          kind: 'delete',
          message,
          record: async () => {
            await jobs.recordDuplicate(job.id, identity(job), deps.workerId, deps.clock.now());
            return true;
          },
        },
        { ...base, outcome: 'duplicate', attempt: claim.record.attempt },
      );
      return undefined;
    case 'leased': {
      const seconds = Math.min(MAX_VISIBILITY_SECONDS, Math.max(1, Math.ceil(((claim.record.leaseUntil ?? start) - start) / 1000) + 1));
      handBack({ kind: 'visibility', seconds }, { ...base, outcome: 'deferred', attempt: claim.record.attempt });
      return undefined;
    }
    case 'claimed':
      break;
  }
  const attempt = claim.token;
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
      completionWrite(deps, job, attempt, claim.record, { state: 'archived', reason: 'exhausted', error }),
    );
    return undefined;
  }
  return { attempt, claimed: claim.record };
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
      ...(seconds > 0 ? { delaySeconds: Math.min(MAX_QUEUE_DELAY_SECONDS, seconds) } : {}),
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

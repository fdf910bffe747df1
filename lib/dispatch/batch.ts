import { readClaimCheck } from '../claim-check';
import type { QueueConfig } from '../config/app-config';
import { describe, EnvelopeError } from '../errors';
import { subscribersOn, waitersOn } from '../events/routes';
import { bodyBytes, MAX_QUEUE_DELAY_SECONDS, messageBytes, SQS_MESSAGE_LIMIT_BYTES } from '../layout/sqs-limits';
import { arrivalTiming, MAX_PARKED_BODY_BYTES, MAX_SCHEDULE_SECONDS } from '../policy/due-times';
import type { ReceivedMessage, SendEntry } from '../ports';
import { conflictError, decideArchive } from '../settle/decisions';
import { SettleHold } from '../settle/hold';
import { ref } from '../settle/records';
import type { BatchReport, JobReport } from '../settle/report';
import { type HookJob, runHooks } from '../settle/run-hooks';
import { BatchState, type RecordWrite, recordStats, type SettleOptions, settle } from '../settle/settle';
import { resumeEventWaiters } from '../settle/step-tokens';
import { batchSpans } from '../trace/consumer';
import { type DecodedJob, hasDependencies, pinEnvelope } from '../wire/envelope';
import { type DecodedEvent, decodeMessage, subscriberEnvelope, subscriberJob } from '../wire/event';
import type { PayloadRef } from '../wire/payload-ref';
import { admit } from './admit';
import { batchCallsOn } from './batch-calls';
import { readCelery } from './celery-messages';
import { CLAIM_RETRY_SECONDS } from './claim';
import { holdForDebounce, isDebounced } from './debounce';
import type { DispatcherDeps, Planned, RunOptions } from './dispatcher-deps';
import { runOne } from './job';
import { dropPayloads, foreignRefProblem, resolvePayloads } from './job-payloads';
import { holdForOrder, isOrdered } from './ordered';
import { holdPaused } from './rate-limits';
import type { SlotReservation, SlotTicket, TaskSlots } from './slots';
import { holdForDependencies } from './wait';

/** A day's slack past the farthest a publisher may schedule, for clocks and time zones. */
const DAY_MS = 86_400_000;

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
  /** Slots set aside for this batch as it was received; what its runnable messages do not take goes back. */
  reservation?: SlotReservation,
): Promise<BatchReport> {
  // In its own usage scope: the requests and writes of its claims, settle and records are its tasks' cost.
  const work = () => runBatch(deps, queue, batch, options, slots, settling, reservation);
  return deps.usage ? deps.usage.batch(work) : work();
}

async function runBatch(
  deps: DispatcherDeps,
  queue: QueueConfig,
  batch: readonly ReceivedMessage[],
  options: RunOptions,
  slots: TaskSlots,
  settling: SettleOptions,
  reservation: SlotReservation | undefined,
): Promise<BatchReport> {
  const receivedAt = deps.clock.now();
  const hold = new SettleHold(deps, deps.urls.queues[queue.name] as string, queue.visibilityTimeoutSeconds);
  // Its archive fences hold until it is settled at the latest: its tasks end a settle margin before
  // the deadline, its settle within the margin after.
  const state = new BatchState(
    hold,
    receivedAt + queue.visibilityTimeoutSeconds * 1000,
    options.deadline + deps.config.dispatcher.settleMarginMs,
  );
  // A CONSUMER span per attempt, open until its hooks have run (none without @opentelemetry/api).
  const spans = batchSpans(deps, queue);
  try {
    const planned: Planned[] = [];
    for (const message of batch) {
      const one = plan(deps, queue, message, state);
      if (one) planned.push(one);
    }
    // Kept while the steps before the runs work them out; each run's heartbeat takes over as it is handed over.
    state.holdReceived(planned.map((p) => p.message));
    // No await unless a job waits: the batch's timing is what it was for everything else.
    const ready = planned.some((p) => hasDependencies(p.job)) ? await holdForDependencies(deps, queue, planned, state) : planned;
    const closed = ready.some((p) => isDebounced(deps, queue, p)) ? await holdForDebounce(deps, queue, ready, state) : ready;
    const due = await holdUntilDue(deps, queue, closed, state);
    const turns = due.some((p) => isOrdered(deps, queue, p)) ? await holdForOrder(deps, queue, due, state) : due;
    const admitted = await admit(deps, queue, holdPaused(deps, queue, turns, state), state, options);
    let runnable: Planned[] = [];
    // Slots are taken in message order (the limiter is first come, first served).
    try {
      // Claim checks are read only for the jobs about to run (not for the parked, the waiting or the held back).
      // No await without a claim check: an await moves the batch's timing (the simulation's and the fakes' clocks see it).
      runnable = admitted.runnable.some((p) => p.job.payloadRef)
        ? await resolvePayloads(deps, queue, admitted.runnable, state)
        : admitted.runnable;
      announce(deps, queue, batch, runnable);
      const running = runnable.map((p) => {
        // Its place, reserved as it was received (a batch run without one asks the slots like any other).
        const ticket = reservation?.ticket() ?? (slots.reserve(1).ticket() as SlotTicket);
        const visibleFrom = state.handOver(p.message.messageId) - queue.visibilityTimeoutSeconds * 1000;
        return spans.run(p, () =>
          runOne(deps, queue, p, visibleFrom, options, state, ticket, p.def.batch ? batchCallsOn(slots, deps) : undefined),
        );
      });
      // Each runnable message took its ticket as it was mapped: the rest's places (parked, waiting,
      // held back, archived) go back now, not when the batch's slowest task ends.
      reservation?.release();
      await Promise.all(running);
    } finally {
      reservation?.release();
      await admitted.release();
    }
    const settleRetries = await settle(deps, queue, state, settling);
    if (runnable.some((p) => p.job.payloadRef)) await dropPayloads(deps, runnable, state);
    const settled = batch.map((m) => state.reports.get(m.messageId) as JobReport);
    const hookJobs = new Map<string, HookJob>(
      runnable.map((p) => {
        const result = state.results.get(p.message.messageId);
        return [p.message.messageId, { payload: p.job.payload, appData: p.job.appData, ...(result !== undefined ? { result } : {}) }];
      }),
    );
    const report: BatchReport = {
      queue: queue.name,
      jobs: await spans.hooks(settled, (reports) =>
        runHooks(deps, queue.name, reports, hookJobs, options.deadline - deps.config.dispatcher.settleMarginMs / 2),
      ),
      settleRetries,
    };
    spans.end(report.jobs);
    await recordStats(deps, report);
    // A batch held back whole by limits (or rate-limit pauses) is an empty look for the selector: the
    // queue rests a while and the others are served, rather than its held head being received again and again.
    if (report.jobs.length > 0 && report.jobs.every((j) => j.limited || j.heldBy !== undefined))
      deps.selector.observe?.({ queue: queue.name, received: 0, oldestAgeMs: 0 });
    return report;
  } catch (error) {
    // The settle releases the hold; a batch that failed before it holds nothing past its end.
    void state.release();
    spans.end([], error);
    throw error;
  }
}

/** Tells the observer which jobs this batch holds. An observer that throws costs nothing but its own view. */
function announce(
  deps: Pick<DispatcherDeps, 'observer' | 'logger'>,
  queue: QueueConfig,
  batch: readonly ReceivedMessage[],
  runnable: readonly Planned[],
): void {
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

/** Decodes one message; routes undecodable and unknown ones to the archive, and events to their subscribers. */
function plan(deps: DispatcherDeps, queue: QueueConfig, message: ReceivedMessage, state: BatchState): Planned | undefined {
  // A message that is not a runnable job is archived under its own message id: it never acts on
  // (nor even reads) the record of an id it carries.
  let decoded: ReturnType<typeof decodeMessage>;
  try {
    decoded = decodeMessage(message.body, { messageId: message.messageId, sentTimestamp: message.sentTimestamp });
  } catch (error) {
    const envelopeError = error instanceof EnvelopeError ? error : undefined;
    // A body that is not JSON may be Celery's (lib/dispatch/celery-messages.ts), read on a queue that accepts it.
    const celery = envelopeError?.code === 'not-json' ? readCelery(deps.registry, queue, message) : undefined;
    if (celery?.kind === 'job') return celery.planned;
    if (celery) {
      decideArchive(deps, queue, state, message, celery.named, celery.reason, celery.error);
      return undefined;
    }
    decideArchive(deps, queue, state, message, undefined, 'malformed', {
      type: 'EnvelopeError',
      message: envelopeError?.message ?? describe(error),
      ...(envelopeError ? { code: envelopeError.code } : {}),
    });
    return undefined;
  }
  if (decoded.kind === 'event') return planEvent(deps, queue, message, decoded.event, state);
  const job = decoded.job;
  const def = deps.registry.get(job.task);
  if (!def) {
    decideArchive(deps, queue, state, message, job, 'unknown-task', {
      type: 'UnknownTaskError',
      message: `task ${JSON.stringify(job.task)} is not registered in this version`,
    });
    return undefined;
  }
  if (refusedRef(deps, queue, state, message, job)) return undefined;
  return { message, job, def };
}

/**
 * Whether a claim check points outside the version's own bucket and prefix, checked before
 * anything reads it: then the message is archived (`bad-payload-ref`, naming where it points).
 */
function refusedRef(
  deps: DispatcherDeps,
  queue: QueueConfig,
  state: BatchState,
  message: ReceivedMessage,
  job: DecodedJob | undefined,
  ref = job?.payloadRef,
): boolean {
  const problem = ref ? foreignRefProblem(ref, deps.payloads?.bucket, deps.payloads?.eventBuckets) : undefined;
  if (!problem) return false;
  decideArchive(deps, queue, state, message, job, 'bad-payload-ref', {
    type: 'PayloadRefError',
    code: 'bad-payload-ref',
    message: problem,
  });
  return true;
}

/**
 * An event delivered to this queue by its SNS subscription: with one subscriber here it runs as
 * that subscriber's job (id `<event id>/<task>`), the message's body read as the job's own task
 * envelope from here on (a requeued copy, a parked body or an archived message is that job alone);
 * with several, one job message per subscriber is sent to the queue and the event's message
 * deleted (a `split`), so each retries, times out and is archived on its own. With none it is
 * archived (`no-subscriber`), never dropped.
 */
function planEvent(
  deps: DispatcherDeps,
  queue: QueueConfig,
  message: ReceivedMessage,
  event: DecodedEvent,
  state: BatchState,
): Planned | undefined {
  const subscribers = subscribersOn(deps.registry, queue.name, event.name);
  const waits = waitersOn(deps.registry, queue.name, event.name);
  const [only] = subscribers;
  if (!only && waits.length === 0) {
    decideArchive(deps, queue, state, message, undefined, 'no-subscriber', {
      type: 'NoSubscriberError',
      message: `event ${JSON.stringify(event.name)} has no subscriber on queue ${queue.name} in this version`,
    });
    return undefined;
  }
  // Once for the event, before a split copies its pointer to every subscriber.
  if (refusedRef(deps, queue, state, message, undefined, event.payloadRef)) return undefined;
  const resume = waits.length > 0 ? waitersWrite(deps, event, waits) : undefined;
  if (only && subscribers.length === 1 && !resume) {
    return { message: { ...message, body: subscriberEnvelope(event, only.name) }, job: subscriberJob(event, only.name), def: only };
  }
  const copies = subscribers.map((def, i) => ({
    id: `${message.messageId}_${i}`,
    body: subscriberEnvelope(event, def.name),
    ...(Object.keys(message.attributes).length > 0 ? { attributes: message.attributes } : {}),
  }));
  state.decide(
    { kind: 'split', message, copies, ...(resume ? { record: resume } : {}) },
    { messageId: message.messageId, jobId: event.id, outcome: 'split', attempt: 0 },
  );
  return undefined;
}

/**
 * The write that resumes the jobs waiting on this queue for `event` (lib/settle/step-tokens.ts),
 * made before the event's message is deleted: a failure leaves the message to come back. Without a
 * jobs table no job can wait: nothing to do.
 */
function waitersWrite(
  deps: DispatcherDeps,
  event: DecodedEvent,
  waits: ReadonlyArray<{ readonly match?: string }>,
): RecordWrite | undefined {
  const jobs = deps.tracking?.jobs;
  if (!jobs) return undefined;
  const payloads = deps.payloads;
  return async () => {
    const resumed = await resumeEventWaiters(
      {
        jobs,
        queues: deps.queues,
        urls: deps.urls,
        clock: deps.clock,
        logger: deps.logger,
        ...(payloads ? { readPayload: (ref: PayloadRef) => readClaimCheck(payloads.store, ref) } : {}),
      },
      event,
      waits,
    );
    if (resumed > 0) deps.logger.info('event resumed the jobs waiting for it', { event: event.name, eventId: event.id, resumed });
    return true;
  };
}

/**
 * Messages whose `runAt` is ahead do not run now: within SQS's 15 minutes a copy is sent delayed by
 * the seconds left (id and publish time pinned) and the message deleted; farther, the job is parked
 * in the jobs table (state `scheduled`) before its message is deleted, and a sweep sends it back
 * when it is due (lib/invocation/parked-sweep.ts). Returns the messages that are due.
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
        decideArchive(deps, queue, state, message, job, 'malformed', {
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
        // A tag finds a parked job too.
        if (job.tags && queue.tracking === 'full') await jobs.tagJob(job.id, job.tags, job.publishedAt);
        const parked = await jobs.park({
          ...ref(deps, queue, job),
          runAt: job.runAt as number,
          body,
          ...(Object.keys(message.attributes).length > 0 ? { attributes: message.attributes } : {}),
          workerId: deps.workerId,
          now,
        });
        if (parked.outcome === 'conflict') {
          decideArchive(deps, queue, state, message, job, 'id-conflict', conflictError(job, parked.record));
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

function delayedCopy(message: ReceivedMessage, job: DecodedJob, seconds: number): SendEntry | undefined {
  const copy: SendEntry = {
    id: message.messageId,
    body: pinEnvelope(message.body, job),
    delaySeconds: Math.min(MAX_QUEUE_DELAY_SECONDS, seconds),
    ...(Object.keys(message.attributes).length > 0 ? { attributes: message.attributes } : {}),
  };
  return messageBytes(copy.body, copy.attributes) <= SQS_MESSAGE_LIMIT_BYTES ? copy : undefined;
}

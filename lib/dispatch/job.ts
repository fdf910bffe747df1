/**
 * One message's job, from its receive to its decided end, in five steps a reader follows down the
 * page: claim (lib/dispatch/claim.ts, made before it holds a slot), its slot and worker, run
 * (lib/run/attempt.ts), verdict (lib/settle/verdict.ts), and the end the verdict calls for
 * (lib/settle/decisions.ts), which the batch's settle carries out.
 */
import type { QueueConfig } from '../config/app-config';
import { fitsInvocation, LAPSE_MARGIN_MS, leaseMs, stillVisibleToUs, taskNeedMs, visibilityReserveMs } from '../deadlines';
import { describe, JobCancelledError, JobExpiredError } from '../errors';
import { dependencyIds } from '../policy/dependency-rules';
import { runAttempt } from '../run/attempt';
import { type FailedOutcome, type KeptStep, type RunReservation, serializeError } from '../run/executor-types';
import type { MessageAt } from '../settle/decisions';
import { decideAttemptEnd, decideHandBack } from '../settle/decisions';
import { trackingOf } from '../settle/records';
import type { BatchState } from '../settle/settle';
import { decide, type Verdict } from '../settle/verdict';
import type { DependencyOutcome } from '../tasks/task';
import type { JobRecord, StepWrite } from '../track/job-record';
import type { JobReader, JobStore } from '../track/job-stores';
import { type DecodedJob, hasDependencies } from '../wire/envelope';
import type { BatchCalls } from './batch-calls';
import { cancelWatchFor } from './cancellations';
import { CLAIM_RETRY_SECONDS, claimJob, leaseRenewal } from './claim';
import { dependencyOutcomes, type StoredDependencyOutcome } from './dependency-outcomes';
import type { DispatcherDeps, Planned, RunOptions } from './dispatcher-deps';
import { keepLargeResult, readDependencyResults } from './job-payloads';
import { pauseForRateLimit } from './rate-limits';
import type { SlotLease, SlotTicket } from './slots';

/** The outcomes a dependent's task sees; undefined (the message handed back) when the jobs table did not answer. */
async function readDependencies(
  deps: DispatcherDeps,
  at: MessageAt,
  jobs: JobReader,
  job: DecodedJob,
): Promise<readonly DependencyOutcome[] | undefined> {
  let outcomes: StoredDependencyOutcome[];
  try {
    outcomes = await dependencyOutcomes(jobs, dependencyIds(job));
  } catch (error) {
    deps.logger.error('dependency outcomes could not be read; the message will come back', { jobId: job.id, error: describe(error) });
    decideHandBack(
      deps,
      at,
      { kind: 'visibility', seconds: CLAIM_RETRY_SECONDS },
      {
        messageId: at.message.messageId,
        jobId: job.id,
        task: job.task,
        outcome: 'deferred',
        attempt: at.message.receiveCount,
      },
    );
    return undefined;
  }
  return outcomes.some((o) => o.resultRef) ? readDependencyResults(deps, outcomes) : outcomes;
}

/**
 * The end of an attempt that must not run: past the job's expiry (the first attempt, a retry, or a
 * parked or waiting job come due), archived `expired`; or cancelled before this claim (its lease
 * lapsed, or it ended `retrying` first). Undefined: it runs.
 */
function endBeforeRunning(
  job: DecodedJob,
  claimed: { readonly cancelRequestedAt?: number } | undefined,
  now: number,
): { outcome: FailedOutcome; verdict?: Verdict } | undefined {
  if (job.expiresAt !== undefined && now > job.expiresAt) {
    const error = serializeError(new JobExpiredError(job.id, job.expiresAt, now));
    return { outcome: { status: 'failed', kind: 'error', durationMs: 0, error }, verdict: { kind: 'archive', reason: 'expired' } };
  }
  if (claimed?.cancelRequestedAt !== undefined) {
    return { outcome: { status: 'cancelled', durationMs: 0, error: serializeError(new JobCancelledError(job.id)) } };
  }
  return undefined;
}

/**
 * Runs one message's task, from the checks before it starts to its decided end. Its claim is made
 * before it takes a slot (while the bodies before it run), its body in the slot.
 */
export async function runOne(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: Planned,
  /** When its message's visibility was last set to the queue's whole timeout: its receive, or the batch's hold moving it since. */
  visibleFrom: number,
  options: RunOptions,
  state: BatchState,
  ticket: SlotTicket,
  /** Where a batch task's item runs (its task's calls on these slots); none for any other task. */
  calls?: BatchCalls,
): Promise<void> {
  try {
    // A rate token booked ahead: the job starts when it is earned (before it is claimed).
    const early = (planned.startAt ?? 0) - deps.clock.now();
    if (early > 0) await deps.clock.sleep(early, options.signal);
    await claimAndRun(deps, queue, planned, visibleFrom, options, state, ticket, calls);
  } finally {
    // Its place goes back when the job ended (or was handed back) before its body took a slot.
    ticket.drop();
  }
}

/**
 * Why a job that may start (checked at `now`) may not: its invocation stops or ends too soon, its
 * message is no longer surely ours, or its limit slots would lapse before its time limit ends.
 */
function whyNotStart(
  deps: DispatcherDeps,
  queue: QueueConfig,
  needMs: number,
  visibleFrom: number,
  slotsUntil: number | undefined,
  options: RunOptions,
  now: number,
): { why: string; visible: boolean } | undefined {
  const { config } = deps;
  if (!stillVisibleToUs(visibleFrom, now, queue.visibilityTimeoutSeconds)) {
    // It waited until its visibility (nearly) lapsed: SQS may have handed it to another worker,
    // whose receipt a visibility change could undo. Left alone, it comes back by itself.
    return { why: 'its message waited past its visibility', visible: false };
  }
  if (options.signal?.aborted) return { why: 'the dispatcher is stopping', visible: true };
  if (!fitsInvocation(now, needMs, options.deadline, config.dispatcher.settleMarginMs))
    return { why: 'too little of the invocation is left for its time limit', visible: true };
  // Started late (a slow claim, a wait for a thread), it could outrun its slots: another dispatcher would take them while it runs.
  if (slotsUntil !== undefined && now + needMs > slotsUntil)
    return { why: 'its limit slots would lapse before its time limit', visible: true };
  return undefined;
}

/**
 * The slot and the worker for a claimed (or untracked) job's body, in that order: a pool thread
 * loaded (not one still loading the tasks bundle after its predecessor was stopped) and promised to
 * this job alone, so the time limit starts with the body. Undefined when it may not start after all
 * (see {@link whyNotStart}, or no thread in time): its claim is handed back — the job `queued` again
 * with no attempt used — and its message released.
 */
async function slotAndWorker(
  deps: DispatcherDeps,
  at: MessageAt,
  def: Planned['def'],
  needMs: number,
  visibleFrom: number,
  slotsUntil: number | undefined,
  options: RunOptions,
  ticket: SlotTicket,
  claim: { readonly attempt: number; readonly claimed?: JobRecord; readonly claimedAt: number },
  calls: BatchCalls | undefined,
): Promise<{ lease: SlotLease; reservation?: RunReservation; begin: number } | undefined> {
  const { clock, config } = deps;
  const { queue } = at;
  const lease = await ticket.take();
  const inSlot = whyNotStart(deps, queue, needMs, visibleFrom, slotsUntil, options, clock.now());
  // A batch item runs in its call, which takes a thread of its own when it starts.
  const reservation =
    inSlot === undefined && deps.executor.reserve && !calls
      ? await deps.executor.reserve(
          Math.min(
            options.deadline - config.dispatcher.settleMarginMs - needMs,
            visibleFrom + queue.visibilityTimeoutSeconds * 1000 - visibilityReserveMs(queue.visibilityTimeoutSeconds, LAPSE_MARGIN_MS),
          ),
        )
      : undefined;
  const begin = clock.now();
  // Checked again once a thread was waited for (a stop may have come meanwhile).
  const refused =
    inSlot ??
    (deps.executor.reserve && !calls && !reservation
      ? { why: 'no task thread was ready in time', visible: stillVisibleToUs(visibleFrom, begin, queue.visibilityTimeoutSeconds) }
      : reservation
        ? whyNotStart(deps, queue, needMs, visibleFrom, slotsUntil, options, begin)
        : undefined);
  // The claim's lease ran from the claim: a long wait for the slot (a run that outlasted what its
  // task had taken) renews it, so that it covers the body's time limit from its start.
  const renewed =
    refused === undefined && claim.claimed && begin - claim.claimedAt > config.dispatcher.settleMarginMs / 2
      ? await leaseRenewal(
          deps,
          deps.tracking?.jobs as JobStore,
          at.job.id,
          claim.attempt,
          leaseMs(needMs, config.dispatcher.settleMarginMs),
        )(begin)
      : true;
  const why =
    refused ??
    (renewed
      ? undefined
      : {
          why: 'its lease was refused while it waited for a slot (taken over, or a cancel asked)',
          visible: stillVisibleToUs(visibleFrom, begin, queue.visibilityTimeoutSeconds),
        });
  if (why === undefined) return { lease, ...(reservation ? { reservation } : {}), begin };
  lease.release();
  reservation?.release();
  // Given back before the message is: its next delivery is claimed at once (no lease to wait out).
  // Fenced by its token: a claim taken over meanwhile is not touched.
  if (claim.claimed) await handBackClaim(deps, at, claim.attempt, claim.claimed, why.why);
  decideHandBack(deps, at, why.visible ? { kind: 'visibility', seconds: 0 } : { kind: 'leave' }, {
    messageId: at.message.messageId,
    jobId: at.job.id,
    task: def.name,
    outcome: 'released',
    attempt: claim.attempt,
  });
  deps.logger.warn('claimed, then released unstarted', { queue: queue.name, messageId: at.message.messageId, why: why.why });
  return undefined;
}

/** Gives a claim back unstarted; a failure leaves it to its lease (the next delivery waits that out). */
async function handBackClaim(deps: DispatcherDeps, at: MessageAt, token: number, claimed: JobRecord, why: string): Promise<void> {
  const jobs = deps.tracking?.jobs as JobStore;
  try {
    await jobs.handBackClaim({
      jobId: at.job.id,
      token,
      detail: why,
      // This claim set both (a later claim leaves firstStartedAt as the first one set it).
      firstStart: claimed.firstStartedAt !== undefined && claimed.firstStartedAt === claimed.lastStartedAt,
      history: claimed.history,
      workerId: deps.workerId,
      now: deps.clock.now(),
    });
  } catch (error) {
    deps.logger.warn('claim could not be handed back; its lease lapses by itself', { jobId: at.job.id, error: describe(error) });
  }
}

/** {@link runOne} after its rate token: the checks, the claim, the slot, the run and its end. */
async function claimAndRun(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: Planned,
  visibleFrom: number,
  options: RunOptions,
  state: BatchState,
  ticket: SlotTicket,
  calls: BatchCalls | undefined,
): Promise<void> {
  const { message, job, def } = planned;
  const { clock, config } = deps;
  const callMs = taskNeedMs(def.timeLimitSeconds, config.dispatcher.killGraceMs);
  // A batch item may wait for its call to fill before the call's time limit starts.
  const needMs = callMs + (calls ? (def.batch?.maxWaitMs ?? 0) : 0);
  const base = { messageId: message.messageId, jobId: job.id, task: def.name };
  const at = { queue, mode: trackingOf(deps, queue), state, message, job };
  const start = clock.now();

  // Before it is claimed: it must end before the invocation settles, and its message must still be ours.
  const notNow = whyNotStart(deps, queue, needMs, visibleFrom, planned.slotsUntil, options, start);
  if (notNow) {
    decideHandBack(deps, at, notNow.visible ? { kind: 'visibility', seconds: 0 } : { kind: 'leave' }, {
      ...base,
      outcome: 'released',
      attempt: message.receiveCount,
    });
    if (!notNow.visible)
      deps.logger.warn('message waited past its visibility; not started', { queue: queue.name, messageId: message.messageId });
    return;
  }

  // 1. Claim (tracking `full`): the attempt's fencing token, or an end decided already.
  const claim = at.mode === 'full' ? await claimJob(deps, at, def, start) : { attempt: message.receiveCount };
  if (!claim) return;
  const { attempt, claimed } = claim;

  // Some claimed attempts end before the body runs, through the claim like any attempt's end
  // (fenced, the job's identity checked).
  const unrun = endBeforeRunning(job, claimed, start);
  if (unrun) {
    const { outcome } = unrun;
    const ran = { ...base, attempt, waitMs: Math.max(0, start - job.publishedAt), error: outcome.error };
    const verdict = unrun.verdict ?? decide(outcome, runsOf(attempt, claimed), def, deps.random, retryAftersOf(claimed));
    decideAttemptEnd(deps, at, { attempt, ...(claimed ? { claimed } : {}), outcome, ran }, verdict);
    return;
  }

  // What its dependencies left, read before it takes a slot.
  const jobs = deps.tracking?.jobs;
  const dependencies = claimed && jobs && hasDependencies(job) ? await readDependencies(deps, at, jobs, job) : [];
  if (dependencies === undefined) return;

  // 2. Its slot and worker (the claim was made while the bodies before it ran).
  const ready = await slotAndWorker(
    deps,
    at,
    def,
    needMs,
    visibleFrom,
    planned.slotsUntil,
    options,
    ticket,
    { ...claim, claimedAt: start },
    calls,
  );
  if (!ready) return;
  const { lease, reservation, begin } = ready;
  try {
    const slot = { lease, begin, needMs, callMs, visibleFrom };
    await runClaimed(deps, at, planned, { attempt, ...(claimed ? { claimed } : {}), dependencies }, slot, options, reservation, calls);
  } finally {
    // Given back when the run did not take it (it never started); a run took it.
    reservation?.release();
    lease.release();
  }
}

/** The run of a claimed job's body in its slot (3), the verdict on its outcome (4) and its end (5). */
async function runClaimed(
  deps: DispatcherDeps,
  at: MessageAt,
  { message, job, def }: Planned,
  {
    attempt,
    claimed,
    dependencies,
  }: { readonly attempt: number; readonly claimed?: JobRecord; readonly dependencies: readonly DependencyOutcome[] },
  slot: {
    readonly lease: SlotLease;
    readonly begin: number;
    readonly needMs: number;
    readonly callMs: number;
    readonly visibleFrom: number;
  },
  options: RunOptions,
  reservation: RunReservation | undefined,
  calls: BatchCalls | undefined,
): Promise<void> {
  const { clock, config } = deps;
  const { queue, state } = at;
  const { lease, begin: start, needMs, callMs, visibleFrom } = slot;
  const base = { messageId: message.messageId, jobId: job.id, task: def.name };
  lease.expectsEnd(start + (deps.runTimes?.expected(def.name) ?? needMs));

  // 3. Run, the heartbeat keeping the message (and the claim's lease) while it may; an operator's
  // cancel stops it.
  const jobs = deps.tracking?.jobs;
  const watch = claimed && jobs ? cancelWatchFor(jobs, deps.logger) : undefined;
  const cancel = new AbortController();
  const unwatch = watch?.watch(job.id, () => cancel.abort());
  // A batch item gives its slot back as it joins its call: the call takes one for all its items.
  if (calls) {
    deps.runTimes?.observe(def.name, queue.name, clock.now() - start);
    lease.release();
  }
  const ranOutcome = await runAttempt(
    calls
      ? { ...deps, executor: calls.itemExecutor(def, options.deadline - config.dispatcher.settleMarginMs - callMs, options.signal) }
      : deps,
    {
      run: {
        task: def.name,
        jobId: job.id,
        queue: queue.name,
        // The attempts the job has used: its claims less the re-runs its body asked for (RetryAfterError) and its parks.
        attempt: runsOf(attempt, claimed) - (retryAftersOf(claimed) ?? 0),
        payload: job.payload,
        appData: job.appData,
        timeLimitMs: def.timeLimitSeconds * 1000,
        fencingToken: attempt,
        ...(dependencies.length > 0 ? { dependencies } : {}),
        ...(job.event ? { event: job.event } : {}),
        ...(claimed?.steps?.length ? { steps: keptSteps(claimed) } : {}),
      },
      message,
      url: deps.urls.queues[queue.name] as string,
      visibilityTimeoutSeconds: queue.visibilityTimeoutSeconds,
      hardEnd: start + needMs,
      visibleUntil: visibleFrom + queue.visibilityTimeoutSeconds * 1000,
      onVisibility: (until) => state.movedVisibility(message.messageId, until),
      ...(claimed && jobs
        ? { extendLease: leaseRenewal(deps, jobs, job.id, attempt, leaseMs(needMs, config.dispatcher.settleMarginMs)) }
        : {}),
      ...(watch ? { cancel: cancel.signal, onLeaseRefused: () => watch.poke() } : {}),
      ...(reservation ? { reservation } : {}),
      ...(claimed && jobs ? { keepStep: (step: StepWrite) => jobs.keepStep(job.id, attempt, step, clock.now()) } : {}),
    },
  ).finally(() => unwatch?.());

  // The slot's hold, on the dispatcher's clock (the run; the claim was made before): what the next start on it waits for.
  if (!calls) deps.runTimes?.observe(def.name, queue.name, clock.now() - start);

  // A value too large for the record is kept in S3 first: the record written next points to it.
  // An onSuccess hook still gets the value itself (it is in memory here), not a read back from S3.
  const largeResult = ranOutcome.status === 'succeeded' ? ranOutcome.largeResult : undefined;
  if (largeResult !== undefined && (def.onSuccess || config.hooks.onSuccess)) state.results.set(message.messageId, largeResult);
  const outcome = largeResult !== undefined ? await keepLargeResult(deps, job.id, ranOutcome) : ranOutcome;

  // A rate limit pauses its scope fleet-wide before this job's end is written: the sooner the
  // others hold its scope's jobs, the fewer run into the same limit. (No await otherwise: the
  // batch's timing stays what it was, as the simulation's clock sees it.)
  if (outcome.status === 'failed' && outcome.kind === 'rate-limited') await pauseForRateLimit(deps, queue, job, outcome);

  // 4. Verdict: the table from the outcome to the job's next step.
  const verdict = decide(outcome, runsOf(attempt, claimed), def, deps.random, retryAftersOf(claimed));

  // 5. End: the record the verdict leaves and what happens to the message, written at once.
  const ran = {
    ...base,
    attempt,
    waitMs: Math.max(0, start - job.publishedAt),
    runMs: outcome.durationMs,
    ...(outcome.status === 'timed-out' ? { timedOut: true } : {}),
    ...(outcome.status !== 'succeeded' && outcome.status !== 'parked' ? { error: outcome.error } : {}),
    ...(outcome.call ? { call: outcome.call } : {}),
  };
  decideAttemptEnd(deps, at, { attempt, ...(claimed ? { claimed } : {}), outcome, ran }, verdict);
}

/** The steps earlier attempts kept, as the body gets them back. */
function keptSteps(claimed: JobRecord): KeptStep[] {
  return (claimed.steps ?? []).map((s) => ({
    name: s.name,
    ...(s.result !== undefined ? { result: s.result } : {}),
    ...(s.wait ? { wait: s.wait } : {}),
    // The job parked on this very token (the record names the token it last waited for).
    ...(s.wait?.token !== undefined && s.wait.token === claimed.waitToken ? { waited: true } : {}),
    ...(s.completedAt !== undefined ? { completedAt: s.completedAt } : {}),
  }));
}

/** The re-runs a claimed job's body asked for so far (its record counts them); undefined unclaimed (nothing counts them). */
function retryAftersOf(claimed: JobRecord | undefined): number | undefined {
  return claimed ? (claimed.retryAfters ?? 0) : undefined;
}

/** A claimed job's runs less those that ended parked at a step (a sleep, a wait, a continuation: they used no attempt). */
function runsOf(attempt: number, claimed: JobRecord | undefined): number {
  return attempt - (claimed?.parks ?? 0);
}

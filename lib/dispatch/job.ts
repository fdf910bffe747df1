/**
 * One message's job, from its slot to its decided end, in four steps a reader follows down the
 * page: claim (lib/dispatch/claim.ts), run (lib/run/attempt.ts), verdict (lib/settle/verdict.ts),
 * and the end the verdict calls for (lib/settle/decisions.ts), which the batch's settle carries out.
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
import type { JobReader } from '../track/job-stores';
import { type DecodedJob, hasDependencies } from '../wire/envelope';
import type { BatchCalls } from './batch-calls';
import { cancelWatchFor } from './cancellations';
import { CLAIM_RETRY_SECONDS, claimJob, leaseRenewal } from './claim';
import { dependencyOutcomes, type StoredDependencyOutcome } from './dependency-outcomes';
import type { DispatcherDeps, Planned, RunOptions } from './dispatcher-deps';
import { keepLargeResult, readDependencyResults } from './job-payloads';
import { pauseForRateLimit } from './rate-limits';
import type { SlotLease } from './slots';

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

/** Runs one message's task in its slot, from the checks before it starts to its decided end. */
export async function runOne(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: Planned,
  receivedAt: number,
  options: RunOptions,
  state: BatchState,
  lease: SlotLease,
  /** Where a batch task's item runs (its task's calls on these slots); none for any other task. */
  calls?: BatchCalls,
): Promise<void> {
  // A rate token booked ahead: the job starts when it is earned (before its worker is set aside).
  const early = (planned.startAt ?? 0) - deps.clock.now();
  if (early > 0) await deps.clock.sleep(early, options.signal);
  let reservation: RunReservation | undefined;
  // A batch item runs in its call, which takes a thread of its own when it starts.
  if (deps.executor.reserve && !calls) {
    reservation = await reserveWorker(deps, queue, planned, receivedAt, options, state);
    if (!reservation) return;
  }
  try {
    await claimAndRun(deps, queue, planned, receivedAt, options, state, lease, reservation, calls);
  } finally {
    // Given back when the job did not run here (handed back, a duplicate, ended before running); a run took it.
    reservation?.release();
  }
}

/**
 * A worker set aside to start the body at once: a pool thread loaded (not one still loading the
 * tasks bundle after its predecessor was stopped) and promised to this job alone (not one another
 * job of the batch takes first), so the claim's lease and the time limit start with the body.
 * None in time: the message is released unstarted, and undefined returned.
 */
async function reserveWorker(
  deps: DispatcherDeps,
  queue: QueueConfig,
  { message, job, def }: Planned,
  receivedAt: number,
  options: RunOptions,
  state: BatchState,
): Promise<RunReservation | undefined> {
  const { clock, config } = deps;
  const startBy = Math.min(
    options.deadline - config.dispatcher.settleMarginMs - taskNeedMs(def.timeLimitSeconds, config.dispatcher.killGraceMs),
    receivedAt + queue.visibilityTimeoutSeconds * 1000 - visibilityReserveMs(queue.visibilityTimeoutSeconds, LAPSE_MARGIN_MS),
  );
  const reservation = await deps.executor.reserve?.(startBy);
  if (reservation) return reservation;
  const at = { queue, mode: trackingOf(deps, queue), state, message, job };
  const ours = stillVisibleToUs(receivedAt, clock.now(), queue.visibilityTimeoutSeconds);
  decideHandBack(deps, at, ours ? { kind: 'visibility', seconds: 0 } : { kind: 'leave' }, {
    messageId: message.messageId,
    jobId: job.id,
    task: def.name,
    outcome: 'released',
    attempt: message.receiveCount,
  });
  deps.logger.warn('no task thread was ready in time; released unstarted', { queue: queue.name, messageId: message.messageId });
  return undefined;
}

/** {@link runOne} once a worker is set aside for it (or none is needed): the checks, the claim, the run and its end. */
async function claimAndRun(
  deps: DispatcherDeps,
  queue: QueueConfig,
  planned: Planned,
  receivedAt: number,
  options: RunOptions,
  state: BatchState,
  lease: SlotLease,
  reservation: RunReservation | undefined,
  calls: BatchCalls | undefined,
): Promise<void> {
  const { message, job, def } = planned;
  const { clock, config } = deps;
  const callMs = taskNeedMs(def.timeLimitSeconds, config.dispatcher.killGraceMs);
  // A batch item may wait for its call to fill before the call's time limit starts.
  const needMs = callMs + (calls ? (def.batch?.maxWaitMs ?? 0) : 0);
  const base = { messageId: message.messageId, jobId: job.id, task: def.name };
  const at = { queue, mode: trackingOf(deps, queue), state, message, job };
  const released = { ...base, outcome: 'released' as const, attempt: message.receiveCount };
  const start = clock.now();
  lease.expectsEnd(start + (deps.runTimes?.expected(def.name) ?? needMs));

  // Before it starts: it must end before the invocation settles, and its message must still be ours.
  if (options.signal?.aborted || !fitsInvocation(start, needMs, options.deadline, config.dispatcher.settleMarginMs)) {
    decideHandBack(deps, at, { kind: 'visibility', seconds: 0 }, released);
    return;
  }
  if (!stillVisibleToUs(receivedAt, start, queue.visibilityTimeoutSeconds)) {
    // It waited for a slot until its visibility (nearly) lapsed: SQS may have handed it to another
    // worker, whose receipt a visibility change could undo. Leave it alone; it comes back by itself.
    decideHandBack(deps, at, { kind: 'leave' }, released);
    deps.logger.warn('message waited for a slot past its visibility; not started', { queue: queue.name, messageId: message.messageId });
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

  // 2. Run, the heartbeat keeping the message (and the claim's lease) while it may; an operator's
  // cancel stops it.
  const jobs = deps.tracking?.jobs;
  const dependencies = claimed && jobs && hasDependencies(job) ? await readDependencies(deps, at, jobs, job) : [];
  if (dependencies === undefined) return;
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
      visibleUntil: receivedAt + queue.visibilityTimeoutSeconds * 1000,
      onVisibility: (until) => state.movedVisibility(message.messageId, until),
      ...(claimed && jobs
        ? { extendLease: leaseRenewal(deps, jobs, job.id, attempt, leaseMs(needMs, config.dispatcher.settleMarginMs)) }
        : {}),
      ...(watch ? { cancel: cancel.signal, onLeaseRefused: () => watch.poke() } : {}),
      ...(reservation ? { reservation } : {}),
      ...(claimed && jobs ? { keepStep: (step: StepWrite) => jobs.keepStep(job.id, attempt, step, clock.now()) } : {}),
    },
  ).finally(() => unwatch?.());

  // The slot's hold, on the dispatcher's clock (the claim and the run): what the next start on it waits for.
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

  // 3. Verdict: the table from the outcome to the job's next step.
  const verdict = decide(outcome, runsOf(attempt, claimed), def, deps.random, retryAftersOf(claimed));

  // 4. End: the record the verdict leaves and what happens to the message, written at once.
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
